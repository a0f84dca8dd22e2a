// Shared bench helpers: a server in its own process, a REST call, percentiles.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import http from 'node:http';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { PACKAGE_ROOT } from '../src/paths.js';

export interface BenchServer {
  url: string;
  child: ChildProcess;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  await new Promise((r) => server.close(r));
  return port;
}

/**
 * Runs the server as a separate process: dist/ when built (as in production), else tsx.
 * The server logs at its default level (info, one line per call) into /dev/null; readiness is
 * detected by polling /health on a port chosen here.
 */
export async function startBenchServer(env: Record<string, string>): Promise<BenchServer> {
  const dist = join(PACKAGE_ROOT, 'dist', 'src', 'cli.js');
  const args = existsSync(dist) ? [dist, 'start'] : ['--import', 'tsx', join(PACKAGE_ROOT, 'src', 'cli.ts'), 'start'];
  const port = await freePort();
  const child = spawn(process.execPath, args, {
    cwd: PACKAGE_ROOT,
    env: { ...process.env, LOG_LEVEL: 'info', ...env, PORT: String(port) },
    stdio: ['ignore', 'ignore', 'inherit'],
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

// node:http with a keep-alive agent: fetch's stream machinery costs the client (which shares
// the machine with the server) several times more CPU per request.
const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });

export function rest(url: string, tool: string, args: unknown, token?: string): Promise<any> {
  const body = JSON.stringify(args);
  return new Promise((resolve, reject) => {
    const req = http.request(
      `${url}/api/v1/tools/${tool}`,
      {
        method: 'POST',
        agent,
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
          ...(token ? { authorization: `Bearer ${token}` } : {}),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          try {
            resolve(JSON.parse(Buffer.concat(chunks).toString()));
          } catch (err) {
            reject(err);
          }
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

export function percentile(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return Math.round(sorted[index]! * 100) / 100;
}
