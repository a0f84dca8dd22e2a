// Runs the real server as a child process (for SIGKILL and restart tests), and small helpers
// for tests that talk to one over REST.
import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { PACKAGE_ROOT } from '../../src/paths.js';

export interface ServerProcess {
  child: ChildProcess;
  url: string;
  port: number;
  /** Everything the process printed so far. */
  output(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

// Transpiled by test/global-setup.ts before the suite runs.
/** The CLI as transpiled for the tests (`.test-dist`, built by the global setup). */
export const CLI = path.join(PACKAGE_ROOT, '.test-dist', 'src', 'cli.js');

/** Starts the transpiled CLI (`.test-dist/src/cli.js start`) and resolves once it logs the port it bound. */
export function spawnServer(env: Record<string, string>, args: string[] = ['start']): Promise<ServerProcess> {
  const child = spawn(process.execPath, [CLI, ...args], {
    cwd: PACKAGE_ROOT,
    // Suites fire hundreds of requests at once from 127.0.0.1: the per-address limits of
    // SPEC §10 are lifted (test/integration/abuse.test.ts tests them).
    env: { ...process.env, PORT: '0', LOG_LEVEL: 'info', MAX_CONNECTIONS_PER_ADDRESS: '100000', RATE_LIMIT_REGISTER_PER_HOUR: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  return new Promise((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      out += chunk.toString();
      const match = /"url":"(http:\/\/[^"]+:(\d+))"/.exec(out);
      if (match) {
        child.stdout!.off('data', onData);
        child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
        resolve({ child, url: match[1]!, port: Number(match[2]), output: () => out, exited });
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', (c: Buffer) => (out += c.toString()));
    void exited.then(({ code, signal }) => reject(new Error(`server exited early (${code ?? signal}): ${out}`)));
  });
}

/** Runs the CLI to completion and returns its exit code and output (for start-up failures). */
export function runCli(env: Record<string, string>, args: string[] = ['start'], timeoutMs = 20_000): Promise<{ code: number | null; output: string }> {
  const child = spawn(process.execPath, [CLI, ...args], {
    cwd: PACKAGE_ROOT,
    env: { ...process.env, PORT: '0', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (out += c.toString()));
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, output: out });
    });
  });
}

export async function restCall<T = any>(url: string, tool: string, args: unknown, token?: string): Promise<{ status: number; body: any }> {
  const res = await fetch(`${url}/api/v1/tools/${tool}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(args),
  });
  return { status: res.status, body: (await res.json()) as T };
}

/** A tool call over REST that must succeed: its data, or an error naming the tool and the answer. */
export async function restOk(url: string, tool: string, args: unknown, token?: string): Promise<any> {
  const answer = await restCall(url, tool, args, token);
  if (!answer.body.ok) throw new Error(`${tool}: ${JSON.stringify(answer.body)}`);
  return answer.body.data;
}

/** A person registered on a running server (`url`) and a room they created: both as the server answered. */
export async function userWithRoom(url: string, userName: string, roomName: string): Promise<{ user: any; room: any }> {
  const user = (await restCall(url, 'register_user', { name: userName })).body.data;
  const room = (await restCall(url, 'create_room', { room_name: roomName }, user.token)).body.data.room;
  return { user, room };
}

/** A port nobody listens on. */
export async function closedPort(): Promise<number> {
  const probe = net.createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as net.AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}
