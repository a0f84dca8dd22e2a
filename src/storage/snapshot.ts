// One snapshot file (agents.json, users.json, rooms.json): the records in memory, as durable
// (snapshot + state journal), and the atomic writer that compacts them into the file.
//
// Changes reach `records` only after the state journal made them durable (state-journal.ts);
// the file itself is rewritten in the background by a compaction, never per change. The write
// is atomic (temp file, fsync, rename, directory fsync) and serialises the records a few
// hundred at a time with event-loop turns in between, so a compaction of 10,000 rooms does not
// stall requests. Records are never mutated in place (the store copies on the way in and out),
// so a record serialised between two turns is a complete version of it; a change made during
// the write is also in the newer journal file, which is replayed over this snapshot.
import { readFile, rm } from 'node:fs/promises';
import type { Logger } from '../logger.js';
import { isCode, type FsOps, type IoStats } from './fs-ops.js';

export interface SnapshotOptions<T> {
  path: string;
  /** Directory fsync'd after the rename, so the new directory entry is durable. */
  dir: string;
  key: (record: T) => unknown;
  fsOps: FsOps;
  stats: IoStats;
  logger: Logger;
}

/** Records serialised per event-loop turn while a snapshot is written. */
const RECORDS_PER_TURN = 500;

export class SnapshotFile<T extends object> {
  private readonly current = new Map<string, T>();
  /** Size of the file as last loaded or written. */
  bytes = 0;

  constructor(private readonly opts: SnapshotOptions<T>) {}

  get path(): string {
    return this.opts.path;
  }

  /** The durable records, by id. Read-only for callers. */
  get records(): ReadonlyMap<string, T> {
    return this.current;
  }

  /** Puts a durable record in memory (after its journal line is durable, or at replay). */
  set(record: T): void {
    const id = this.opts.key(record);
    if (typeof id !== 'string' || id === '') throw new Error(`record without an id for ${this.opts.path}`);
    this.current.set(id, record);
  }

  /**
   * Loads the file; resolves false if it is missing (empty; `write` creates it). A corrupt file
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

  /**
   * Writes the records durably: temp file, fsync, rename, fsync directory. A failure before the
   * rename leaves the old file (the temp file is removed); one after it leaves a new file that
   * is as new as the old one or newer, and the journal still holds every change either way.
   */
  async write(): Promise<void> {
    const { fsOps, path, dir } = this.opts;
    const tmp = `${path}.tmp`;
    try {
      const handle = await fsOps.open(tmp, 'w');
      try {
        const data = await this.serialize();
        this.bytes = data.length;
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
    await fsOps.fsyncDir(dir);
    this.opts.stats.dirFsyncs++;
    this.opts.stats.snapshotWrites++;
  }

  // One record per line: diff- and grep-friendly, and still one JSON array.
  private async serialize(): Promise<Buffer> {
    const records = [...this.current.values()];
    if (records.length === 0) return Buffer.from('[]\n', 'utf8');
    const parts: Buffer[] = [Buffer.from('[\n', 'utf8')];
    for (let i = 0; i < records.length; i += RECORDS_PER_TURN) {
      if (i > 0) await new Promise((r) => setImmediate(r));
      const lines: string[] = [];
      for (const record of records.slice(i, i + RECORDS_PER_TURN)) lines.push(JSON.stringify(record));
      parts.push(Buffer.from((i > 0 ? ',\n' : '') + lines.join(',\n'), 'utf8'));
    }
    parts.push(Buffer.from('\n]\n', 'utf8'));
    return Buffer.concat(parts);
  }
}

function corrupt(path: string, why: string): Error {
  return new Error(
    `Snapshot ${path} is corrupt: ${why}. It was left untouched; repair it or restore it from a backup, then start again.`,
  );
}
