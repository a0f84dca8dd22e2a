// The PostgreSQL store's statements and rows: the room commit (chatroom_commit_room,
// 001_initial.sql) with its SQLSTATEs, parameters and grouped form, the error a commit that
// certainly did not happen is answered with, and the column and row helpers. Moved out of
// pg-store.ts unchanged.
import pg from 'pg';
import type { Message, RoomRecord } from '../../types.js';
import { summarise } from '../store-util.js';
import { StaleRoomError } from '../store.js';
import type { ParticipantRecord, RoomCommit } from '../store.js';
import { turnDeadlineOf } from './deadlines.js';

/** SQLSTATEs raised by chatroom_commit_room. */
export const NO_SUCH_ROOM = 'CRNRM';
export const STALE = 'CRSTL';
export const BAD_SEQ = 'CRSEQ';
export const UNIQUE_VIOLATION = '23505';
/** A group's commit found its room locked by another transaction (NOWAIT). */
export const LOCK_NOT_AVAILABLE = '55P03';

export interface ParticipantRow {
  kind: 'agent' | 'user';
  record: ParticipantRecord['record'];
}

/** True when the server answered with an error: the statement certainly did not commit. */
export function isServerError(err: unknown): err is pg.DatabaseError {
  return err instanceof pg.DatabaseError;
}

/**
 * A statement error that certainly rolled the commit back. A FATAL/PANIC error (the backend
 * was terminated, the server is shutting down) may arrive around COMMIT, so it counts as in
 * doubt like a lost connection.
 */
export function isDefiniteFailure(err: unknown): err is pg.DatabaseError {
  return isServerError(err) && err.severity !== 'FATAL' && err.severity !== 'PANIC';
}

export const toParticipant = (row: ParticipantRow): ParticipantRecord =>
  ({ kind: row.kind, record: row.record }) as ParticipantRecord;

/** The server process serving a connection (pg knows it but does not type it). */
export const backendPid = (client: pg.PoolClient): number | null => (client as unknown as { processID: number | null }).processID;

/** PostgreSQL text cannot hold U+0000; columns beside a record drop it (the record keeps it). */
export const column = (text: string): string => text.replaceAll('\0', '');

/** What search matches against: lower-cased like the reference store. */
export const searchText = (text: string): string => column(text.toLowerCase());

/** The turn deadline the commit function stores for the deadlines table (001_initial.sql). */
export function deadlineParams(room: RoomRecord | undefined): [deadline: string | null, turnKey: string | null] {
  const turn = room ? turnDeadlineOf(room) : null;
  return turn ? [turn.deadline, turn.turnKey] : [null, null];
}

/** How many parameters one commit takes (commitParams). */
export const COMMIT_PARAM_COUNT = 20;
/** The parameters of chatroom_commit_room (003_commit_events.sql), in its order, from `$offset+1`. */
export function commitArgs(offset: number): string {
  return Array.from({ length: COMMIT_PARAM_COUNT }, (_, i) => `$${offset + i + 1}${i === 9 ? '::json[]' : ''}`).join(', ');
}
export const COMMIT_ARGS = commitArgs(0);
/** Where commitParams puts the state's JSON ($4), the message records' JSON ($10) and the events ($20). */
export const STATE_PARAM = 3;
export const RECORDS_PARAM = 9;
export const EVENTS_PARAM = 19;

export function commitParams(roomId: string, commit: RoomCommit, commitId: string, notifyInCommit: boolean): unknown[] {
  const ms = commit.messages;
  return [
    roomId,
    commit.expectedVersion,
    commitId,
    commit.room ? JSON.stringify(commit.room) : null,
    ...(commit.room ? roomColumns(commit.room) : [null, null, null]),
    ms.map((m) => m.seq),
    ms.map((m) => column(m.message_id)),
    ms.map((m) => JSON.stringify(m)),
    ms.map((m) => column(m.sender_id ?? '')), // imported messages: nobody's
    ms.map((m) => column(m.role)),
    ms.map((m) => m.visible),
    ms.map((m) => m.deleted),
    ms.map((m) => (m.client_msg_id === undefined ? null : column(m.client_msg_id))),
    ms.map((m) => searchText(m.text_content)),
    ...deadlineParams(commit.room),
    notifyInCommit,
    // Kept with the commit (003_commit_events.sql) for nodes that missed its notification.
    commit.events?.() ?? null,
  ];
}

/** The columns a room row keeps beside its state. */
export function roomColumns(room: RoomRecord): [summary: string, archived: boolean, memberIds: string[]] {
  return [JSON.stringify(summarise(room)), room.archived, room.members.map((m) => column(m.participant_id))];
}

/** Escapes LIKE's wildcards so the query matches as a plain substring. */
export const likePattern = (needle: string): string => `%${needle.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

/** A commit's messages all belong to its room (a caller's bug otherwise, refused before writing). */
export function checkMessagesOf(roomId: string, messages: readonly Message[]): void {
  for (const m of messages) {
    if (m.room_id !== roomId) throw new Error(`message ${m.message_id} belongs to room ${m.room_id}, not ${roomId}`);
  }
}

/** Runs chatroom_commit_room (named: each connection parses and plans it once). */
export async function runCommitStatement(client: pg.PoolClient, params: unknown[]): Promise<{ version: number; lastSeq: number }> {
  const { rows } = await client.query<{ new_version: string; new_last_seq: string }>({
    name: 'chatroom-commit-room',
    text: `SELECT new_version, new_last_seq FROM chatroom_commit_room(${COMMIT_ARGS})`,
    values: params,
  });
  return { version: Number(rows[0]!.new_version), lastSeq: Number(rows[0]!.new_last_seq) };
}

/** One room commit on its way to the database (a StatementGroup item). */
export interface PendingCommit {
  roomId: string;
  commitId: string;
  params: unknown[];
}

/** What a commit made; `lastSeq` is absent when the in-doubt path already announced it. */
export interface CommitMade {
  version: number;
  lastSeq?: number;
}

/** One row of a group statement: the commit's result, or the error it was answered with. */
export interface GroupRow {
  i: number;
  new_version: string | null;
  new_last_seq: string | null;
  error_code: string | null;
  error_message: string | null;
}

/**
 * Commit statements a node keeps in flight (./statement-group.ts). Two, measured: with 64 busy
 * senders in their own rooms, 1 and 2 slots carried more sends than 4 (bigger groups); two keep
 * a second statement going while one waits for a slow WAL flush.
 */
export const COMMIT_SLOTS = 2;
/**
 * Most commits in one group: each is a subtransaction, and a transaction with more than 64
 * subtransactions that wrote overflows PostgreSQL's per-backend cache (slowing every snapshot).
 */
export const MAX_COMMIT_GROUP = 32;

/** The statement that runs `n` commits through chatroom_try_commit_room (004_grouped_commits.sql). */
export function groupStatement(n: number): string {
  return Array.from(
    { length: n },
    (_, j) => `SELECT ${j + 1} AS i, * FROM chatroom_try_commit_room(${commitArgs(j * COMMIT_PARAM_COUNT)})`,
  ).join(' UNION ALL ');
}

export const byRoomId = (a: PendingCommit, b: PendingCommit): number => (a.roomId < b.roomId ? -1 : a.roomId > b.roomId ? 1 : 0);

/** The error a commit that certainly did not happen is answered with. */
export function commitError(roomId: string, code: string | undefined, message: string, original?: unknown): unknown {
  if (code === STALE) return new StaleRoomError(roomId);
  if (code === NO_SUCH_ROOM || code === BAD_SEQ) return new Error(message);
  return original ?? new Error(message);
}
