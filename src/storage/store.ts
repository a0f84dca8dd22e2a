// The storage seam. Everything above it (room runtime, participants, tools) sees only this
// interface; the embedded file store (`file-store.ts`), the in-memory store for unit tests
// (`memory-store.ts`) and the PostgreSQL store implement it.
//
// ── Guarantees every implementation gives ───────────────────────────────────────────────────
//
// 1. Durable on resolve. A write resolves only once the change survives `kill -9` (fsync'd, or
//    COMMITted). Callers answer their client after awaiting it, never before.
// 2. No trace on reject. A write that rejects leaves nothing visible to any later read of this
//    store, and nothing that a restart would load (the file store cuts a partly written log
//    back to its last durable size; a database rolls back). The old state stays served.
// 3. Room commits are atomic in what they make visible: the messages and the new room state of
//    one `commitRoom` become readable together, after both are durable, or not at all.
// 4. One writer per room. The caller (the room runtime) runs at most one `commitRoom` per room at
//    a time, in order. A store shared by several processes (PostgreSQL) checks `expectedVersion`
//    and rejects with `StaleRoomError` when another node committed in between.
// 5. Reads never return records the caller may mutate: every returned object is the caller's
//    own (a copy, or an object the store will never touch again).
// 6. Messages of a room are numbered 1, 2, 3, … without gaps in commit order; a later version of
//    a `message_id` (edit, delete) replaces the earlier one in every read.
//
// Reads are async because a database (or a cold room on disk) must be asked. Implementations
// may serve hot data from memory.
import type { AgentRecord, Message, PublicRoomSummary, RoomRecord, UserRecord } from '../types.js';

export type ParticipantRecord = { kind: 'agent'; record: AgentRecord } | { kind: 'user'; record: UserRecord };

/** `readChangesSince`: a room's stored state and what changed since a given version. */
export interface RoomChangesSince {
  loaded: LoadedRoom;
  /** Messages after `from.lastSeq` through `loaded.lastSeq`, in seq order. */
  added: Message[];
  /** Messages at seq ≤ `from.lastSeq` rewritten (edits, deletions) after `from.version`, in commit order. */
  updated: Message[];
  /** As `lastPersonSeq`, in the same snapshot. */
  lastPersonSeq: number;
  /**
   * The events each commit after `from.version` published (`RoomCommit.events`, null when it
   * had none), in version order, as far as the store keeps them: a store that tells other
   * processes about commits keeps the recent ones, so a process further behind replays them.
   */
  plans?: { version: number; events: string | null }[];
}

/** A room's state as the runtime needs it to run commands. */
export interface LoadedRoom {
  room: RoomRecord;
  /** Highest seq stored for the room (0 when it has no messages). */
  lastSeq: number;
  /** Opaque version for optimistic checks across processes (file store: lastSeq + commits). */
  version: number;
}

export interface RoomCommit {
  /** The room's complete new state, or undefined when only messages were added. */
  room?: RoomRecord;
  /** New messages (seqs lastSeq+1, +2, … in order) and new versions of existing ones. */
  messages: readonly Message[];
  /** The version the commit was computed from (LoadedRoom.version, then each commit's result). */
  expectedVersion: number;
  /**
   * Optional: the events the commit publishes, as opaque JSON text, for a store that tells other
   * processes about commits (PgStore puts it in the notification, so they replay the same
   * events). Called only by such a store, after the commit.
   */
  events?: () => string;
}

export interface MessagePage {
  /** Messages with seq > afterSeq (ascending), or with seq < beforeSeq (the newest ones before it). */
  afterSeq?: number;
  beforeSeq?: number;
  limit: number;
}

/** Raised by putParticipant when another participant holds the same name key. */
export class NameTakenError extends Error {
  constructor(readonly takenName: string) {
    super(`The name "${takenName}" is taken`);
  }
}

/**
 * Raised by putParticipant given `expected` when the stored record is no longer that one (another
 * node wrote the participant since it was read). Nothing was written; read again and redo.
 */
export class ParticipantChangedError extends Error {
  constructor(readonly participantId: string) {
    super(`participant ${participantId} changed since it was read`);
  }
}

/** Raised by commitRoom when the room changed since expectedVersion (another node wrote it). */
export class StaleRoomError extends Error {
  constructor(readonly roomId: string) {
    super(`room ${roomId} changed since it was loaded`);
  }
}

export interface Store {
  /** Takes the directory lock / connects, recovers, creates the empty layout on first start. */
  open(): Promise<void>;
  /** Flushes everything pending, releases the lock / pool. Idempotent. */
  close(): Promise<void>;

