// server.lock: one process owns a DATA_DIR (SPEC §5). The file holds the owner's pid, start
// time and host name; it is created with O_EXCL so two starting servers cannot both win the
// create. A lock whose owner is gone (dead pid, or a pid reused by a process that started later)
// is taken over with a warning. The pid says nothing about a process on another host (a
// DATA_DIR on a shared volume): the owner touches the file every `HEARTBEAT_MS`, and a lock of
// another host counts as held while it was touched within `FOREIGN_STALE_MS`.
import { hostname } from 'node:os';
import { link, open, readFile, rename, stat, unlink, utimes } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { Logger } from '../logger.js';
import { isCode } from './fs-ops.js';
import { ownStartMs, processStartMs } from './process-start.js';

export const LOCK_FILE = 'server.lock';

interface LockContent {
  pid: number;
  process_started_at: string;
  locked_at: string;
  /** Absent in locks of versions before it: such a lock is judged by its pid. */
  hostname?: string;
}

// Locks held by this process: a second store on the same directory in the same process must be
// refused although the pid in the file is alive (it is ours).
const heldHere = new Set<string>();

// Two clocks (ours at lock time, /proc's now) may disagree by a little; a reused pid started
// far from the recorded time.
const START_TIME_TOLERANCE_MS = 5000;
// An unparsable lock younger than this may be one another process is writing right now.
const FRESH_LOCK_MS = 2000;
const MAX_ATTEMPTS = 10;
/** How often the owner touches its lock (so another host can tell it is alive). */
export const HEARTBEAT_MS = 10_000;
/** A lock of another host not touched for this long is a crashed server's. */
export const FOREIGN_STALE_MS = 30_000;

export class DataDirLock {
  private released = false;
  private readonly heartbeat: NodeJS.Timeout;

  private constructor(
    readonly path: string,
    logger: Logger,
  ) {
    this.heartbeat = setInterval(() => {
      const now = new Date();
      utimes(this.path, now, now).catch((err: unknown) => logger.warn({ err, file: this.path }, 'could not touch the lock file'));
    }, HEARTBEAT_MS);
    this.heartbeat.unref();
  }

  static async acquire(dataDir: string, logger: Logger): Promise<DataDirLock> {
    const path = resolve(dataDir, LOCK_FILE);
    if (heldHere.has(path)) throw inUse(dataDir, process.pid, path);
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      if (await tryCreate(path)) {
        heldHere.add(path);
        return new DataDirLock(path, logger);
      }
      let raw: string;
      try {
        raw = await readFile(path, 'utf8');
      } catch (err) {
        if (isCode(err, 'ENOENT')) continue; // released meanwhile: try again
        throw err;
      }
      const owner = parseLock(raw);
      if (!owner) {
        if (await isFresh(path)) {
          await sleep(100);
          continue;
        }
        logger.warn({ file: path }, 'lock file is unreadable and old; taking it over');
      } else if (owner.hostname !== undefined && owner.hostname !== hostname()) {
        if (await touchedWithin(path, FOREIGN_STALE_MS)) throw inUseElsewhere(dataDir, owner, path);
        logger.warn({ file: path, stale_pid: owner.pid, stale_host: owner.hostname }, 'taking over a lock another host stopped refreshing');
      } else if (await ownerAlive(owner)) {
        throw inUse(dataDir, owner.pid, path);
      } else {
        logger.warn({ file: path, stale_pid: owner.pid }, 'taking over a lock left by a process that is gone');
      }
      await removeStale(path, raw);
    }
    throw new Error(`Could not take the lock ${path}: other processes keep changing it`);
  }

  /** Removes the lock file. Idempotent. */
  async release(): Promise<void> {
    if (this.released) return;
    this.released = true;
    clearInterval(this.heartbeat);
    heldHere.delete(this.path);
    try {
      await unlink(this.path);
    } catch (err) {
      if (!isCode(err, 'ENOENT')) throw err;
    }
  }
}

