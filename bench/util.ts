// Shared bench helpers: a server in its own process, a REST call, percentiles.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, openSync, readFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Pool } from 'undici';
import { PACKAGE_ROOT } from '../src/paths.js';

export interface BenchServer {
  url: string;
  child: ChildProcess;
  stop(): Promise<void>;
}

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  await new Promise((r) => server.close(r));
  return port;
}

/** Which server a bench runs. */
export interface ServerBuild {
  /** A checkout with a built server (`DIR/dist/src/cli.js`); default: this checkout. */
  dir?: string;
  /** Run the checkout's TypeScript through tsx instead of dist/. */
  fromSource?: boolean;
}

/**
 * Runs the server as a separate process: dist/ when built (as in production), else tsx.
 * The server logs at its default level (info, one line per call) into /dev/null; readiness is
 * detected by polling /health on a port chosen here. A checkout named in `build.dir` must be
 * built (or `fromSource` asked for): comparing builds that ran in different ways measured the
 * loader (BENCHMARKS.md, issue 40). BENCH_SERVER_NODE_ARGS: node flags of the server, e.g.
 * "--cpu-prof --cpu-prof-dir=/tmp/prof".
 */
export async function startBenchServer(env: Record<string, string>, build: ServerBuild = {}): Promise<BenchServer> {
  const dir = build.dir ?? PACKAGE_ROOT;
  const dist = join(dir, 'dist', 'src', 'cli.js');
  const source = ['--import', 'tsx', join(dir, 'src', 'cli.ts')];
  let entry: string[];
  if (build.fromSource) entry = source;
  else if (existsSync(dist)) entry = [dist];
  else if (build.dir) throw new Error(`${dist} missing: build that checkout first (npm run build)`);
  else {
    // Said out loud: a checkout without dist/ runs slower through tsx.
    console.error(`bench: ${dist} missing, running the server from its TypeScript through tsx (slower; npm run build first)`);
    entry = source;
  }
  const nodeArgs = process.env.BENCH_SERVER_NODE_ARGS?.split(' ').filter(Boolean) ?? [];
  const port = await freePort();
  const child = spawn(process.execPath, [...nodeArgs, ...entry, 'start'], {
    cwd: dir,
    // One client address opens thousands of sockets and registers many participants: the
    // per-address abuse limits (SPEC §10) are lifted for benchmarks.
    env: { ...process.env, LOG_LEVEL: 'info', MAX_CONNECTIONS_PER_ADDRESS: '1000000', RATE_LIMIT_REGISTER_PER_HOUR: '0', ...env, PORT: String(port) },
    stdio: ['ignore', process.env.BENCH_SERVER_STDOUT ? openSync(process.env.BENCH_SERVER_STDOUT, 'w') : 'ignore', 'inherit'],
  });
  let exited = false;
  child.once('exit', () => (exited = true));
  const url = `http://127.0.0.1:${port}`;
  for (;;) {
    if (exited) throw new Error('bench server exited during start-up');
    const ok = await fetch(`${url}/api/v1/health`).then((r) => r.ok, () => false);
    if (ok) break;
    await new Promise((r) => setTimeout(r, 25));
  }
  return {
    url,
    child,
    stop: () =>
      new Promise<void>((done) => {
        if (exited) return done();
        child.once('exit', () => done());
        child.kill('SIGTERM');
      }),
  };
}

// undici's request API with one connection pool per server: the bench client shares the
// machine with the server, and fetch's stream machinery would cost it several times more CPU.
const pools = new Map<string, Pool>();

export async function rest(url: string, tool: string, args: unknown, token?: string): Promise<any> {
  const origin = new URL(url).origin;
  let pool = pools.get(origin);
  if (!pool) {
    pool = new Pool(origin, { connections: 128 });
    pools.set(origin, pool);
  }
  const { body } = await pool.request({
    path: `/api/v1/tools/${tool}`,
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(args),
  });
  return body.json();
}

export function percentile(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return Math.round(sorted[index]! * 100) / 100;
}

/** A process's CPU time (user + system) in ms so far, from /proc (Linux). */
export function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10; // utime, stime in 1/100 s
}

/**
 * Closed-loop senders for `seconds`: each calls `send(n)` again as soon as the answer is back.
 * Acknowledged calls, calls per second, and the server's CPU (process `pid`) per call in µs.
 */
export async function closedLoop(pid: number, seconds: number, senders: ((n: number) => Promise<any>)[]): Promise<{ acked: number; perSecond: number; cpuUs: number }> {
  let acked = 0;
  const end = performance.now() + seconds * 1000;
  const cpu0 = cpuMs(pid);
  const t0 = performance.now();
  await Promise.all(
    senders.map(async (send) => {
      for (let n = 0; performance.now() < end; n++) {
        const answer = await send(n);
        if (!answer.ok) throw new Error(JSON.stringify(answer.error));
        acked++;
      }
    }),
  );
  const cpu = cpuMs(pid) - cpu0;
  return { acked, perSecond: Math.round(acked / ((performance.now() - t0) / 1000)), cpuUs: Math.round((cpu * 1000) / acked) };
}
