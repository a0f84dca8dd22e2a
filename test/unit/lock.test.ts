// The DATA_DIR lock and a killed owner that is not reaped yet (a zombie): a restart right after
// `kill -9` must take the lock over, not report the dead process as "in use".
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/logger.js';
import { DataDirLock } from '../../src/storage/lock.js';
import { processStartMs } from '../../src/storage/process-start.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function procState(pid: number): Promise<string | undefined> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => undefined);
  return stat?.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
}

describe('server.lock and a killed owner', () => {
  it('takes over a lock whose owner was killed with -9 and is not reaped yet', async () => {
    const dir = await mkdtemp(join(os.tmpdir(), 'chatroom-lock-'));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    // The shell starts the "server" in the background, prints its pid, then becomes a process
    // that never reaps children: once killed, the server stays a zombie.
    const parent = spawn('sh', ['-c', 'sleep 300 & echo $!; exec sleep 300'], { stdio: ['ignore', 'pipe', 'ignore'] });
    cleanups.push(() => void parent.kill('SIGKILL'));
    const pid = Number(await new Promise<string>((resolve) => parent.stdout!.once('data', (d: Buffer) => resolve(String(d).trim()))));
    const started = await processStartMs(pid);
    await writeFile(
      join(dir, 'server.lock'),
      JSON.stringify({ pid, process_started_at: new Date(started ?? Date.now()).toISOString(), locked_at: new Date().toISOString(), hostname: os.hostname() }),
    );
    // Alive: the lock is refused.
    await expect(DataDirLock.acquire(dir, silentLogger)).rejects.toThrow(`in use by process ${pid}`);
    process.kill(pid, 'SIGKILL');
    await expect.poll(() => procState(pid)).toBe('Z');
    const lock = await DataDirLock.acquire(dir, silentLogger);
    cleanups.push(() => lock.release());
    expect(JSON.parse(await readFile(join(dir, 'server.lock'), 'utf8')).pid).toBe(process.pid);
  });
});
