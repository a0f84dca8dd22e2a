// Server nodes on one PostgreSQL database for the multi-node tests: in this process
// (`startNode`, for nodes the test only stops cleanly) or as child processes (`spawnNode`, for
// nodes the test SIGKILLs and restarts), all with the same DATA_DIR and LINK_SECRET.
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll } from 'vitest';
import { testConfig, type Config } from '../../src/config.js';
import { silentLogger } from '../../src/logger.js';
import { startServer, type RunningServer, type ServerOptions } from '../../src/server.js';
import { spawnServer, type ServerProcess } from '../helpers/process.js';
import { pgTestsEnabled, startPgServer, type PgServer } from './pg-server.js';

export const LINK_SECRET = 'shared-link-secret-for-the-test-cluster';

/** One database and one shared DATA_DIR: where a test's nodes run. */
export interface ClusterSite {
  databaseUrl: string;
  dataDir: string;
}

export async function newSite(pgServer: PgServer): Promise<ClusterSite> {
  return { databaseUrl: await pgServer.createDatabase(), dataDir: await mkdtemp(path.join(os.tmpdir(), 'chatroom-cluster-')) };
}

/** A node in this process. */
export function startNode(site: ClusterSite, overrides: Partial<Config> = {}, options: ServerOptions = {}): Promise<RunningServer> {
  const config = testConfig({
    dataDir: site.dataDir,
    linkSecret: LINK_SECRET,
    store: { kind: 'postgres', databaseUrl: site.databaseUrl, poolSize: 5 },
    rateLimitRegisterPerHour: 0,
    maxConnectionsPerAddress: 10_000,
    ...overrides,
  });
  return startServer(config, silentLogger, options);
}

/** A node as a child process (the transpiled CLI), to SIGKILL. */
export function spawnNode(site: ClusterSite, env: Record<string, string> = {}): Promise<ServerProcess> {
  return spawnServer({
    STORE: 'postgres',
    DATABASE_URL: site.databaseUrl,
    DATABASE_POOL_SIZE: '5',
    DATA_DIR: site.dataDir,
    LINK_SECRET,
    ...env,
  });
}

/** SIGKILL, resolved once the process is gone. */
export async function kill(node: ServerProcess): Promise<void> {
  node.child.kill('SIGKILL');
  await node.exited;
}

/** A tool call that must succeed; resolves with its data. */
export { restOk as ok } from '../helpers/process.js';

/**
 * For a file of in-process nodes: a PostgreSQL server for the file (when the PostgreSQL tests
 * are on) and nodes that are all closed after its tests, before the server stops.
 */
export function useClusterNodes(): {
  newSite(): Promise<ClusterSite>;
  node(site: ClusterSite, overrides?: Partial<Config>, options?: ServerOptions): Promise<RunningServer>;
} {
  let pgServer: PgServer | undefined;
  const nodes: RunningServer[] = [];
  if (pgTestsEnabled()) {
    beforeAll(async () => {
      pgServer = await startPgServer();
    });
    afterAll(async () => {
      for (const node of nodes) await node.close().catch(() => undefined);
      await pgServer?.stop();
    });
  }
  return {
    newSite: () => newSite(pgServer!),
    async node(site, overrides = {}, options = {}) {
      const node = await startNode(site, overrides, options);
      nodes.push(node);
      return node;
    },
  };
}

/** The node's WebSocket URL. */
export const wsUrlOf = (node: RunningServer): string => `${node.url.replace('http', 'ws')}/ws`;

/** Drops every node's LISTEN connection on the site's database (they reconnect about 100 ms later). */
export async function cutFeeds(databaseUrl: string): Promise<void> {
  const admin = new pg.Client({ connectionString: databaseUrl });
  await admin.connect();
  try {
    await admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'agent-chatroom-feed' AND datname = current_database()");
  } finally {
    await admin.end();
  }
}
