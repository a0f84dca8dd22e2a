// One snapshot file (agents.json, users.json, rooms.json): the records as durable on disk, and a
// coalescing, atomic, all-or-nothing writer.
//
// `records` holds only what is durable: a change is applied to it after the snapshot that
// carries it has been written, fsync'd, renamed into place and its directory fsync'd. Writers
// call `commit(changes)`; at most one file write is in flight, changes that arrive meanwhile
// wait for ONE follow-up write that covers all of them (coalescing), and each batch succeeds or
// fails as a whole. A failed batch changes nothing in `records`, and the file is put back to
// what `records` holds if the failure came after the rename (a failed directory fsync), so a
// fresh open loads exactly what is served (SPEC §5: a failed call leaves no trace).
//
// Records are the store's own: callers hand in copies and get copies out (file-store.ts).
import { readFile, rm } from 'node:fs/promises';
import type { Logger } from '../logger.js';
import { isCode, settleAll, type FsOps, type IoStats, type Waiter } from './fs-ops.js';

export interface SnapshotOptions<T> {
  path: string;
  /** Directory fsync'd after the rename, so the new directory entry is durable. */
  dir: string;
  key: (record: T) => unknown;
  fsOps: FsOps;
  stats: IoStats;
  logger: Logger;
}

/** A change: the new record under its id, or undefined to remove the id. */
export type SnapshotChange<T> = readonly [id: string, record: T | undefined];

export class SnapshotFile<T extends object> {
  private current = new Map<string, T>();
  private queue: { changes: readonly SnapshotChange<T>[]; waiter: Waiter }[] = [];
  private writing = false;
  private scheduled = false;
  /** The file may not hold `current` (a rollback failed): the next write must happen anyway. */
  private diverged = false;

  constructor(private readonly opts: SnapshotOptions<T>) {}

  get path(): string {
    return this.opts.path;
  }

  /** The durable records, by id. Read-only for callers. */
  get records(): ReadonlyMap<string, T> {
    return this.current;
  }

  /**
   * Loads the file; resolves false if it is missing (empty; `create` writes it). A corrupt file
   * rejects and is left exactly as it is.
   */
  async load(): Promise<boolean> {
    let text: string;
    try {
      text = await readFile(this.opts.path, 'utf8');
    } catch (err) {
      if (!isCode(err, 'ENOENT')) throw err;
      return false;
    }
    let data: unknown;
    try {
      data = JSON.parse(text);
    } catch (err) {
      throw corrupt(this.opts.path, `not valid JSON (${(err as Error).message})`);
    }
    if (!Array.isArray(data)) throw corrupt(this.opts.path, 'not a JSON array');
    data.forEach((record: unknown, i) => {
      const id = typeof record === 'object' && record !== null ? this.opts.key(record as T) : undefined;
      if (typeof id !== 'string' || id === '') throw corrupt(this.opts.path, `entry ${i} has no id`);
      this.current.set(id, record as T);
    });
    return true;
  }

  /** Writes the (empty) file durably: SPEC §5, the layout is complete from the first start. */
  create(): Promise<void> {
    return this.writeDurably(this.serialize(this.current));
  }

  /**
   * Writes the changes (in order, with everything else durable so far) and applies them to
   * `records` once the file is durable. Rejects, applying nothing, if the write fails.
   */
  commit(changes: readonly SnapshotChange<T>[]): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ changes, waiter: { resolve, reject } });
      this.schedule();
    });
  }

  /** Resolves once no write is queued or in flight (close). */
  async flush(): Promise<void> {
    // A commit queued behind everything else settles after all of it.
    if (this.writing || this.scheduled || this.queue.length > 0 || this.diverged) await this.commit([]);
  }

  // Deferred to the check phase so a burst of commits from one tick (or one poll phase of many
  // requests) shares the first write too, not only the follow-up.
  private schedule(): void {
    if (this.writing || this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      void this.run();
    });
  }

  private async run(): Promise<void> {
    if (this.writing) return;
    this.writing = true;
    try {
      while (this.queue.length > 0) {
        const batch = this.queue;
        this.queue = [];
        const next = new Map(this.current);
        for (const { changes } of batch) {
          for (const [id, record] of changes) {
            if (record === undefined) next.delete(id);
            else next.set(id, record);
          }
        }
        const waiters = batch.map((b) => b.waiter);
        try {
          await this.writeDurably(this.serialize(next));
          this.opts.stats.snapshotWrites++;
          this.current = next;
          this.diverged = false;
          settleAll(waiters);
        } catch (err) {
          this.opts.logger.error({ err, file: this.opts.path }, 'snapshot write failed; nothing of it is kept');
          settleAll(waiters, err);
        }
      }
    } finally {
      this.writing = false;
    }
  }

  // One record per line: diff- and grep-friendly, and still one JSON array.
  private serialize(records: ReadonlyMap<string, T>): Buffer {
    const lines: string[] = [];
    for (const record of records.values()) lines.push(JSON.stringify(record));
    return Buffer.from(lines.length === 0 ? '[]\n' : `[\n${lines.join(',\n')}\n]\n`, 'utf8');
  }

  /**
   * temp file, fsync, rename, fsync directory. If it fails before the rename, the old file is
   * untouched (the temp file is removed); if the directory fsync fails after the rename, the
   * file is put back to `current` before rejecting.
   */
  private async writeDurably(data: Buffer): Promise<void> {
    const { fsOps, path, dir } = this.opts;
    const tmp = `${path}.tmp`;
    try {
      const handle = await fsOps.open(tmp, 'w');
      try {
        await fsOps.write(handle, data);
        await fsOps.fsync(handle);
      } finally {
        await fsOps.close(handle);
      }
      await fsOps.rename(tmp, path);
    } catch (err) {
      await rm(tmp, { force: true }).catch(() => undefined);
      throw err;
    }
    try {
      await fsOps.fsyncDir(dir);
      this.opts.stats.dirFsyncs++;
    } catch (err) {
      await this.rollBack();
      throw err;
    }
  }

  // The new file is in place but its rename may not be durable, and the caller is told the write
  // failed: put the durable records back, so that what a restart loads is what is served.
  private async rollBack(): Promise<void> {
    const { fsOps, path } = this.opts;
    const tmp = `${path}.tmp`;
    try {
      const handle = await fsOps.open(tmp, 'w');
      try {
        await fsOps.write(handle, this.serialize(this.current));
        await fsOps.fsync(handle).catch(() => undefined); // best effort: the rename is what counts
      } finally {
        await fsOps.close(handle);
      }
      await fsOps.rename(tmp, path);
      await fsOps.fsyncDir(this.opts.dir).catch(() => undefined);
    } catch (err) {
      this.diverged = true;
      await rm(tmp, { force: true }).catch(() => undefined);
      this.opts.logger.error(
        { err, file: path },
        'snapshot could not be put back after a failed write; the next write of this file rewrites it',
      );
    }
  }
}

function corrupt(path: string, why: string): Error {
  return new Error(
    `Snapshot ${path} is corrupt: ${why}. It was left untouched; repair it or restore it from a backup, then start again.`,
  );
}
