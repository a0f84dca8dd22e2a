// PgStore on a real, throwaway PostgreSQL: the seam's guarantees (run on MemoryStore too, which
// checks the checks), migrations, and what only a database can get wrong.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { confusableKeys } from '../../src/identity/names.js';
import { MemoryStore } from '../../src/storage/memory-store.js';
import { NameTakenError, StaleRoomError } from '../../src/storage/store.js';
import { parseRoomChange, ROOM_CHANNEL, TOKEN_CHANNEL } from '../../src/storage/postgres/feed.js';
import { migrate, loadMigrations } from '../../src/storage/postgres/migrations.js';
import { PgStore } from '../../src/storage/postgres/pg-store.js';
import type { Store } from '../../src/storage/store.js';
import { makeAgent, makeMessage, makeRoom } from '../unit/storage-helpers.js';
import { pgTestsEnabled, usePgServer } from './pg-server.js';
import { startCutProxy } from './cut-proxy.js';
import { describeStoreGuarantees } from './store-guarantees.js';

describeStoreGuarantees('MemoryStore (reference)', async () => new MemoryStore(), async (s) => s.close());

const enabled = pgTestsEnabled();

describe.skipIf(!enabled)('PgStore', () => {
  const pgServer = usePgServer();

  const openStore = async (): Promise<PgStore> => {
    const store = new PgStore({ connectionString: await pgServer().createDatabase(), poolSize: 4 });
    await store.open();
    return store;
  };

  describeStoreGuarantees('PgStore', openStore, async (s: Store) => s.close());

  it('applies migrations once, also when nodes open together, and refuses a newer schema', async () => {
    const url = await pgServer().createDatabase();
    const stores = [1, 2, 3].map(() => new PgStore({ connectionString: url, poolSize: 2 }));
    await Promise.all(stores.map((s) => s.open()));
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      const { rows } = await client.query<{ version: number }>('SELECT version FROM chatroom_migrations ORDER BY version');
      expect(rows.map((r) => r.version)).toEqual((await loadMigrations()).map((m) => m.version));
      const pool = new pg.Pool({ connectionString: url, max: 1 });
      expect(await migrate(pool)).toEqual([]);
      await client.query("INSERT INTO chatroom_migrations (version, name) VALUES (999, '999_future')");
      await expect(migrate(pool)).rejects.toThrow(/newer than this server knows/);
      await pool.end();
    } finally {
      await client.end();
      await Promise.all(stores.map((s) => s.close()));
    }
  });

  it('keeps data across a reopen (another process on the same database)', async () => {
    const url = await pgServer().createDatabase();
    const first = new PgStore({ connectionString: url });
    await first.open();
    const v = await first.createRoom(makeRoom('r'));
    const m = makeMessage('r', 1);
    await first.commitRoom('r', { messages: [m], expectedVersion: v });
    await first.close();
    await first.close(); // idempotent
    const second = new PgStore({ connectionString: url });
    await second.open();
    expect(await second.readMessages('r', { afterSeq: 0, limit: 5 })).toEqual([m]);
    await second.close();
  });

  it('search uses the trigram index for Chinese text (the cluster is UTF-8)', async () => {
    const store = await openStore();
    try {
      const client = new pg.Client({ connectionString: (store as unknown as { options: { connectionString: string } }).options.connectionString });
      await client.connect();
      const { rows } = await client.query<{ t: string[] }>("SELECT show_trgm('你好世界') AS t");
      expect(rows[0]!.t.length).toBeGreaterThan(0);
      await client.end();
    } finally {
      await store.close();
    }
  });
});