  // ── participants ──
  getParticipant(id: string): Promise<ParticipantRecord | undefined>;
  findParticipantByTokenHash(tokenHash: string): Promise<ParticipantRecord | undefined>;
  /** `nameKey` is the caller's normalised uniqueness key (case-folded, confusable skeleton). */
  findParticipantByNameKey(nameKey: string): Promise<ParticipantRecord | undefined>;
  /**
   * Inserts or replaces by id (agent_id / user_id), with `nameKey` as its uniqueness key.
   * Rejects with NameTakenError when another id holds the key. Durable on resolve; on reject
   * the old record (tokens, name) is what every read still returns.
   * With `expected` (the record as read before changing it) the put is a compare-and-set: it
   * happens only while the stored record still equals `expected` (or already equals the new
   * one: a repeated put), else it rejects with ParticipantChangedError. One process serialises
   * its own writes of a participant; this catches another process's (nodes on one database).
   */
  putParticipant(participant: ParticipantRecord, nameKey: string, expected?: ParticipantRecord): Promise<void>;
  /**
   * Optional, for stores several processes share: which of these token hashes no participant
   * holds any more (a process re-checks the tokens of its open sockets; a store that announces
   * revocations — PgStore, with the put that revokes them — may still have a listener miss one).
   */
  missingTokenHashes?(tokenHashes: readonly string[]): Promise<string[]>;
  /**
   * Optional, for stores several processes share: tells the others that the participant's last
   * WebSocket in this process closed at `atMs` (presence: SPEC §6's 15 s rule across processes).
   * Best effort: a process that misses it keeps the participant online for its own window.
   */
  announceSocketsClosed?(participantId: string, atMs: number): Promise<void>;
  /** Every participant (for start-up presence seeding and small admin views). */
  listParticipants(): Promise<ParticipantRecord[]>;
  /**
   * Optional: hands every participant to `visit` without copying (start-up with 100,000
   * participants: a listing copies each record). `visit` may be handed the store's own record:
   * it must only read it, never keep or change it. Without it, callers use listParticipants.
   */
  readParticipants?(visit: (found: Readonly<ParticipantRecord>) => void): Promise<void>;

  // ── rooms ──
  loadRoom(roomId: string): Promise<LoadedRoom | undefined>;
  /**
   * Optional, for stores several processes share: the room's committed version (undefined for
   * no such room), one cheap read, so a process can tell whether its copy is current before it
   * answers a read (read-your-writes whichever process a client talks to).
   */
  roomVersion?(roomId: string): Promise<number | undefined>;
  /** Every room id (counts, admin views; the runtime loads rooms lazily). */
  listRoomIds(): Promise<string[]>;
  /**
   * Ids of the rooms whose stored state passes `test` (start-up: the rooms with a running turn or
   * a member status to reconcile, without loading every room). `test` may be handed the store's
   * own record: it must only read it, never keep or change it.
   */
  roomIdsWhere(test: (room: Readonly<RoomRecord>) => boolean): Promise<string[]>;
  /** Public summaries for list_rooms (SPEC §3: names, descriptions, mode, counts, has_password). */
  listRoomSummaries(includeArchived: boolean): Promise<PublicRoomSummary[]>;
  /** Ids of the rooms the participant is a member of (derived from room states). */
  roomsOf(participantId: string): Promise<string[]>;
  /**
   * Creates a room, with its first messages (seqs 1, 2, …) when given (an imported history), in
   * one durable write: on reject neither exists (guarantee 2). Rejects if the id exists.
   * Resolves with its version.
   */
  createRoom(room: RoomRecord, messages?: readonly Message[]): Promise<number>;
  /** Guarantees 2–4 above. Resolves with the room's new version. */
  commitRoom(roomId: string, commit: RoomCommit): Promise<number>;

  // ── messages (reads; writes go through commitRoom) ──
  getMessage(messageId: string): Promise<Message | undefined>;
  /** Latest versions, in seq order, skip records included. */
  readMessages(roomId: string, page: MessagePage): Promise<Message[]>;
  /** Visible, not deleted messages whose text contains `query` (case-insensitive), oldest first. */
  searchMessages(roomId: string, query: string, limit: number): Promise<Message[]>;
  /** Highest seq of a visible message by `senderId` in the room, 0 if none (get_context). */
  lastSeqBySender(roomId: string, senderId: string): Promise<number>;
  /**
   * How many visible messages have afterSeq < seq < beforeSeq, 0 for a room that does not exist
   * (get_context's `omitted`: counted without reading the messages, whatever the room's size).
   */
  countVisible(roomId: string, afterSeq: number, beforeSeq: number): Promise<number>;
  /** Highest seq of a visible, not deleted message with role `user`, 0 if none (turn engine). */
  lastPersonSeq(roomId: string): Promise<number>;
  /** The message a sender stored with this client_msg_id, if any (idempotent retries). */
  findByClientMsgId(roomId: string, senderId: string, clientMsgId: string): Promise<Message | undefined>;
  /** Message count over all rooms (metrics, start-up log). */
  messageCount(): Promise<number>;
  /**
   * Shared stores (PostgreSQL) only: the room as stored now and what changed since this node's
   * copy (`from`), read as one consistent snapshot, so the state, the messages and the last person
   * seq are all of the same version (SPEC §11). Undefined when the room does not exist.
   */
  readChangesSince?(roomId: string, from: { version: number; lastSeq: number }): Promise<RoomChangesSince | undefined>;
  /**
   * Shared stores only: takes the room's lock (no other process can commit the room until it is
   * released), reads what changed since `from` as `readChangesSince` does, hands it to `build`,
   * and commits what `build` returns in the same transaction — computed on the room as stored,
   * so it cannot be stale (its `expectedVersion` is ignored). Resolves with the new version, or
   * undefined when `build` returned null (nothing to write). `build`'s reads go through `reads`
   * (the locked connection: a pool of connections all holding locks cannot wait for another).
   * Guarantees 1–3 hold as for `commitRoom`. The room runtime turns to it after a StaleRoomError:
   * with optimistic commits alone, one node writing a busy room keeps winning and the others'
   * clients wait (SPEC §11: every guarantee unchanged whichever node a client talks to).
   */
  commitRoomLocked?(
    roomId: string,
    from: { version: number; lastSeq: number },
    build: (changes: RoomChangesSince, reads: CommitReads) => Promise<RoomCommit | null>,
  ): Promise<number | undefined>;
}

/** The reads a room command may make while its room's lock is held (`commitRoomLocked`). */
export interface CommitReads {
  getMessage(messageId: string): Promise<Message | undefined>;
  findByClientMsgId(senderId: string, clientMsgId: string): Promise<Message | undefined>;
}
