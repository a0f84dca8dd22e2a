// A throwaway, real PostgreSQL cluster for tests: `initdb` into a temp dir, `pg_ctl start` on a
// free port on 127.0.0.1 (and a Unix socket inside the temp dir, so it never touches the
// machine's own cluster), and `pg_ctl stop` + delete afterwards.
//
// Where the binaries come from: $PG_BIN (only there, when set), else the newest /usr/lib/postgresql/<major>/bin
// (Debian's `postgresql` package), else `pg_config --bindir`. Debian/Ubuntu CI needs
// `apt-get install postgresql` (the server binaries; the service it starts is not used).
//
// Running as root (CI, containers): PostgreSQL refuses to run as root, so initdb/pg_ctl run as
// the `postgres` system user (created by the Debian package) through `runuser`, and the temp
// dir is chowned to it.
//
// Availability: `pgAvailability()` says whether a cluster can start here. With CI=true a
// missing PostgreSQL throws (these tests never skip in CI); elsewhere the tests skip with the
// reason printed.
import { execFileSync, spawnSync } from 'node:child_process';
import { chownSync, existsSync, readdirSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll } from 'vitest';

export interface PgServer {
  /** Connection string of the `postgres` database (trust auth, superuser `postgres`). */
  url: string;
  port: number;
  dataDir: string;
  /** Creates a fresh database and resolves with its connection string. */
  createDatabase(name?: string): Promise<string>;
  /** Stops the cluster (immediate shutdown: nothing to keep) and deletes its directory. */
  stop(): Promise<void>;
}

export interface PgServerOptions {
  /**
   * Durable commits (fsync) as in production. Off by default: tests check the store's logic,
   * not the disk, and a throwaway cluster without fsync spares the shared CI machine. The
   * benchmark turns it on.
   */
  fsync?: boolean;
  /** Extra `-c name=value` server settings. */
  settings?: Record<string, string | number>;
}

export type PgAvailability = { ok: true; binDir: string } | { ok: false; reason: string };