function inUse(dataDir: string, pid: number, path: string): Error {
  return new Error(
    `DATA_DIR ${dataDir} is in use by process ${pid} (lock file ${path}). ` +
      'Stop that server or use another DATA_DIR.',
  );
}

function inUseElsewhere(dataDir: string, owner: LockContent, path: string): Error {
  return new Error(
    `DATA_DIR ${dataDir} is in use by process ${owner.pid} on host ${owner.hostname} (lock file ${path}, refreshed by its owner ` +
      `every ${HEARTBEAT_MS / 1000} s). Stop that server or use another DATA_DIR; a lock its host stopped refreshing is taken over after ${FOREIGN_STALE_MS / 1000} s.`,
  );
}

async function tryCreate(path: string): Promise<boolean> {
  let handle;
  try {
    handle = await open(path, 'wx');
  } catch (err) {
    if (isCode(err, 'EEXIST')) return false;
    throw err;
  }
  try {
    const content: LockContent = {
      pid: process.pid,
      process_started_at: new Date(await ownStartMs()).toISOString(),
      locked_at: new Date().toISOString(),
      hostname: hostname(),
    };
    await handle.writeFile(JSON.stringify(content) + '\n');
  } catch (err) {
    // Leave no empty lock behind to block the next start for FRESH_LOCK_MS.
    await handle.close().catch(() => undefined);
    await unlink(path).catch(() => undefined);
    throw err;
  }
  await handle.close();
  return true;
}

function parseLock(raw: string): LockContent | undefined {
  try {
    const v = JSON.parse(raw) as Partial<LockContent>;
    if (typeof v.pid === 'number' && Number.isInteger(v.pid) && v.pid > 0) return v as LockContent;
  } catch {
    // fall through: unreadable
  }
  return undefined;
}

async function ownerAlive(owner: LockContent): Promise<boolean> {
  // Not held in this process (checked before), so our own pid here is an earlier run's.
  if (owner.pid === process.pid) return false;
  try {
    process.kill(owner.pid, 0);
  } catch (err) {
    if (isCode(err, 'ESRCH')) return false;
    // EPERM: alive, owned by another user. Anything else: assume alive (the safe answer).
  }
  // A process killed with -9 whose parent has not reaped it yet still answers kill(pid, 0):
  // it is a zombie, holding nothing, and a restart right after the kill must not wait for it.
  if (await isZombie(owner.pid)) return false;
  const recorded = Date.parse(owner.process_started_at);
  const actual = await processStartMs(owner.pid);
  if (Number.isFinite(recorded) && actual !== undefined && Math.abs(actual - recorded) > START_TIME_TOLERANCE_MS) {
    return false; // the pid was reused by another process
  }
  return true;
}

/** Whether the process has exited but not been reaped (Linux /proc state Z, or X while it goes). */
async function isZombie(pid: number): Promise<boolean> {
  if (process.platform !== 'linux') return false;
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    // Field 2 (comm) may contain spaces and parentheses; the state follows the last ')'.
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return state === 'Z' || state === 'X';
  } catch {
    return false;
  }
}

function isFresh(path: string): Promise<boolean> {
  return touchedWithin(path, FRESH_LOCK_MS);
}

async function touchedWithin(path: string, ms: number): Promise<boolean> {
  try {
    return Date.now() - (await stat(path)).mtimeMs < ms;
  } catch {
    return false;
  }
}

// Moves the stale lock aside rather than unlinking it, then checks that what was moved is the
// stale content judged: if another process took the lock over in between, its fresh lock is put
// back (link fails if yet another lock appeared) and the next attempt reports it as in use.
async function removeStale(path: string, staleRaw: string): Promise<void> {
  const aside = join(resolve(path, '..'), `${LOCK_FILE}.stale-${process.pid}-${Date.now()}`);
  try {
    await rename(path, aside);
  } catch (err) {
    if (isCode(err, 'ENOENT')) return;
    throw err;
  }
  const moved = await readFile(aside, 'utf8').catch(() => staleRaw);
  if (moved !== staleRaw) {
    await link(aside, path).catch(() => undefined);
  }
  await unlink(aside).catch(() => undefined);
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
