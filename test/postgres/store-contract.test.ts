// The shared Store contract (test/unit/store-contract.ts) run against PgStore on a real,
// throwaway PostgreSQL. `reopen` is a new PgStore (a restarted node) on the same database.
// Faults are real database failures: test-only triggers raise inside the write's transaction,
// either at its first row ('statement') or at the very last step of a room commit, after its
// messages and room row were written ('commit-end'), so the rollback must undo them.
import pg from 'pg';
import { afterAll, beforeAll, describe } from 'vitest';
import { PgStore } from '../../src/storage/postgres/pg-store.js';
import type { Store } from '../../src/storage/store.js';
import { storeContract, type StoreHarness } from '../unit/store-contract.js';
import { pgTestsEnabled, startPgServer, type PgServer } from './pg-server.js';

const enabled = pgTestsEnabled();
let server: PgServer | undefined;
if (enabled) {
  beforeAll(async () => {
    server = await startPgServer();
  });
  afterAll(async () => {
    await server?.stop();
  });
}

const FAULT_SQL = `
  CREATE TABLE test_fault (kind text NOT NULL);
  CREATE FUNCTION test_fault_raise() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    IF EXISTS (SELECT 1 FROM test_fault WHERE kind = TG_ARGV[0]) THEN
      RAISE EXCEPTION 'injected % failure on %', TG_ARGV[0], TG_TABLE_NAME;
    END IF;
    RETURN NEW;
  END $$;
  CREATE TRIGGER fault_participants BEFORE INSERT OR UPDATE ON participants
    FOR EACH ROW EXECUTE FUNCTION test_fault_raise('statement');
  CREATE TRIGGER fault_rooms BEFORE INSERT OR UPDATE ON rooms
    FOR EACH ROW EXECUTE FUNCTION test_fault_raise('statement');
  CREATE TRIGGER fault_messages BEFORE INSERT OR UPDATE ON messages
    FOR EACH ROW EXECUTE FUNCTION test_fault_raise('statement');
  CREATE TRIGGER fault_commit_end BEFORE INSERT ON room_commits
    FOR EACH ROW EXECUTE FUNCTION test_fault_raise('commit-end');
`;

const WRITES = new Set(['putParticipant', 'createRoom', 'commitRoom']);

// Skipped (with the reason printed by pgTestsEnabled) only outside CI, where PostgreSQL is missing.
describe.skipIf(!enabled)('on a real PostgreSQL', () => {
  storeContract('PgStore', async (): Promise<StoreHarness> => {
    const url = await server!.createDatabase();
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    let pending: Promise<unknown> = Promise.resolve();
    let real = new PgStore({ connectionString: url, poolSize: 4 });
    await real.open();
    await admin.query(FAULT_SQL);
    // `faults.set` is synchronous; the wrapper makes each write wait until the fault switch
    // has reached the database, then calls the real store.
    const wrap = (target: () => PgStore): Store =>
      new Proxy({} as Store, {
        get(_, prop: string) {
          const value = (target() as unknown as Record<string, unknown>)[prop];
          if (typeof value !== 'function') return value;
          return async (...args: unknown[]) => {
            if (WRITES.has(prop)) await pending;
            return (value as (...a: unknown[]) => unknown).apply(target(), args);
          };
        },
      });
    const harness: StoreHarness = {
      store: wrap(() => real),
      async reopen() {
        await real.close();
        real = new PgStore({ connectionString: url, poolSize: 4 });
        await real.open();
        harness.store = wrap(() => real);
        return harness.store;
      },
      faults: {
        kinds: ['statement', 'commit-end'],
        set(kind) {
          pending = pending.then(() =>
            kind === null ? admin.query('DELETE FROM test_fault') : admin.query('INSERT INTO test_fault (kind) VALUES ($1)', [kind]),
          );
        },
      },
      async cleanup() {
        await pending.catch(() => undefined);
        await real.close();
        await admin.end();
      },
    };
    return harness;
  });
});
