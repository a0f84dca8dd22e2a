// The state journal: every change of a room, agent or user record is one JSON line appended to
// `journal/state-{gen}.jsonl` (group commit: one write + one fsync for all changes that arrive
// together, from any room). The cost of a change is the size of the changed record, not the
// number of records. The snapshots (agents.json, users.json, rooms.json) are compacted from
// memory in the background (compaction.ts in file-store terms: `compact`), after which the
// journal files they cover are deleted.
//
// Line format: {"t":"room"|"agent"|"user","r":{…the whole record…}}, and on a room line written
// beside its messages' log append `"after":{"seq":…,"id":…}` (see LogMark). A line holds the complete
// record, never a diff, so replaying any journal file over a snapshot that already contains its
// changes is harmless: the last line of each id in the file is the record as it was when the
// file was closed, and later files carry everything after that.
//
// Failure: the batch's callers are rejected and the file is cut back (room-log.ts), and `apply`
// of a rejected append never runs — no trace in memory.
import { createReadStream } from 'node:fs';
import { readdir, stat, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../logger.js';
import type { AgentRecord, RoomRecord, UserRecord } from '../types.js';
import { truncateDurably, type FsOps, type IoStats } from './fs-ops.js';
import { RoomLog } from './room-log.js';

/**
 * The last message a room commit appended to the room's log. A room line that carries it was
 * written beside that append, not after it (one fsync wait instead of two in a row): it counts
 * only if the log holds this message at this seq (file-store.ts checks it at start).
 */
export interface LogMark {
  seq: number;
  id: string;
}

export type StateEntry = { t: 'room'; r: RoomRecord; after?: LogMark } | { t: 'agent'; r: AgentRecord } | { t: 'user'; r: UserRecord };

export const JOURNAL_DIR = 'journal';
/**
 * Written into the journal directory by `backup` while it copies: compacted journal files are
 * kept until it is gone (or older than HOLD_MAX_AGE_MS, a backup that died), see src/backup.ts.
 */
export const BACKUP_HOLD = 'backup.hold';
const HOLD_MAX_AGE_MS = 60 * 60 * 1000;
const FILE = /^state-(\d{6,})\.jsonl$/;
const fileName = (gen: number): string => `state-${String(gen).padStart(6, '0')}.jsonl`;

export interface StateJournalOptions {
  dir: string;
  fsOps: FsOps;
  stats: IoStats;
  logger: Logger;
}

export class StateJournal {
  private gen = 0;
  private log: RoomLog | undefined;
  /** Appends in flight per journal file (compaction waits for the old file's to settle). */
  private readonly inflight = new Map<RoomLog, number>();
  private drained = new Map<RoomLog, () => void>();
  /** Journal files older than the current one, not yet covered by a compacted snapshot. */
  private older: number[] = [];

  constructor(private readonly opts: StateJournalOptions) {}

  /** Bytes in the current journal file (what a compaction would fold in, besides older files). */
  get size(): number {
    return this.log?.size ?? 0;
  }

  /** True when some journal file holds changes the snapshots do not have yet. */
  get pending(): boolean {
    return this.size > 0 || this.older.length > 0;
  }

  /**
   * Replays every journal file in order through `apply` (start-up). A torn last line is cut off
   * with a warning; any other bad line stops start-up naming the file and line.
   * Afterwards new changes go to a fresh file.
   */
  async replay(apply: (entry: StateEntry) => void): Promise<number> {
    const gens = (await readdir(this.opts.dir))
      .map((f) => FILE.exec(f)?.[1])
      .filter((g): g is string => g !== undefined)
      .map(Number)
      .sort((a, b) => a - b);
    let entries = 0;
    for (const gen of gens) {
      entries += await this.replayFile(join(this.opts.dir, fileName(gen)), apply);
    }
    this.older = gens;
    this.gen = (gens.at(-1) ?? 0) + 1;
    this.log = this.newLog(this.gen);
    return entries;
  }

  private async replayFile(path: string, apply: (entry: StateEntry) => void): Promise<number> {
    let lineNo = 0;
    let offset = 0;
    let entries = 0;
    let bad: { lineNo: number; offset: number; reason: string } | undefined;
    let partial = Buffer.alloc(0);
    const handleLine = (bytes: Buffer, at: number): void => {
      lineNo++;
      if (bad) throw corrupt(path, bad.lineNo, bad.reason); // a bad line with more after it
      const text = bytes.toString('utf8').trim();
      if (text === '') return;
      const entry = parseEntry(text);
      if (typeof entry === 'string') bad = { lineNo, offset: at, reason: entry };
      else {
        apply(entry);
        entries++;
      }
    };
    for await (const chunk of createReadStream(path) as AsyncIterable<Buffer>) {
      let data = partial.length > 0 ? Buffer.concat([partial, chunk]) : chunk;
      let start = 0;
      for (let nl = data.indexOf(0x0a); nl >= 0; nl = data.indexOf(0x0a, start)) {
        handleLine(data.subarray(start, nl), offset + start);
        start = nl + 1;
      }
      offset += start;
      partial = Buffer.from(data.subarray(start));
      data = partial;
    }
    let cutAt: number | undefined;
    let reason: string | undefined;
    if (bad) {
      cutAt = bad.offset;
      reason = `last line ${bad.lineNo} is unreadable (${bad.reason})`;
    } else if (partial.length > 0) {
      cutAt = offset;
      reason = 'last line has no trailing newline';
    }
    if (cutAt !== undefined) {
      // Any file may end torn: a crash during a compaction leaves the previous file's last
      // append unfinished while a newer file exists. Nothing torn was ever acknowledged.
      await truncateDurably(path, cutAt);
      this.opts.logger.warn({ file: path, reason, kept_bytes: cutAt }, 'state journal had a torn last line; cut it off');
    }
    return entries;
  }

  /**
   * Appends entries; once they are durable (and `alongside`, a write they were appended beside,
   * has resolved), runs `apply` (synchronously, before the promise resolves and before a
   * compaction can read memory), then resolves. Rejects without running `apply` if either write
   * fails; a line written beside a failed write stays, and its `after` mark voids it at start.
   */
  async append(entries: readonly StateEntry[], apply: () => void, alongside?: Promise<unknown>): Promise<void> {
    const log = this.log;
    if (!log) throw new Error('state journal is not open');
    let text = '';
    for (const e of entries) text += JSON.stringify(e) + '\n';
    this.inflight.set(log, (this.inflight.get(log) ?? 0) + 1);
    try {
      await log.append(Buffer.from(text, 'utf8'));
      await alongside;
      apply();
    } finally {
      const left = this.inflight.get(log)! - 1;
      if (left > 0) this.inflight.set(log, left);
      else {
        this.inflight.delete(log);
        this.drained.get(log)?.();
      }
    }
  }

  /**
   * Starts a new journal file and resolves once every append to the previous ones has settled
   * (and applied): from then on memory holds everything those files hold. Returns the
   * generations a snapshot written now covers, for `release`.
   */
  async rotate(): Promise<number[]> {
    const old = this.log;
    const covered = [...this.older, this.gen];
    this.gen++;
    this.log = this.newLog(this.gen);
    this.older = covered;
    if (old) {
      if (this.inflight.has(old)) await new Promise<void>((resolve) => this.drained.set(old, resolve));
      this.drained.delete(old);
      await old.closeHandle();
    }
    return covered;
  }

  /**
   * Deletes journal files whose changes are now in durable snapshots, unless a backup holds
   * them (they are then released by a later compaction). Resolves false if held.
   */
  async release(gens: readonly number[]): Promise<boolean> {
    const held = await stat(join(this.opts.dir, BACKUP_HOLD)).then(
      (st) => Date.now() - st.mtimeMs < HOLD_MAX_AGE_MS,
      () => false,
    );
    if (held) return false;
    for (const gen of gens) {
      await unlink(join(this.opts.dir, fileName(gen))).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== 'ENOENT') throw err;
      });
    }
    await this.opts.fsOps.fsyncDir(this.opts.dir);
    this.older = this.older.filter((g) => !gens.includes(g));
    return true;
  }

  async close(): Promise<void> {
    await this.log?.closeHandle();
  }

  private newLog(gen: number): RoomLog {
    return new RoomLog({
      path: join(this.opts.dir, fileName(gen)),
      dir: this.opts.dir,
      size: 0,
      exists: false,
      fsOps: this.opts.fsOps,
      stats: this.opts.stats,
      logger: this.opts.logger,
      onOpened: () => undefined,
      onClosed: () => undefined,
    });
  }
}

function parseEntry(text: string): StateEntry | string {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    return (err as Error).message;
  }
  if (typeof value !== 'object' || value === null) return 'not a JSON object';
  const e = value as { t?: unknown; r?: unknown };
  if (e.t !== 'room' && e.t !== 'agent' && e.t !== 'user') return 'no valid "t"';
  if (typeof e.r !== 'object' || e.r === null) return 'no record "r"';
  const id = e.t === 'room' ? (e.r as RoomRecord).room_id : e.t === 'agent' ? (e.r as AgentRecord).agent_id : (e.r as UserRecord).user_id;
  if (typeof id !== 'string' || id === '') return 'record without an id';
  const after = (value as { after?: Partial<LogMark> }).after;
  if (after !== undefined && (e.t !== 'room' || typeof after?.seq !== 'number' || typeof after.id !== 'string')) return 'bad "after" mark';
  return e as StateEntry;
}

function corrupt(path: string, lineNo: number, reason: string): Error {
  return new Error(
    `State journal ${path} is corrupt at line ${lineNo} (${reason}); only a torn last line is repaired automatically. ` +
      'Repair or restore the file, then start again.',
  );
}
