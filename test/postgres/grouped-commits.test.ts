// Grouped room commits (004_grouped_commits.sql, src/storage/postgres/statement-group.ts): the
// commits a node computes in one event-loop turn, and those that wait while its commit slots are
// busy, go to the database as one statement. Each one is still answered alone: a stale or
// refused commit fails without a trace and without failing the others, a room another
// transaction holds is not waited for by the group, and a lost answer is settled per commit.
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { PgStore } from '../../src/storage/postgres/pg-store.js';
import { StaleRoomError } from '../../src/storage/store.js';
import { makeMessage, makeRoom } from '../unit/storage-helpers.js';
import { startCutProxy } from './cut-proxy.js';
import { pgTestsEnabled, usePgServer } from './pg-server.js';

describe.skipIf(!pgTestsEnabled())('PgStore: grouped commits', () => {
  const pgServer = usePgServer();

  it('answers each commit of a group alone, and does not hold the group for a locked room', async () => {
    const url = await pgServer().createDatabase();
    // One commit slot, so that the test controls which commits share a statement.
    const store = new PgStore({ connectionString: url, poolSize: 4, commitSlots: 1 });
    await store.open();
    const admin = new pg.Client({ connectionString: url });
    const holder = new pg.Client({ connectionString: url });
    await admin.connect();
    await holder.connect();
    try {
      // Which transaction wrote each message (txid_current() is the top-level transaction's id,
      // also inside the function's subtransactions).
      await admin.query(`
        CREATE TABLE test_writers (room_id text, txid bigint);
        CREATE FUNCTION test_record_writer() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN INSERT INTO test_writers VALUES (NEW.room_id, txid_current()); RETURN NEW; END $$;
        CREATE TRIGGER test_writer AFTER INSERT ON messages FOR EACH ROW EXECUTE FUNCTION test_record_writer();`);
      const ids = ['alone', 'g1', 'g2', 'g3', 'locked', 'stale', 'badseq'];
      const version = new Map<string, number>();
      for (const id of ids) version.set(id, await store.createRoom(makeRoom(id)));
      await holder.query('BEGIN');
      await holder.query("SELECT 1 FROM rooms WHERE room_id = 'locked' FOR UPDATE");

      const commit = (id: string, seq = 1, expectedVersion = version.get(id)!) =>
        store.commitRoom(id, { messages: [makeMessage(id, seq)], expectedVersion });
      // A commit of the turn before holds the one slot; the next ones wait for it, together.
      const alone = commit('alone');
      await new Promise((resolve) => setImmediate(resolve));
      const grouped = ['g1', 'g2', 'g3'].map((id) => commit(id));
      let lockedSettled = false;
      const locked = commit('locked').finally(() => (lockedSettled = true));
      const stale = commit('stale', 1, version.get('stale')! + 5);
      const badSeq = commit('badseq', 5);

      expect(await alone).toBe(version.get('alone')! + 1);
      expect(await Promise.all(grouped)).toEqual(['g1', 'g2', 'g3'].map((id) => version.get(id)! + 1));
      await expect(stale).rejects.toBeInstanceOf(StaleRoomError);
      await expect(badSeq).rejects.toThrow(/seq/);
      // The group went on without the locked room; that commit waits alone for its lock.
      expect(lockedSettled).toBe(false);

      const { rows } = await admin.query<{ room_id: string; txid: string }>('SELECT room_id, txid FROM test_writers');
      const txidOf = new Map(rows.map((r) => [r.room_id, r.txid]));
      expect(new Set(['g1', 'g2', 'g3'].map((id) => txidOf.get(id))).size).toBe(1);
      expect(txidOf.get('g1')).not.toBe(txidOf.get('alone'));
      // The refused commits left no trace.
      for (const id of ['stale', 'badseq']) {
        expect(await store.loadRoom(id)).toMatchObject({ version: version.get(id), lastSeq: 0 });
        expect(txidOf.has(id)).toBe(false);
      }

      await holder.query('COMMIT');
      expect(await locked).toBe(version.get('locked')! + 1);
      expect((await store.readMessages('locked', { afterSeq: 0, limit: 5 })).map((m) => m.seq)).toEqual([1]);
    } finally {
      await holder.end();
      await admin.end();
      await store.close();
    }
  });

  it('settles every commit of a group whose answer was lost by its own id, and none that never ran', async () => {
    const url = await pgServer().createDatabase('grouped_in_doubt');
    const proxy = await startCutProxy(pgServer().port, 'grouped_in_doubt');
    // NOTIFY inside the commit: no after-commit notification shares the pool with the cut.
    const store = new PgStore({ connectionString: proxy.url, poolSize: 2, notify: 'in-commit' });
    try {
      await store.open();
      const ids = ['a', 'b', 'c'];
      const version = new Map<string, number>();
      for (const id of ids) version.set(id, await store.createRoom(makeRoom(id)));
      const commitAll = (seq: number) =>
        Promise.allSettled(ids.map((id) => store.commitRoom(id, { messages: [makeMessage(id, seq)], expectedVersion: version.get(id)! })));

      // The group ran and committed, its answer was lost: every commit resolves with its version.
      proxy.cutNext('after-server');
      const landed = await commitAll(1);
      expect(landed.map((r) => (r.status === 'fulfilled' ? r.value : r.reason))).toEqual(ids.map((id) => version.get(id)! + 1));
      for (const id of ids) version.set(id, version.get(id)! + 1);

      // The group never reached the server: every commit rejects, and nothing of it is stored.
      proxy.cutNext('before-server');
      const lost = await commitAll(2);
      expect(lost.every((r) => r.status === 'rejected')).toBe(true);
      for (const id of ids) {
        expect(await store.loadRoom(id)).toMatchObject({ version: version.get(id), lastSeq: 1 });
        expect((await store.readMessages(id, { afterSeq: 0, limit: 5 })).map((m) => m.seq)).toEqual([1]);
      }
    } finally {
      await store.close();
      await proxy.close();
    }
  });

  it('tries each commit of a group again alone when the statement fails as a whole: only the failing one fails', async () => {
    const url = await pgServer().createDatabase();
    const store = new PgStore({ connectionString: url, poolSize: 4 });
    await store.open();
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    try {
      // An error no commit answers by itself (not stale, seq or lock) aborts the whole statement.
      await admin.query(`
        CREATE FUNCTION test_fault_raise() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN IF NEW.room_id = 'bad' THEN RAISE EXCEPTION 'injected failure in %', NEW.room_id; END IF; RETURN NEW; END $$;
        CREATE TRIGGER test_fault AFTER INSERT ON messages FOR EACH ROW EXECUTE FUNCTION test_fault_raise();`);
      const ids = ['g1', 'bad', 'g2'];
      const version = new Map<string, number>();
      for (const id of ids) version.set(id, await store.createRoom(makeRoom(id)));
      // Submitted in one turn: one group.
      const outcomes = await Promise.allSettled(ids.map((id) => store.commitRoom(id, { messages: [makeMessage(id, 1)], expectedVersion: version.get(id)! })));
      expect(outcomes[0]).toEqual({ status: 'fulfilled', value: version.get('g1')! + 1 });
      expect(outcomes[2]).toEqual({ status: 'fulfilled', value: version.get('g2')! + 1 });
      expect(outcomes[1]!.status).toBe('rejected');
      expect(String((outcomes[1] as PromiseRejectedResult).reason)).toMatch(/injected failure in bad/);
      expect(await store.loadRoom('bad')).toMatchObject({ version: version.get('bad'), lastSeq: 0 });
      for (const id of ['g1', 'g2']) expect((await store.readMessages(id, { afterSeq: 0, limit: 5 })).map((m) => m.seq)).toEqual([1]);
    } finally {
      await admin.end();
      await store.close();
    }
  });
});
