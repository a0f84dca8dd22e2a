// Two nodes (two PgStore instances with their own pools and feeds) on one database: concurrent
// committers into one room keep seq gapless with nothing lost to StaleRoomError, every
// notification reaches both nodes in commit order, and followers hand on each message exactly
// once — also across a dropped LISTEN connection.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { carriedChanges } from '../../src/runtime/change-events.js';
import { MAX_PAYLOAD_BYTES, RoomFeed, commitPayload, parseRoomChange, type RoomChange } from '../../src/storage/postgres/feed.js';
import { PgStore } from '../../src/storage/postgres/pg-store.js';
import { commitWithRetry } from '../../src/storage/postgres/stale-retry.js';
import type { Message } from '../../src/types.js';
import { makeMessage, makeRoom } from '../unit/storage-helpers.js';
import { pgTestsEnabled, usePgServer } from './pg-server.js';

const enabled = pgTestsEnabled();

interface Node {
  store: PgStore;
  feed: RoomFeed;
  changes: RoomChange[];
  followers: Map<string, Follower>;
}

/** Reads a room's changes on a notification (as RoomRuntime's reload does). */
interface Follower {
  notify(version: number): void;
  resync(): void;
}

async function startNode(url: string, notify: 'after-commit' | 'in-commit' = 'after-commit', pollMs?: number): Promise<Node> {
  const store = new PgStore({ connectionString: url, poolSize: 8, notify });
  await store.open();
  const node: Node = { store, feed: undefined as never, changes: [], followers: new Map() };
  node.feed = new RoomFeed({
    connectionString: url,
    reconnectDelayMs: 20,
    ...(pollMs ? { poll: { pool: store.connectionPool, everyMs: pollMs, rooms: () => node.followers.keys() } } : {}),
    onChange: (change) => {
      node.changes.push(change);
      node.followers.get(change.roomId)?.notify(change.version);
    },
    onResync: () => {
      for (const follower of node.followers.values()) follower.resync();
    },
  });
  await node.feed.start();
  return node;
}

async function stopNode(node: Node): Promise<void> {
  node.followers.clear();
  await node.feed.stop();
  await node.store.close();
}

interface Seen {
  added: number[];
  updated: Message[];
  versions: number[];
}

/**
 * Follows a room on a node the way a room runtime does: one read at a time, each taking what
 * committed since the last one from one snapshot (`readChangesSince`); notifications of versions
 * already read change nothing.
 */
function follow(node: Node, roomId: string, from = { seq: 0, version: 1 }): Seen {
  const seen: Seen = { added: [], updated: [], versions: [] };
  let position = { version: from.version, lastSeq: from.seq };
  let reads = Promise.resolve();
  const read = (version?: number): void => {
    reads = reads
      .then(async () => {
        if (version !== undefined && version <= position.version) return;
        const changes = await node.store.readChangesSince(roomId, position);
        if (!changes || changes.loaded.version <= position.version) return;
        seen.added.push(...changes.added.map((m) => m.seq));
        seen.updated.push(...changes.updated);
        seen.versions.push(changes.loaded.version);
        position = { version: changes.loaded.version, lastSeq: changes.loaded.lastSeq };
      })
      .catch(() => undefined); // the next notification (or the poll) reads again
  };
  node.followers.set(roomId, { notify: read, resync: () => read() });
  return seen;
}

const range = (from: number, to: number): number[] => Array.from({ length: to - from + 1 }, (_, i) => from + i);

/** Appends one message (and moves processed_through_seq with it), retrying on stale. */
async function append(store: PgStore, roomId: string, text: string): Promise<{ id: string; attempts: number }> {
  const result = await commitWithRetry(store, roomId, (loaded) => {
    const message = makeMessage(roomId, loaded.lastSeq + 1, { text_content: text });
    return { room: { ...loaded.room, processed_through_seq: message.seq }, messages: [message] };
  });
  return { id: result!.commit.messages[0]!.message_id, attempts: result!.attempts };
}

describe('room_changes payloads', () => {
  it('parse room ids with colons and reject garbage', () => {
    expect(parseRoomChange('a:b:12:34')).toEqual({ roomId: 'a:b', version: 12, lastSeq: 34 });
    expect(parseRoomChange('r:1:0')).toEqual({ roomId: 'r', version: 1, lastSeq: 0 });
    expect(parseRoomChange('nonsense')).toBeUndefined();
  });
});

