// The file operations on the store's write paths, behind one small interface so tests can
// make a write, fsync or rename fail (FileStoreOptions.fsOps) — an unwritable directory is
// no test when the suite runs as root.
import { mkdir, open, rename, stat, type FileHandle } from 'node:fs/promises';
import { dirname } from 'node:path';

export interface FsOps {
  open(path: string, flags: string): Promise<FileHandle>;
  /** Writes the whole buffer, looping over short writes. */
  write(handle: FileHandle, data: Buffer): Promise<void>;
  fsync(handle: FileHandle): Promise<void>;
  truncate(handle: FileHandle, length: number): Promise<void>;
  close(handle: FileHandle): Promise<void>;
  rename(from: string, to: string): Promise<void>;
  /** Makes a directory's entries (files created or renamed in it) durable. */
  fsyncDir(dir: string): Promise<void>;
  /** One positional read; resolves the bytes read (search streams logs through it). */
  read(handle: FileHandle, buffer: Buffer, offset: number, length: number, position: number): Promise<number>;
}

export const defaultFsOps: FsOps = {
  open: (path, flags) => open(path, flags),
  async write(handle, data) {
    let offset = 0;
    while (offset < data.length) {
      const { bytesWritten } = await handle.write(data, offset, data.length - offset);
      offset += bytesWritten;
    }
  },
  fsync: (handle) => handle.sync(),
  truncate: (handle, length) => handle.truncate(length),
  close: (handle) => handle.close(),
  rename: (from, to) => rename(from, to),
  async fsyncDir(dir) {
    let handle: FileHandle | undefined;
    try {
      handle = await open(dir, 'r');
      await handle.sync();
    } catch (err) {
      // Windows cannot open or fsync a directory; there a rename is as durable as it gets.
      if (process.platform === 'win32' && isCode(err, 'EISDIR', 'EPERM', 'EACCES')) return;
      throw err;
    } finally {
      await handle?.close();
    }
  },
  read: async (handle, buffer, offset, length, position) => (await handle.read(buffer, offset, length, position)).bytesRead,
};

/** Makes a file's contents or a directory's entries durable (for code off the store's write paths). */
export function fsyncPath(target: string): Promise<void> {
  return defaultFsOps.fsyncDir(target);
}

export function resolveFsOps(overrides: Partial<FsOps> | undefined): FsOps {
  return { ...defaultFsOps, ...overrides };
}

/** I/O counters, so tests and metrics can see that group commit and coalescing work. */
export interface IoStats {
  snapshotWrites: number;
  logWrites: number;
  logFsyncs: number;
  dirFsyncs: number;
}

export function newIoStats(): IoStats {
  return { snapshotWrites: 0, logWrites: 0, logFsyncs: 0, dirFsyncs: 0 };
}

export function isCode(err: unknown, ...codes: string[]): boolean {
  return typeof err === 'object' && err !== null && codes.includes((err as NodeJS.ErrnoException).code ?? '');
}

/** A promise's settle functions, kept until the write that covers the caller's change ends. */
export interface Waiter {
  resolve: () => void;
  reject: (err: unknown) => void;
}

export function settleAll(waiters: Waiter[], err?: unknown): void {
  for (const w of waiters) {
    if (err === undefined) w.resolve();
    else w.reject(err);
  }
}

/**
 * Start-up recovery: cuts a file to `length` bytes and fsyncs it (a torn last line of a room log
 * or of the state journal). Not through FsOps: nothing else runs yet, and a failure stops open.
 */
export async function truncateDurably(path: string, length: number): Promise<void> {
  const handle = await open(path, 'r+');
  try {
    await handle.truncate(length);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * `mkdir -p`, one level at a time. Node's own `recursive: true` loops forever where a parent
 * exists but refuses children with ENOENT (`/proc/…`, some FUSE mounts): here a second ENOENT
 * after the parent was made is the error it is.
 */
export async function makeDirectory(dir: string): Promise<void> {
  try {
    await mkdir(dir, { mode: 0o700 });
    return;
  } catch (err) {
    if (isCode(err, 'EEXIST') && (await stat(dir)).isDirectory()) return;
    if (!isCode(err, 'ENOENT') || dirname(dir) === dir) throw err;
  }
  await makeDirectory(dirname(dir));
  await mkdir(dir, { mode: 0o700 }).catch(async (err: unknown) => {
    if (!(isCode(err, 'EEXIST') && (await stat(dir)).isDirectory())) throw err;
  });
}
