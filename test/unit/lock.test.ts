// The DATA_DIR lock and a killed owner that is not reaped yet (a zombie): a restart right after
// `kill -9` must take the lock over, not report the dead process as "in use". A lock of another
// host (a shared volume) is judged by its heartbeat, not by a pid that means nothing here.
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, stat, utimes, writeFile } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { silentLogger } from '../../src/logger.js';
import { DataDirLock, FOREIGN_STALE_MS, HEARTBEAT_MS } from '../../src/storage/lock.js';
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

describe('server.lock of another host', () => {
  async function lockOfOtherHost(pid: number): Promise<{ dir: string; file: string }> {
    const dir = await mkdtemp(join(os.tmpdir(), 'chatroom-lock-'));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    const file = join(dir, 'server.lock');
    const at = new Date().toISOString();
    await writeFile(file, JSON.stringify({ pid, process_started_at: at, locked_at: at, hostname: `not-${os.hostname()}` }));
    return { dir, file };
  }

  it('is held while its owner keeps touching it, whatever its pid means here; taken over once it stops', async () => {
    // pid 1 is alive here and our own pid is "an earlier run" of ours: neither decides for another host.
    for (const pid of [1, process.pid, 2 ** 22 + 7]) {
      const { dir, file } = await lockOfOtherHost(pid);
      await expect(DataDirLock.acquire(dir, silentLogger)).rejects.toThrow(`in use by process ${pid} on host not-${os.hostname()}`);
      const old = new Date(Date.now() - FOREIGN_STALE_MS - 1000);
      await utimes(file, old, old);
      const lock = await DataDirLock.acquire(dir, silentLogger);
      cleanups.push(() => lock.release());
      expect(JSON.parse(await readFile(file, 'utf8'))).toMatchObject({ pid: process.pid, hostname: os.hostname() });
    }
  });

  it('is touched by its owner every HEARTBEAT_MS while held, and no more once released', async () => {
    const dir = await mkdtemp(join(os.tmpdir(), 'chatroom-lock-'));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    // Date is faked too: the heartbeat's touch writes the fake clock's time, known exactly.
    const start = Date.parse('2026-11-23T00:00:00.000Z');
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'Date'], now: start });
    cleanups.push(() => void vi.useRealTimers());
    const lock = await DataDirLock.acquire(dir, silentLogger);
    const file = join(dir, 'server.lock');
    const old = new Date(start - 60_000);
    await utimes(file, old, old);
    vi.advanceTimersByTime(HEARTBEAT_MS);
    await expect.poll(async () => (await stat(file)).mtimeMs).toBe(start + HEARTBEAT_MS);
    await lock.release();
    expect(vi.getTimerCount()).toBe(0);
  });
});