describe('room_changes payloads that carry the commit', () => {
  const room = makeRoom('r:1');
  const messages = [makeMessage('r:1', 1, { text_content: '中文 \u0000 "quoted"' }), makeMessage('r:1', 2)];
  const records = messages.map((m) => JSON.stringify(m));

  it('round-trip the rows and the state, or only the rows when the state did not change', () => {
    expect(parseRoomChange(commitPayload('r:1', 7, 2, records, JSON.stringify(room)))).toEqual({
      roomId: 'r:1',
      version: 7,
      lastSeq: 2,
      carried: { messages, room },
    });
    expect(parseRoomChange(commitPayload('r:1', 7, 2, records))).toEqual({ roomId: 'r:1', version: 7, lastSeq: 2, carried: { messages } });
  });

  it('fall back to the plain form over 8000 bytes (counted in UTF-8)', () => {
    // 2,700 CJK characters: under 8000 UTF-16 units, over 8000 UTF-8 bytes.
    const wide = [JSON.stringify(makeMessage('r:1', 1, { text_content: '字'.repeat(2_700) }))];
    expect(commitPayload('r:1', 3, 1, wide)).toBe('r:1:3:1');
    const many = Array.from({ length: 40 }, (_, i) => JSON.stringify(makeMessage('r:1', i + 1, { text_content: 'x'.repeat(300) })));
    expect(commitPayload('r:1', 3, 40, many)).toBe('r:1:3:40');
    const near = commitPayload('r:1', 3, 1, [JSON.stringify(makeMessage('r:1', 1, { text_content: 'é'.repeat(3_500) }))]);
    expect(Buffer.byteLength(near)).toBeLessThanOrEqual(MAX_PAYLOAD_BYTES);
    expect(parseRoomChange(near)?.carried?.messages[0]?.text_content).toBe('é'.repeat(3_500));
  });

  it('carry the published events: with the rows, else alone (the rows are read), else none', () => {
    const events = JSON.stringify([['m', 1, false], ['e', { event: 'round_end', room_id: 'r:1', data: { round_id: 'x', reason: 'completed' } }]]);
    const both = parseRoomChange(commitPayload('r:1', 7, 2, records, JSON.stringify(room), events));
    expect(both).toEqual({ roomId: 'r:1', version: 7, lastSeq: 2, carried: { messages, room }, events: JSON.parse(events) });
    const many = Array.from({ length: 40 }, (_, i) => JSON.stringify(makeMessage('r:1', i + 1, { text_content: 'x'.repeat(300) })));
    const alone = commitPayload('r:1', 3, 40, many, undefined, events);
    expect(Buffer.byteLength(alone)).toBeLessThanOrEqual(MAX_PAYLOAD_BYTES);
    expect(parseRoomChange(alone)).toEqual({ roomId: 'r:1', version: 3, lastSeq: 40, events: JSON.parse(events) });
    const huge = JSON.stringify([['e', { event: 'room_update', room_id: 'r:1', data: { filler: 'y'.repeat(9_000) } }]]);
    expect(parseRoomChange(commitPayload('r:1', 7, 2, records, JSON.stringify(room), huge))).toEqual({
      roomId: 'r:1',
      version: 7,
      lastSeq: 2,
      carried: { messages, room },
    });
    expect(commitPayload('r:1', 3, 40, many, undefined, huge)).toBe('r:1:3:40');
  });
});

describe('carriedChanges (a node taking a carried commit)', () => {
  // One timestamp for all: the expected and the carried copies are built apart (a millisecond may pass).
  const at = new Date().toISOString();
  const m = (seq: number, text = `m${seq}`): Message => ({ ...makeMessage('r', seq, { text_content: text }), message_id: `id-${seq}`, timestamp: at });

  it('splits new messages from rewritten ones, the last version of each seq once, as the table holds them', () => {
    const carried = { version: 5, lastSeq: 4, messages: [m(3, 'new'), m(2, 'edit 1'), m(4), m(3, 'new, edited'), m(2, 'edit 2')] };
    expect(carriedChanges(carried, 4, 2)).toEqual({ added: [m(3, 'new, edited'), m(4)], updated: [m(2, 'edit 2')] });
  });

  it('declines a commit that does not follow the node\'s version or would leave a gap', () => {
    expect(carriedChanges({ version: 6, lastSeq: 3, messages: [m(3)] }, 4, 2)).toBeUndefined();
    expect(carriedChanges({ version: 5, lastSeq: 4, messages: [m(4)] }, 4, 2)).toBeUndefined();
    expect(carriedChanges({ version: 5, lastSeq: 3, messages: [m(3)] }, 4, 2)).toEqual({ added: [m(3)], updated: [] });
  });
});

