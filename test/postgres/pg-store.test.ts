// PgStore on a real, throwaway PostgreSQL: the seam's guarantees (run on MemoryStore too, which
// checks the checks), migrations, and what only a database can get wrong.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryStore } from '../../src/storage/memory-store.js';
import { parseRoomChange, ROOM_CHANNEL } from '../../src/storage/postgres/feed.js';
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
