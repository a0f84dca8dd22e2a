// One snapshot file (agents.json, users.json, rooms.json): the in-memory map of its records and
// a coalescing, atomic writer.
//
// Ownership: records are owned by the store once put — the map keeps the caller's object, not a
// copy, and getX hands that same object out. Callers mutate a record they got and put it back;
// the file is serialised when a write *starts*, so it always carries the latest state of every
// record (including mutations not yet put, which the next write picks up anyway).
//
// Coalescing: at most one write of the file is in flight. Changes that arrive meanwhile mark the
// file dirty and wait for ONE follow-up write that covers all of them; each caller's promise
// settles with the write that includes its change.
import { readFile } from 'node:fs/promises';
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

export class SnapshotFile<T extends object> {
  readonly records = new Map<string, T>();
  private dirty = false;
  private writing = false;
  private scheduled = false;
  private waiters: Waiter[] = [];

  constructor(private readonly opts: SnapshotOptions<T>) {}

  get path(): string {
    return this.opts.path;
  }

  /** Loads the file; missing = empty. A corrupt file rejects and is left exactly as it is. */
  async load(): Promise<void> {
    let text: string;
    try {
      text = await readFile(this.opts.path, 'utf8');
    } catch (err) {
      if (isCode(err, 'ENOENT')) return;
      throw err;
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
      this.records.set(id, record as T);
    });
  }

  /** Inserts or replaces; resolves once a snapshot containing the change is durable. */
  put(record: T): Promise<void> {
    this.records.set(this.idOf(record), record);
    return this.requestWrite();
  }

  /** Inserts or replaces and schedules a write nobody waits for (failures are logged). */
  touch(record: T): void {
    this.records.set(this.idOf(record), record);
    this.dirty = true;
    this.schedule();
  }

  /** Resolves once everything changed so far is durable (used by close). */
  flush(): Promise<void> {
    if (!this.dirty && !this.writing) return Promise.resolve();
    return this.requestWrite();
  }

  private idOf(record: T): string {
    const id = this.opts.key(record);
    if (typeof id !== 'string' || id === '') throw new Error(`record without an id for ${this.opts.path}`);
    return id;
  }

  private requestWrite(): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.waiters.push({ resolve, reject });
      this.dirty = true;
      this.schedule();
    });
  }

  // Deferred to the check phase so a burst of puts from one tick (or one poll phase of many
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
      while (this.dirty) {
        const batch = this.waiters;
        this.waiters = [];
        this.dirty = false;
        try {
          await this.writeDurably(this.serialize());
          this.opts.stats.snapshotWrites++;
          settleAll(batch);
        } catch (err) {
          // The in-memory map keeps the change (callers are told it failed). The file stays
          // dirty: the next put or close retries it. Callers who arrived during the failed
          // write get their own attempt now; otherwise stop rather than spin on a bad disk.
          this.dirty = true;
          this.opts.logger.error({ err, file: this.opts.path }, 'snapshot write failed');
          settleAll(batch, err);
          if (this.waiters.length === 0) break;
        }
      }
    } finally {
      this.writing = false;
    }
  }

  // One record per line: diff- and grep-friendly, and still one JSON array.
  private serialize(): Buffer {
    const lines: string[] = [];
    for (const record of this.records.values()) lines.push(JSON.stringify(record));
    return Buffer.from(lines.length === 0 ? '[]\n' : `[\n${lines.join(',\n')}\n]\n`, 'utf8');
  }

  private async writeDurably(data: Buffer): Promise<void> {
    const { fsOps, path, dir } = this.opts;
    const tmp = `${path}.tmp`;
    const handle = await fsOps.open(tmp, 'w');
    try {
      await fsOps.write(handle, data);
      await fsOps.fsync(handle);
    } finally {
      await fsOps.close(handle);
    }
    await fsOps.rename(tmp, path);
    await fsOps.fsyncDir(dir);
    this.opts.stats.dirFsyncs++;
  }
}

function corrupt(path: string, why: string): Error {
  return new Error(
    `Snapshot ${path} is corrupt: ${why}. It was left untouched; repair it or restore it from a backup, then start again.`,
  );
}