describe.skipIf(!enabled)('two nodes on one PostgreSQL', () => {
  const pgServer = usePgServer();
  it('a payload at the limit is one PostgreSQL takes: 7,999 bytes go through pg_notify, 8,000 are refused', async () => {
    const pool = new pg.Pool({ connectionString: pgServer().url });
    try {
      await pool.query('SELECT pg_notify($1, $2)', ['limit_probe', 'x'.repeat(MAX_PAYLOAD_BYTES)]);
      await expect(pool.query('SELECT pg_notify($1, $2)', ['limit_probe', 'x'.repeat(MAX_PAYLOAD_BYTES + 1)])).rejects.toThrow(/payload string too long/);
    } finally {
      await pool.end();
    }
  });

  it('notifications carry each commit\'s rows and state exactly as the tables hold them', async () => {
    const url = await pgServer().createDatabase();
    const [a, b] = [await startNode(url), await startNode(url)];
    try {
      const initial = makeRoom('r');
      let v = await a.store.createRoom(initial);
      const m1 = makeMessage('r', 1, { text_content: 'first 第一 \u0000' });
      v = await a.store.commitRoom('r', { messages: [m1], expectedVersion: v });
      await expect.poll(() => b.changes.filter((c) => c.roomId === 'r').map((c) => c.version)).toEqual([1, 2]);
      const [created, first] = b.changes.filter((c) => c.roomId === 'r');
      expect(created!.carried).toEqual({ messages: [], room: initial });
      expect(first!.carried).toEqual({ messages: await b.store.readMessages('r', { afterSeq: 0, limit: 1 }) });
      expect(first!.carried!.messages[0]!.text_content).toBe('first 第一 \u0000');

      const edited = { ...m1, text_content: 'first, edited', edited_at: new Date().toISOString() };
      const room = { ...makeRoom('r'), processed_through_seq: 2 };
      v = await a.store.commitRoom('r', { room, messages: [makeMessage('r', 2), edited], expectedVersion: v });
      await expect.poll(() => b.changes.filter((c) => c.roomId === 'r').map((c) => c.version)).toEqual([1, 2, 3]);
      const second = b.changes.filter((c) => c.roomId === 'r')[2];
      const loaded = (await b.store.loadRoom('r'))!;
      expect(second).toMatchObject({ version: loaded.version, lastSeq: loaded.lastSeq });
      expect(second!.carried!.room).toEqual(loaded.room);
      const split = carriedChanges({ version: second!.version, lastSeq: second!.lastSeq, messages: second!.carried!.messages }, 2, 1)!;
      expect(split.added).toEqual(await b.store.readMessages('r', { afterSeq: 1, limit: 10 }));
      const read = (await b.store.readChangesSince('r', { version: 2, lastSeq: 1 }))!;
      expect(read.loaded).toEqual(loaded);
      expect(split.added).toEqual(read.added);
      expect(split.updated).toEqual(read.updated);
      expect(split.updated).toEqual([await b.store.getMessage(m1.message_id)]);
    } finally {
      await stopNode(a);
      await stopNode(b);
    }
  });

  it.each(['in-commit', 'after-commit'] as const)(
    '2 × 16 concurrent committers into one room (NOTIFY %s): gapless seqs, nothing lost, every notification on both nodes',
    async (notify) => {
      const url = await pgServer().createDatabase();
      const [a, b] = [await startNode(url, notify), await startNode(url, notify)];
      try {
        const seenA = follow(a, 'r');
        const seenB = follow(b, 'r');
        await a.store.createRoom(makeRoom('r'));
        const perWriter = 4;
        const writers = range(1, 32).map(async (w) => {
          const node = w % 2 === 0 ? a : b;
          const ids: string[] = [];
          for (let i = 0; i < perWriter; i++) ids.push((await append(node.store, 'r', `writer ${w} message ${i}`)).id);
          return ids;
        });
        const ids = (await Promise.all(writers)).flat();
        const total = 32 * perWriter;

        const loaded = (await b.store.loadRoom('r'))!;
        expect(loaded).toMatchObject({ lastSeq: total, version: total + 1 });
        expect(loaded.room.processed_through_seq).toBe(total);
        const stored = await a.store.readMessages('r', { afterSeq: 0, limit: 1000 });
        expect(stored.map((m) => m.seq)).toEqual(range(1, total));
        expect(new Set(stored.map((m) => m.message_id))).toEqual(new Set(ids));

        for (const [node, seen] of [[a, seenA], [b, seenB]] as const) {
          // Followers hand on every message once, in seq order, whatever order hints arrive in.
          await expect.poll(() => seen.added.length, { timeout: 10_000 }).toBe(total);
          expect(seen.added).toEqual(range(1, total));
          expect(seen.updated).toEqual([]);
          await expect.poll(() => seen.versions.at(-1)).toBe(total + 1);
          // Every commit's notification reaches every node, once, naming its own last seq.
          await expect.poll(() => node.changes.length, { timeout: 10_000 }).toBe(total + 1);
          const versions = node.changes.map((c) => c.version);
          if (notify === 'in-commit') expect(versions).toEqual(range(1, total + 1)); // in commit order
          else expect([...versions].sort((x, y) => x - y)).toEqual(range(1, total + 1));
          for (const c of node.changes) expect(c.lastSeq).toBe(c.version - 1);
        }
      } finally {
        await stopNode(a);
        await stopNode(b);
      }
    },
  );

  it('a notification lost with its node: the feed\'s poll still brings the commit to followers', async () => {
    const url = await pgServer().createDatabase();
    const b = await startNode(url, 'after-commit', 100);
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    try {
      const seenB = follow(b, 'r');
      const v = await b.store.createRoom(makeRoom('r'));
      const m = makeMessage('r', 1);
      // A commit from a node that died before its after-commit NOTIFY: p_notify false, no send.
      await admin.query(
        `SELECT * FROM chatroom_commit_room($1, $2, gen_random_uuid(), NULL, NULL, NULL, NULL,
           ARRAY[1]::bigint[], ARRAY[$3], ARRAY[$4]::json[], ARRAY[$5], ARRAY['user'], ARRAY[true], ARRAY[false],
           ARRAY[NULL]::text[], ARRAY['x'], NULL, NULL, false)`,
        ['r', v, m.message_id, JSON.stringify(m), m.sender_id],
      );
      await expect.poll(() => seenB.added, { timeout: 5_000 }).toEqual([1]);
    } finally {
      await admin.end();
      await stopNode(b);
    }
  });

  it('edits reach the other node as updates, once', async () => {
    const url = await pgServer().createDatabase();
    const [a, b] = [await startNode(url), await startNode(url)];
    try {
      const seenB = follow(b, 'r');
      let v = await a.store.createRoom(makeRoom('r'));
      const m1 = makeMessage('r', 1, { text_content: 'draft' });
      v = await a.store.commitRoom('r', { messages: [m1], expectedVersion: v });
      await expect.poll(() => seenB.added).toEqual([1]);
      const edited = { ...m1, text_content: 'final', edited_at: new Date().toISOString() };
      v = await a.store.commitRoom('r', { messages: [edited, makeMessage('r', 2)], expectedVersion: v });
      await expect.poll(() => seenB.added).toEqual([1, 2]);
      await expect.poll(() => seenB.updated).toEqual([edited]);
      await expect.poll(() => seenB.versions.at(-1)).toBe(v);
    } finally {
      await stopNode(a);
      await stopNode(b);
    }
  });

  it('a dropped LISTEN connection reconnects and re-reads what it missed: no hole, no repeat', async () => {
    const url = await pgServer().createDatabase();
    const [a, b] = [await startNode(url), await startNode(url)];
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    try {
      const seenB = follow(b, 'r');
      await a.store.createRoom(makeRoom('r'));
      for (let i = 0; i < 5; i++) await append(a.store, 'r', `before ${i}`);
      await expect.poll(() => seenB.added.length).toBe(5);
      const first = (await a.store.readMessages('r', { afterSeq: 0, limit: 1 }))[0]!;

      // Cut node B's LISTEN connection, and write while it is away.
      const pid = b.feed.backendPid;
      expect(pid).toBeTypeOf('number');
      const writing = (async () => {
        for (let i = 0; i < 20; i++) await append(a.store, 'r', `during ${i}`);
      })();
      await admin.query('SELECT pg_terminate_backend($1)', [pid]);
      await writing;
      const edited = { ...first, text_content: 'edited while away' };
      const loaded = (await a.store.loadRoom('r'))!;
      await a.store.commitRoom('r', { messages: [edited], expectedVersion: loaded.version });

      await expect.poll(() => b.feed.connectCount, { timeout: 10_000 }).toBeGreaterThanOrEqual(2);
      await expect.poll(() => seenB.added.length, { timeout: 10_000 }).toBe(25);
      expect(seenB.added).toEqual(range(1, 25));
      await expect.poll(() => seenB.updated.map((m) => m.text_content), { timeout: 10_000 }).toEqual(['edited while away']);
      // Later commits still arrive by notification.
      await append(a.store, 'r', 'after');
      await expect.poll(() => seenB.added.length).toBe(26);
      expect(seenB.added).toEqual(range(1, 26));
    } finally {
      await admin.end();
      await stopNode(a);
      await stopNode(b);
    }
  });
});