/** A LISTEN connection straight to the database: what another node hears, as `room:version`. */
async function listen(url: string): Promise<{ heard: string[]; end: () => Promise<void> }> {
  const client = new pg.Client({ connectionString: url });
  const heard: string[] = [];
  client.on('notification', (n) => {
    const change = n.channel === ROOM_CHANNEL && n.payload !== undefined ? parseRoomChange(n.payload) : undefined;
    if (change) heard.push(`${change.roomId}:${change.version}`);
  });
  await client.connect();
  await client.query(`LISTEN ${ROOM_CHANNEL}`);
  return { heard, end: () => client.end() };
}

describe.skipIf(!enabled)('PgStore: a connection lost during a commit', () => {
  const pgServer = usePgServer();

  it('resolves when the commit landed but its answer was lost, rejects without a trace when it never ran', async () => {
    const listener = await listen(await pgServer().createDatabase('indoubt'));
    const proxy = await startCutProxy(pgServer().port, 'indoubt');
    const store = new PgStore({ connectionString: proxy.url, poolSize: 2 });
    try {
      await store.open();
      // Participants and room creation repeat their idempotent statement after a lost answer.
      await store.loadRoom('x'); // warm a pooled connection so the cut hits the write, not a handshake
      proxy.cutNext('after-server');
      await store.putParticipant({ kind: 'agent', record: makeAgent('a1', { name: 'Alpha' }) }, 'alpha');
      expect((await store.getParticipant('a1'))?.record.name).toBe('Alpha');
      proxy.cutNext('after-server');
      const v1 = await store.createRoom(makeRoom('r'));
      expect(v1).toBe(1);
      await expect(store.createRoom(makeRoom('r'))).rejects.toThrow(/exists/);
      await store.loadRoom('r');

      const m1 = makeMessage('r', 1);
      proxy.cutNext('after-server');
      const v2 = await store.commitRoom('r', { messages: [m1], expectedVersion: v1 });
      expect(v2).toBe(v1 + 1);
      expect(await store.readMessages('r', { afterSeq: 0, limit: 5 })).toEqual([m1]);
      // Its notification is out (sent again if its first try met a dead pooled connection):
      // nothing but the next commit goes through the proxy now.
      await expect.poll(() => listener.heard).toContain(`r:${v2}`);

      await store.loadRoom('r');
      proxy.cutNext('before-server');
      await expect(store.commitRoom('r', { messages: [makeMessage('r', 2)], expectedVersion: v2 })).rejects.toThrow();
      expect(await store.loadRoom('r')).toMatchObject({ lastSeq: 1, version: v2 });
      expect(await store.readMessages('r', { afterSeq: 0, limit: 5 })).toEqual([m1]);
    } finally {
      await listener.end();
      await store.close();
      await proxy.close();
    }
  });

  it('sends a NOTIFY again when its connection drops: the other nodes still learn of the commit', async () => {
    // Another node's LISTEN connection, straight to the database.
    const listener = await listen(await pgServer().createDatabase('notifyfail'));
    const { heard } = listener;
    const proxy = await startCutProxy(pgServer().port, 'notifyfail');
    const errors: Error[] = [];
    const store = new PgStore({ connectionString: proxy.url, poolSize: 2, onPoolError: (err) => errors.push(err) });
    try {
      await store.open();
      const v1 = await store.createRoom(makeRoom('r'));
      await expect.poll(() => heard).toEqual(['r:1']);
      const v2 = await store.commitRoom('r', { messages: [makeMessage('r', 1)], expectedVersion: v1 });
      // The commit is in and its NOTIFY queued for the next turn of the event loop: the next
      // statement through the proxy is that NOTIFY, and its connection is cut before it arrives.
      proxy.cutNext('before-server');
      await expect.poll(() => errors.length).toBeGreaterThan(0);
      await expect.poll(() => heard, { timeout: 5_000 }).toEqual(['r:1', `r:${v2}`]);
      // Later commits are announced after it, in order.
      const v3 = await store.commitRoom('r', { messages: [makeMessage('r', 2)], expectedVersion: v2 });
      await expect.poll(() => heard).toEqual(['r:1', `r:${v2}`, `r:${v3}`]);
    } finally {
      await listener.end();
      await store.close();
      await proxy.close();
    }
  });
});

