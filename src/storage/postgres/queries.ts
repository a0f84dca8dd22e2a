// The PostgreSQL store's reads that run on the pool or on a connection inside a transaction
// (a room's lock held). Moved out of pg-store.ts unchanged.
import pg from 'pg';
import type { Message, RoomRecord } from '../../types.js';
import type { RoomChangesSince } from '../store.js';
import { column } from './statements.js';

/** A pool or a checked-out connection: either runs a statement. */
export type Queryable = Pick<pg.Pool, 'query'> | Pick<pg.PoolClient, 'query'>;

export async function messageById(q: Queryable, messageId: string): Promise<Message | undefined> {
  const { rows } = await q.query<{ record: Message }>('SELECT record FROM messages WHERE message_id = $1', [messageId]);
  return rows[0]?.record;
}

export async function messageByClientId(q: Queryable, roomId: string, senderId: string, clientMsgId: string): Promise<Message | undefined> {
  const { rows } = await q.query<{ record: Message }>(
    `SELECT record FROM messages WHERE room_id = $1 AND sender_id = $2 AND client_msg_id = $3
     ORDER BY seq LIMIT 1`,
    [roomId, column(senderId), column(clientMsgId)],
  );
  return rows[0]?.record;
}

/** readChangesSince's one statement, on the pool or on a connection in a transaction. */
export async function changesSince(q: Queryable, roomId: string, from: { version: number; lastSeq: number }): Promise<RoomChangesSince | undefined> {
  const { rows } = await q.query<{
    state: RoomRecord;
    version: string;
    last_seq: string;
    added: Message[];
    updated: Message[];
    last_person_seq: string | null;
    plans: [version: number, events: string | null][];
  }>({
    name: 'chatroom-read-changes-since',
    text: `SELECT r.state, r.version, r.last_seq,
             (SELECT coalesce(json_agg(m.record ORDER BY m.seq), '[]') FROM messages m
               WHERE m.room_id = r.room_id AND m.seq > $3 AND m.seq <= r.last_seq AND r.version <> $2) AS added,
             (SELECT coalesce(json_agg(m.record ORDER BY m.written_version, m.seq), '[]') FROM messages m
               WHERE m.room_id = r.room_id AND m.seq <= $3 AND m.written_version > $2 AND m.written_version <= r.version) AS updated,
             (SELECT m.seq FROM messages m
               WHERE m.room_id = r.room_id AND m.role = 'user' AND m.visible AND NOT m.deleted ORDER BY m.seq DESC LIMIT 1) AS last_person_seq,
             (SELECT coalesce(json_agg(json_build_array(c.version, c.events) ORDER BY c.version), '[]') FROM room_commits c
               WHERE c.room_id = r.room_id AND c.version > $2 AND c.version <= r.version) AS plans
           FROM rooms r WHERE r.room_id = $1`,
    values: [roomId, from.version, from.lastSeq],
  });
  const row = rows[0];
  if (!row) return undefined;
  const loaded = { room: row.state, lastSeq: Number(row.last_seq), version: Number(row.version) };
  if (row.added.length !== Math.max(0, loaded.lastSeq - from.lastSeq) && loaded.version !== from.version) {
    throw new Error(`room ${roomId}: messages ${from.lastSeq + 1}..${loaded.lastSeq} are not all in the table`);
  }
  return {
    loaded,
    added: row.added,
    updated: row.updated,
    lastPersonSeq: row.last_person_seq === null ? 0 : Number(row.last_person_seq),
    plans: row.plans.map(([version, events]) => ({ version: Number(version), events })),
  };
}
