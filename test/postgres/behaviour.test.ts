// The behaviour suites on PostgreSQL (SPEC §11: one node on PostgreSQL passes the same behaviour
// tests as the file store): the turn engine over HTTP, durability across SIGKILL, rooms over
// the WebSocket (isolation, subscriptions, replay with after_seq) and exports, the same suite
// functions (test/suites/) that test/integration/ runs on the file store, here with every
// server on a fresh database of one throwaway PostgreSQL.
import { afterAll, beforeAll, describe } from 'vitest';
import { useTestStore } from '../helpers/server.js';
import { durabilitySuites } from '../suites/durability.js';
import { exportSuites } from '../suites/export.js';
import { turnEngineSuites } from '../suites/turn-engine.js';
import { wsRoomSuites } from '../suites/ws-rooms.js';
import { pgTestsEnabled, startPgServer, type PgServer } from './pg-server.js';

const enabled = pgTestsEnabled();
let pgServer: PgServer | undefined;

describe.skipIf(!enabled)('the behaviour suites on PostgreSQL', () => {
  beforeAll(async () => {
    pgServer = await startPgServer();
    useTestStore({
      config: async () => ({ store: { kind: 'postgres', databaseUrl: await pgServer!.createDatabase(), poolSize: 5 } }),
      env: async () => ({ STORE: 'postgres', DATABASE_URL: await pgServer!.createDatabase(), DATABASE_POOL_SIZE: '5' }),
    });
  });
  afterAll(async () => {
    useTestStore(undefined);
    await pgServer?.stop();
  });

  turnEngineSuites();
  durabilitySuites();
  wsRoomSuites();
  exportSuites();
});
