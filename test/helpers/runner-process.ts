// The agent runners (`agent-chatroom cli-agent`, `acp-agent`) as child processes of the compiled
// CLI (.test-dist), as a user starts them against a test server, with the stand-in programs'
// call logs and the room's messages to check them by.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, expect } from 'vitest';
import { CLI } from './process.js';
import type { TestServer } from './server.js';

export interface RunnerProcess {
  child: ChildProcess;
  /** Everything it wrote to stderr so far (its log). */
  output(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/**
 * A starter of `command` runners against `shared.server` (state in `shared.work`/state); every
 * runner still running at the end of a test is stopped with `stopSignal` and awaited.
 */
export function runnerStarter(
  shared: { readonly server: TestServer; readonly work: string },
  command: 'cli-agent' | 'acp-agent',
  stopSignal: NodeJS.Signals,
): (args: string[], env: Record<string, string>) => RunnerProcess {
  const running: RunnerProcess[] = [];
  afterEach(async () => {
    for (const runner of running.splice(0)) {
      if (runner.child.exitCode === null && runner.child.signalCode === null) runner.child.kill(stopSignal);
      await runner.exited;
    }
  });
  return (args, env) => {
    const child = spawn(process.execPath, [CLI, command, '--url', shared.server.url, ...args], {
      env: { ...process.env, CHATROOM_STATE_DIR: path.join(shared.work, 'state'), ...env },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let out = '';
    child.stderr!.on('data', (c: Buffer) => (out += c.toString()));
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
    const runner = { child, output: () => out, exited };
    running.push(runner);
    return runner;
  };
}

/** Resolves once the runner says it waits for turns. */
export async function runnerReady(runner: RunnerProcess): Promise<void> {
  await expect.poll(() => runner.output(), { timeout: 20_000, interval: 50 }).toMatch(/ready: waiting for turns/);
}

/** The room's messages (the first 200). */
export async function roomMessages(server: TestServer, roomId: string, token: string): Promise<Array<Record<string, any>>> {
  return (await server.ok('get_messages', { room_id: roomId, limit: 200 }, token)).messages;
}

/** A stand-in's call log: one JSON object a line (none yet: empty). */
export async function loggedCalls(file: string): Promise<Array<Record<string, any>>> {
  const text = await readFile(file, 'utf8').catch(() => '');
  return text
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
}

/** Whether a process runs (a zombie, dead but not yet reaped by its new parent, does not). */
export function alive(pid: number): boolean {
  try {
    const stat = execFileSync('ps', ['-o', 'stat=', '-p', String(pid)], { encoding: 'utf8' }).trim();
    return stat !== '' && !stat.startsWith('Z');
  } catch {
    return false; // ps exits 1 when there is no such process
  }
}