// SPEC §5 (a failed call leaves no trace) for the parts of a participant write that only the
// PostgreSQL store has: the look-alike keys inserted with a registration, and the revocation
// announced with a rotation. Faults are real: a test-only trigger raises inside the statement.
describe.skipIf(!enabled)('PgStore: participant writes that fail part-way', () => {
  const pgServer = usePgServer();

  /** A store on a fresh database, and a switch that makes writes to `table` raise. */
  async function withFault(table: string) {
    const url = await pgServer().createDatabase();
    const store = new PgStore({ connectionString: url, poolSize: 2, lookAlikeKeysOf: confusableKeys });
    await store.open();
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    await admin.query(`
      CREATE TABLE test_fault (on_off boolean NOT NULL);
      CREATE FUNCTION test_fault_raise() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF EXISTS (SELECT 1 FROM test_fault) THEN RAISE EXCEPTION 'injected failure on %', TG_TABLE_NAME; END IF;
        RETURN NEW;
      END $$;
      CREATE TRIGGER test_fault AFTER INSERT OR UPDATE ON ${table} FOR EACH ROW EXECUTE FUNCTION test_fault_raise();`);
    return {
      store,
      admin,
      fail: (on: boolean) => admin.query(on ? 'INSERT INTO test_fault VALUES (true)' : 'DELETE FROM test_fault'),
      end: async () => {
        await store.close();
        await admin.end();
      },
    };
  }

  it('a registration whose look-alike keys cannot be stored leaves no participant and no key; the retry succeeds', async () => {
    const db = await withFault('participant_look_alikes');
    try {
      const dave = { kind: 'agent' as const, record: makeAgent('a-dave', { name: 'Dave', token_hashes: ['t-dave'] }) };
      await db.fail(true);
      // The participant's row is inserted first in the statement; the keys' insert raises after it.
      await expect(db.store.putParticipant(dave, 'dave')).rejects.toThrow(/injected failure on participant_look_alikes/);
      expect(await db.store.getParticipant('a-dave')).toBeUndefined();
      expect(await db.store.findParticipantByNameKey('dave')).toBeUndefined();
      expect(await db.store.findParticipantByTokenHash('t-dave')).toBeUndefined();
      expect((await db.admin.query('SELECT count(*)::int AS n FROM participant_look_alikes')).rows[0].n).toBe(0);
      await db.fail(false);
      await db.store.putParticipant(dave, 'dave');
      expect((await db.store.getParticipant('a-dave'))?.record.name).toBe('Dave');
      // Its keys came with it: a look-alike (Cyrillic а) is taken.
      const lookAlike = { kind: 'agent' as const, record: makeAgent('a-other', { name: 'D\u0430ve' }) };
      await expect(db.store.putParticipant(lookAlike, 'd\u0430ve')).rejects.toBeInstanceOf(NameTakenError);
    } finally {
      await db.end();
    }
  });

  it('a rotation whose write fails announces no revocation and keeps the old token; the retry announces it once', async () => {
    const db = await withFault('participants');
    const heard: string[] = [];
    db.admin.on('notification', (n) => {
      if (n.channel === TOKEN_CHANNEL) heard.push(n.payload ?? '');
    });
    await db.admin.query(`LISTEN ${TOKEN_CHANNEL}`);
    try {
      const before = { kind: 'agent' as const, record: makeAgent('a1', { name: 'Ann', token_hashes: ['t-old'] }) };
      await db.store.putParticipant(before, 'ann');
      const rotated = { kind: 'agent' as const, record: { ...before.record, token_hashes: ['t-new'] } };
      await db.fail(true);
      await expect(db.store.putParticipant(rotated, 'ann', before)).rejects.toThrow(/injected failure on participants/);
      expect((await db.store.findParticipantByTokenHash('t-old'))?.record).toEqual(before.record);
      expect(await db.store.findParticipantByTokenHash('t-new')).toBeUndefined();
      await db.fail(false);
      await db.store.putParticipant(rotated, 'ann', before);
      expect(await db.store.findParticipantByTokenHash('t-old')).toBeUndefined();
      // Notifications arrive in commit order: one from the failed write would come before this one.
      await expect.poll(() => heard).toEqual([JSON.stringify(['t-old'])]);
    } finally {
      await db.end();
    }
  });
});