function findBinDir(): string | undefined {
  const candidates: string[] = [];
  // An explicit PG_BIN is the only place looked at: a wrong one is reported, not papered over.
  if (process.env.PG_BIN) return hasServerBinaries(process.env.PG_BIN) ? process.env.PG_BIN : undefined;
  const debianRoot = '/usr/lib/postgresql';
  if (existsSync(debianRoot)) {
    const majors = readdirSync(debianRoot)
      .filter((d) => /^\d+$/.test(d))
      .sort((a, b) => Number(b) - Number(a));
    for (const major of majors) candidates.push(path.join(debianRoot, major, 'bin'));
  }
  try {
    candidates.push(execFileSync('pg_config', ['--bindir'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim());
  } catch {
    // no pg_config on PATH
  }
  return candidates.find(hasServerBinaries);
}

function hasServerBinaries(dir: string): boolean {
  return ['initdb', 'pg_ctl', 'postgres'].every((b) => existsSync(path.join(dir, b)));
}

const isRoot = (): boolean => typeof process.getuid === 'function' && process.getuid() === 0;

function systemUser(name: string): { uid: number; gid: number } | undefined {
  const found = spawnSync('id', ['-u', name], { encoding: 'utf8' });
  const gid = spawnSync('id', ['-g', name], { encoding: 'utf8' });
  if (found.status !== 0 || gid.status !== 0) return undefined;
  return { uid: Number(found.stdout.trim()), gid: Number(gid.stdout.trim()) };
}

let cached: PgAvailability | undefined;

/** Whether a throwaway cluster can start here; with CI=true an unavailable one throws. */
export function pgAvailability(): PgAvailability {
  cached ??= probe();
  if (!cached.ok && process.env.CI) {
    throw new Error(`${cached.reason} — PostgreSQL tests never skip in CI (apt-get install postgresql)`);
  }
  return cached;
}

function probe(): PgAvailability {
  const binDir = findBinDir();
  if (!binDir) return { ok: false, reason: 'PostgreSQL server binaries (initdb, pg_ctl, postgres) not found; set PG_BIN or install postgresql' };
  if (isRoot()) {
    if (!systemUser('postgres')) return { ok: false, reason: 'running as root and there is no `postgres` system user to run PostgreSQL as' };
    if (spawnSync('runuser', ['--help'], { stdio: 'ignore' }).status !== 0) return { ok: false, reason: 'running as root and `runuser` is missing' };
  }
  return { ok: true, binDir };
}

/** Tells why the PostgreSQL tests are skipped (outside CI only); returns whether they run. */
export function pgTestsEnabled(): boolean {
  const availability = pgAvailability();
  if (!availability.ok) console.warn(`Skipping PostgreSQL tests: ${availability.reason}`);
  return availability.ok;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** Runs a PostgreSQL binary, as the `postgres` user when we are root. */
function runPg(binDir: string, tool: string, args: string[]): { status: number | null; output: string } {
  const bin = path.join(binDir, tool);
  const [command, argv] = isRoot() ? ['runuser', ['-u', 'postgres', '--', bin, ...args]] : [bin, args];
  const result = spawnSync(command, argv, { encoding: 'utf8', cwd: os.tmpdir() });
  return { status: result.status, output: `${result.stdout ?? ''}${result.stderr ?? ''}${result.error ? String(result.error) : ''}` };
}

const running = new Set<{ binDir: string; dataDir: string }>();
let exitHookInstalled = false;

/** A test process that dies or forgets to stop must not leave clusters running behind it. */
function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once('exit', () => {
    for (const cluster of running) runPg(cluster.binDir, 'pg_ctl', ['stop', '-D', cluster.dataDir, '-m', 'immediate', '-s']);
  });
}

export async function startPgServer(options: PgServerOptions = {}): Promise<PgServer> {
  const availability = pgAvailability();
  if (!availability.ok) throw new Error(availability.reason);
  const { binDir } = availability;

  const root = await mkdtemp(path.join(os.tmpdir(), 'chatroom-pg-'));
  if (isRoot()) {
    const owner = systemUser('postgres')!;
    chownSync(root, owner.uid, owner.gid);
  }
  const dataDir = path.join(root, 'data');
  const init = runPg(binDir, 'initdb', ['-D', dataDir, '-U', 'postgres', '--auth=trust', '--encoding=UTF8', '--locale=C.UTF-8', '--no-sync']);
  if (init.status !== 0) {
    await rm(root, { recursive: true, force: true });
    throw new Error(`initdb failed: ${init.output}`);
  }

  const settings: Record<string, string | number> = {
    listen_addresses: '127.0.0.1',
    unix_socket_directories: root,
    max_connections: 200,
    fsync: options.fsync ? 'on' : 'off',
    full_page_writes: options.fsync ? 'on' : 'off',
    ...options.settings,
  };
  const serverArgs = Object.entries(settings)
    .map(([k, v]) => `-c ${k}=${v}`)
    .join(' ');

  let port = 0;
  let lastError = '';
  for (let attempt = 0; attempt < 5; attempt++) {
    port = await freePort();
    const started = runPg(binDir, 'pg_ctl', ['start', '-w', '-t', '60', '-D', dataDir, '-l', path.join(root, 'server.log'), '-s', '-o', `-p ${port} ${serverArgs}`]);
    if (started.status === 0) {
      lastError = '';
      break;
    }
    lastError = started.output; // most likely the port was taken between probe and bind: retry
  }
  if (lastError) {
    await rm(root, { recursive: true, force: true });
    throw new Error(`pg_ctl start failed: ${lastError}`);
  }

  const cluster = { binDir, dataDir };
  running.add(cluster);
  installExitHook();
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  let databases = 0;

  return {
    url,
    port,
    dataDir,
    async createDatabase(name = `test_${++databases}_${process.pid}`) {
      const { default: pg } = await import('pg');
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        await client.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}`);
      } finally {
        await client.end();
      }
      return `postgres://postgres@127.0.0.1:${port}/${encodeURIComponent(name)}`;
    },
    async stop() {
      if (!running.delete(cluster)) return;
      runPg(binDir, 'pg_ctl', ['stop', '-D', dataDir, '-m', 'immediate', '-s']);
      await rm(root, { recursive: true, force: true });
    },
  };
}

/**
 * Starts a throwaway server before the enclosing suite's tests and stops it after them; the
 * returned function gives the running server (inside tests and hooks).
 */
export function usePgServer(options: PgServerOptions = {}): () => PgServer {
  let server: PgServer | undefined;
  beforeAll(async () => {
    server = await startPgServer(options);
  });
  afterAll(async () => {
    await server?.stop();
  });
  return () => {
    if (!server) throw new Error('the PostgreSQL test server is not running');
    return server;
  };
}

/**
 * One server for a whole file whose suites share it, and the file's cleanups (nodes, pools,
 * clients), run newest first before the server stops. Call at top level: nothing is registered
 * when the PostgreSQL tests are off (the suites then skip).
 */
export function usePgServerForFile(): { server: () => PgServer; cleanup: (close: () => Promise<unknown>) => void } {
  const closing: Array<() => Promise<unknown>> = [];
  let server: PgServer | undefined;
  if (pgTestsEnabled()) {
    beforeAll(async () => {
      server = await startPgServer();
    });
    afterAll(async () => {
      for (const close of closing.reverse()) await close().catch(() => undefined);
      await server?.stop();
    });
  }
  return {
    server: () => {
      if (!server) throw new Error('the PostgreSQL test server is not running');
      return server;
    },
    cleanup: (close) => void closing.push(close),
  };
}
