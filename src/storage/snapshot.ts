// One snapshot file (agents.json, users.json, rooms.json): the records in memory, as durable,
// and the atomic writer (temp file, fsync, rename, directory fsync).
//
// Changes reach `records` only once durable: while the state is small, by a rewrite of the file
// itself that carries them (state-writer.ts); past that, by a line in the state journal
// (state-journal.ts), with the file rewritten later by a compaction. The writer serialises the
// records for a few milliseconds at a time with event-loop turns in between, so a compaction of
// 10,000 rooms does not stall requests. Records are never mutated in place (the store copies on the way
// in and out), so a record serialised between two turns is a complete version of it; a change
// made during a compaction is also in the newer journal file, which is replayed over this
// snapshot.
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
  /**
   * A record's JSON, given the durable version it replaces (if any); JSON.stringify by default.
   * Lets rooms.json reuse the unchanged part of a room (room-json.ts).
   */
  toJson?: (record: T, previous: T | undefined) => string;
  /**
   * Called on each record before it is held (loaded, replayed or set); may make it share
   * repeated values with other records in place (shared-values.ts: participants).
   */
  share?: (record: T) => T;
  /**
   * Keep each record's JSON (to serialise only what changed) only while the file is smaller
   * than this; default: always. Participants past the direct-write size: 100,000 agents' JSON
   * is ~40 MB held for a compaction that comes rarely and costs ~0.2 s without it.
   */
  cacheJsonBelowBytes?: number;
}

/**
 * Time spent serialising records in one event-loop turn while a snapshot is written (checked
 * every 32 records): 500 rooms of 11 members took 10–20 ms a turn, a p99 of every request
 * served meanwhile (issue 14). And the file is written in parts of about this size, not
 * concatenated into one buffer (80 MB: one more synchronous copy).
 */
const TURN_MS = 3;
const PART_BYTES = 1 << 20;

export class SnapshotFile<T extends object> {
  private readonly current = new Map<string, T>();
  /** Serialised form of each record object (see serialize). */
  private readonly json = new WeakMap<T, string>();
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
    this.current.set(this.idOf(record), this.opts.share ? this.opts.share(record) : record);
  }

  /**
   * Loads the file; resolves false if it is missing (empty; `write` creates it). A corrupt file
   * rejects and is left exactly as it is.
   */
  async load(): Promise<boolean> {
    let bytes: Buffer;
    try {
      bytes = await readFile(this.opts.path);
    } catch (err) {
      if (!isCode(err, 'ENOENT')) throw err;
      return false;
    }
    // The size decides how a change is made durable (FileStore.stateWrite): left at 0, the
    // first change after a start on 80 MB of snapshots rewrote them all before answering.
    this.bytes = bytes.length;
    let data: unknown;
    try {
      data = JSON.parse(bytes.toString('utf8'));
    } catch (err) {
      throw corrupt(this.opts.path, `not valid JSON (${(err as Error).message})`);
    }
    if (!Array.isArray(data)) throw corrupt(this.opts.path, 'not a JSON array');
    data.forEach((record: unknown, i) => {
      const id = typeof record === 'object' && record !== null ? this.opts.key(record as T) : undefined;
      if (typeof id !== 'string' || id === '') throw corrupt(this.opts.path, `entry ${i} has no id`);
      this.current.set(id, this.opts.share ? this.opts.share(record as T) : (record as T));
    });
    return true;
  }

  /**
   * Writes the records durably: temp file, fsync, rename, fsync directory. A failure before the
   * rename leaves the old file (the temp file is removed); one after it leaves a new file that
   * is as new as the old one or newer, and the journal still holds every change either way.
   */
  async write(): Promise<void> {
    await (await this.prepare()).publish();
  }

  /**
   * The first half of a write: the records, with `changes` put over them (by id), in the temp
   * file and fsync'd, not yet visible under the real name. `publish` renames it over the file
   * and fsyncs the directory; `discard` removes it. Memory is not touched: the caller `set`s
   * the changed records once `publish` resolved. One prepared write per file at a time.
   */
  async prepare(changes: readonly T[] = []): Promise<PreparedSnapshot> {
    const { fsOps, path, dir } = this.opts;
    const tmp = `${path}.tmp`;
    const discard = (): Promise<void> => rm(tmp, { force: true }).then(
      () => undefined,
      () => undefined,
    );
    let bytes: number;
    try {
      const handle = await fsOps.open(tmp, 'w');
      try {
        const parts = await this.serialize(changes);
        bytes = 0;
        for (const part of parts) {
          await fsOps.write(handle, part);
          bytes += part.length;
        }
        await fsOps.fsync(handle);
      } finally {
        await fsOps.close(handle);
      }
    } catch (err) {
      await discard();
      throw err;
    }
    return {
      discard,
      publish: async () => {
        try {
          await fsOps.rename(tmp, path);
        } catch (err) {
          await discard();
          throw err;
        }
        await fsOps.fsyncDir(dir);
        this.bytes = bytes;
        this.opts.stats.dirFsyncs++;
        this.opts.stats.snapshotWrites++;
      },
    };
  }

  // One record per line: diff- and grep-friendly, and still one JSON array. Records are never
  // mutated in place, so each one's JSON is cached by identity: a write serialises only the
  // records that changed since the last one.
  private async serialize(changes: readonly T[]): Promise<Buffer[]> {
    let records: T[] = [...this.current.values()];
    if (changes.length > 0) {
      const merged = new Map(this.current);
      for (const record of changes) merged.set(this.idOf(record), record);
      records = [...merged.values()];
    }
    if (records.length === 0) return [Buffer.from('[]\n', 'utf8')];
    const parts: Buffer[] = [];
    let lines: string[] = [];
    let size = 0;
    const flush = (end = ''): void => {
      if (lines.length > 0) parts.push(Buffer.from((parts.length > 0 ? ',\n' : '[\n') + lines.join(',\n') + end, 'utf8'));
      else if (end !== '') parts.push(Buffer.from(end, 'utf8'));
      lines = [];
      size = 0;
    };
    let turnStarted = performance.now();
    for (let i = 0; i < records.length; i++) {
      if ((i & 31) === 31 && performance.now() - turnStarted > TURN_MS) {
        await new Promise((r) => setImmediate(r));
        turnStarted = performance.now();
      }
      const json = this.jsonOf(records[i]!);
      lines.push(json);
      size += json.length;
      if (size >= PART_BYTES) flush();
    }
    flush('\n]\n'); // a small file is one write
    return parts;
  }

  private jsonOf(record: T): string {
    let json = this.json.get(record);
    if (json === undefined) {
      const { toJson } = this.opts;
      json = toJson ? toJson(record, this.current.get(this.idOf(record))) : JSON.stringify(record);
      if (this.bytes < (this.opts.cacheJsonBelowBytes ?? Infinity)) this.json.set(record, json);
    }
    return json;
  }

  private idOf(record: T): string {
    const id = this.opts.key(record);
    if (typeof id !== 'string' || id === '') throw new Error(`record without an id for ${this.opts.path}`);
    return id;
  }
}

/** A snapshot written to its temp file and fsync'd, waiting to be renamed into place. */
export interface PreparedSnapshot {
  publish(): Promise<void>;
  discard(): Promise<void>;
}

function corrupt(path: string, why: string): Error {
  return new Error(
    `Snapshot ${path} is corrupt: ${why}. It was left untouched; repair it or restore it from a backup, then start again.`,
  );
}