describe.skipIf(!enabled)('PgStore.commitRoomLocked', () => {
  const pgServer = usePgServer();

  it('builds on the room as stored, holds its lock while building, and leaves no trace when the commit fails', async () => {
    const url = await pgServer().createDatabase();
    const a = new PgStore({ connectionString: url, poolSize: 2 });
    const b = new PgStore({ connectionString: url, poolSize: 2 });
    await a.open();
    await b.open();
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    try {
      const v1 = await a.createRoom(makeRoom('r'));
      // B commits behind A's back; A builds from its old copy (version v1, no messages).
      const v2 = await b.commitRoom('r', { messages: [makeMessage('r', 1)], expectedVersion: v1 });
      let release = (): void => undefined;
      const gate = new Promise<void>((resolve) => (release = resolve));
      let seen: { version: number; added: number[] } | undefined;
      const locked = a.commitRoomLocked('r', { version: v1, lastSeq: 0 }, async (changes) => {
        seen = { version: changes.loaded.version, added: changes.added.map((m) => m.seq) };
        await gate;
        return { messages: [makeMessage('r', changes.loaded.lastSeq + 1)], expectedVersion: -1 };
      });
      await expect.poll(() => seen).toEqual({ version: v2, added: [1] });
      // B's optimistic commit waits for the lock, then finds the room changed.
      let bSettled = false;
      const bCommit = b.commitRoom('r', { messages: [makeMessage('r', 2)], expectedVersion: v2 }).finally(() => (bSettled = true));
      const bOutcome = bCommit.then(() => 'committed', (err: unknown) => err);
      // B's statement is seen waiting for A's lock in the database, and B has not settled.
      const waitingOnLocks = async () => (await admin.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`)).rows[0]!.n;
      await expect.poll(waitingOnLocks).toBeGreaterThan(0);
      expect(bSettled).toBe(false);
      release();
      const v3 = await locked;
      expect(v3).toBe(v2 + 1);
      expect(await bOutcome).toBeInstanceOf(StaleRoomError);
      expect((await a.readMessages('r', { afterSeq: 0, limit: 10 })).map((m) => m.seq)).toEqual([1, 2]);

      // A commit that fails inside the transaction leaves the room as it was.
      await admin.query(`
        CREATE FUNCTION test_fault_raise() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN RAISE EXCEPTION 'injected failure on %', TG_TABLE_NAME; END $$;
        CREATE TRIGGER test_fault AFTER INSERT ON messages FOR EACH ROW EXECUTE FUNCTION test_fault_raise();`);
      await expect(
        a.commitRoomLocked('r', { version: v3!, lastSeq: 2 }, async () => ({ messages: [makeMessage('r', 3)], expectedVersion: -1 })),
      ).rejects.toThrow(/injected failure/);
      expect(await a.loadRoom('r')).toMatchObject({ version: v3, lastSeq: 2 });
      // Nothing to write: the lock is taken and released, the version stays.
      expect(await a.commitRoomLocked('r', { version: v3!, lastSeq: 2 }, async () => null)).toBeUndefined();
      await admin.query('DROP TRIGGER test_fault ON messages');
      expect(await b.commitRoom('r', { messages: [makeMessage('r', 3)], expectedVersion: v3! })).toBe(v3! + 1);
    } finally {
      await admin.end();
      await a.close();
      await b.close();
    }
  });
});

