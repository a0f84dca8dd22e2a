// The state of the file store (SPEC §5): the snapshot files agents.json, users.json and
// rooms.json, the state journal beside them, and how a change becomes durable (a journal line,
// or a rewrite of small snapshots) and when the journal is folded into the snapshots (a
// checkpoint about a second after the first change they lack; amortised once large). The
// records in memory are the snapshots' own; file-store.ts reads them and writes through `write`.
import { join } from 'node:path';
import type { Logger } from '../logger.js';
import type { AgentRecord, RoomRecord, UserRecord } from '../types.js';
import { CACHE_JSON_BELOW_BYTES } from './file-store-options.js';
import type { FsOps, IoStats } from './fs-ops.js';
import { roomJsonWriter } from './room-json.js';
import { SharedValues } from './shared-values.js';
import { SnapshotFile } from './snapshot.js';
import { JOURNAL_DIR, StateJournal, type LogMark, type StateEntry } from './state-journal.js';
import { DirectStateWriter } from './state-writer.js';

export interface StateFilesOptions {
  dataDir: string;
  fsOps: FsOps;
  stats: IoStats;
  logger: Logger;
  /** FileStoreOptions.compactBytes, compactEveryMs, syncSnapshotBytes, checkpointMs (defaults applied). */
  compactBytes: number;
  compactEveryMs: number;
  syncSnapshotBytes: number;
  checkpointMs: number;
  /** Whether the store is open (checkpoints are scheduled only then). */
  isOpen: () => boolean;
}

export class StateFiles {
  readonly agents: SnapshotFile<AgentRecord>;
  readonly users: SnapshotFile<UserRecord>;
  readonly rooms: SnapshotFile<RoomRecord>;
  readonly journal: StateJournal;
  private readonly logger: Logger;
  private readonly compactBytes: number;
  private readonly syncSnapshotBytes: number;
  private readonly checkpointMs: number;
  private compactTimer: NodeJS.Timeout | undefined;
  private checkpointTimer: NodeJS.Timeout | undefined;
  private compacting: Promise<void> | undefined;
  /** Snapshots with changes in the journal that their file does not have yet. */
  private readonly dirty = new Set<SnapshotFile<object>>();
  /** Rewrites small snapshots with each change (state-writer.ts). */
  private readonly direct: DirectStateWriter;
  /** Journal appends decided and not yet settled (they keep changes out of the direct writer). */
  private journalWrites = 0;
  /** Bytes of the snapshots at their last write (the compaction threshold follows it). */
  private snapshotBytes = 0;
  /** State writes in flight (close waits for them). */
  readonly pendingWrites = new Set<Promise<void>>();

  constructor(private readonly opts: StateFilesOptions) {
    const { dataDir, fsOps, stats, logger } = opts;
    this.logger = logger;
    this.compactBytes = opts.compactBytes;
    this.syncSnapshotBytes = opts.syncSnapshotBytes;
    this.checkpointMs = opts.checkpointMs;
    const snapshot = <T extends object>(
      file: string,
      key: (r: T) => unknown,
      toJson?: (r: T, previous: T | undefined) => string,
      holding?: { share: (r: T) => T; cacheJsonBelowBytes?: number },
    ) => new SnapshotFile<T>({ path: join(dataDir, file), dir: dataDir, key, fsOps, stats, logger, toJson, ...holding });
    // Participant records share their repeated values (shared-values.ts), and their JSON is
    // not kept once the files are past the direct-write size.
    const shared = new SharedValues();
    const cacheJsonBelowBytes = Math.max(this.syncSnapshotBytes, CACHE_JSON_BELOW_BYTES);
    const participants = { share: <T extends object>(r: T): T => shared.share(r), cacheJsonBelowBytes };
    this.agents = snapshot<AgentRecord>('agents.json', (a) => a.agent_id, undefined, participants);
    this.users = snapshot<UserRecord>('users.json', (u) => u.user_id, undefined, participants);
    this.rooms = snapshot<RoomRecord>('rooms.json', (r) => r.room_id, roomJsonWriter<RoomRecord>(), {
      share: (r) => shared.shareMembers(r),
      cacheJsonBelowBytes,
    });
    this.direct = new DirectStateWriter((entry) => this.fileOf(entry), this.logger);
    this.journal = new StateJournal({ dir: join(dataDir, JOURNAL_DIR), fsOps, stats, logger });
  }

  /** The snapshot files, in the order they are loaded. */
  get snapshots(): Array<SnapshotFile<object>> {
    return [this.agents, this.users, this.rooms] as Array<SnapshotFile<object>>;
  }

  /** Takes the snapshots' size anew (after a write of them). */
  measure(): void {
    this.snapshotBytes = this.agents.bytes + this.users.bytes + this.rooms.bytes;
  }

  /**
   * Once open: the periodic compaction, and the changes found in the journal at start go into
   * the snapshots: small ones before this resolves (after a crash the files are current again
   * before the first call), large ones soon, off the start path.
   */
  async started(): Promise<void> {
    if (this.opts.compactEveryMs > 0) {
      this.compactTimer = setInterval(() => {
        const worth = this.snapshotBytes <= this.compactBytes || this.journal.size * 8 >= this.snapshotBytes;
        if (this.journal.pending && worth) void this.compact();
      }, this.opts.compactEveryMs);
      this.compactTimer.unref();
    }
    if (this.journal.pending) {
      if (this.snapshotBytes < Math.max(this.syncSnapshotBytes, CACHE_JSON_BELOW_BYTES)) await this.compact();
      else void this.compact();
    }
  }

  /** Stops the timers (closing). */
  stopTimers(): void {
    if (this.compactTimer) clearInterval(this.compactTimer);
    clearTimeout(this.checkpointTimer);
  }

  /**
   * Closing, once no write is in flight: a snapshot a failed write left holding a refused change
   * is repaired, the snapshots are brought up to date (the journal stays if this fails).
   */
  async close(): Promise<void> {
    await this.direct.repair();
    await this.compacting;
    if (this.journal.pending) await this.compact();
    await this.journal.close();
  }

  /**
   * Folds the state journal into the snapshot files: starts a new journal file, waits for the
   * appends to the old ones, writes the snapshots that changed, then deletes the old files.
   * If a write fails the old journal files stay (they are replayed at start) and the next
   * compaction tries again. Resolves when done; never rejects (failures are logged).
   */
  compact(): Promise<void> {
    this.compacting ??= this.doCompact().finally(() => {
      this.compacting = undefined;
      // Changes journaled while this compaction ran went to the new journal file.
      if (this.journal.size > 0) this.scheduleCheckpoint();
    });
    return this.compacting;
  }

  /**
   * A checkpoint `checkpointMs` after the first change the snapshots lack (SPEC §5: they trail
   * the journal by at most about a second). Large snapshots follow the amortised rule instead.
   */
  scheduleCheckpoint(): void {
    if (this.checkpointTimer || this.checkpointMs <= 0 || !this.opts.isOpen()) return;
    if (this.snapshotBytes > this.compactBytes) return;
    this.checkpointTimer = setTimeout(() => {
      this.checkpointTimer = undefined;
      if (this.opts.isOpen() && this.journal.pending) void this.compact();
    }, this.checkpointMs);
    this.checkpointTimer.unref();
  }

  private async doCompact(): Promise<void> {
    await this.direct.idle();
    const started = Date.now();
    const gens = await this.journal.rotate();
    const files = [...this.dirty];
    this.dirty.clear();
    try {
      for (const file of files) await file.write();
      if (!(await this.journal.release(gens))) this.logger.info('a backup is running; compacted journal files are kept until it ends');
      this.measure();
      this.logger.debug({ files: files.map((f) => f.path), journals: gens.length, ms: Date.now() - started }, 'state journal compacted');
    } catch (err) {
      for (const file of files) this.dirty.add(file);
      this.logger.error({ err }, 'compacting the state journal failed; it is kept and replayed at start');
    }
  }

  fileOf(entry: StateEntry): SnapshotFile<object> {
    return (entry.t === 'room' ? this.rooms : entry.t === 'agent' ? this.agents : this.users) as SnapshotFile<object>;
  }

  /** The snapshot file of a journaled change, marked for the next compaction. */
  snapshotOf(entry: StateEntry): SnapshotFile<object> {
    const file = this.fileOf(entry);
    this.dirty.add(file);
    return file;
  }

  /**
   * Makes state changes durable once `gate` (a write they depend on) resolved, then runs `apply`
   * with the records in memory, then resolves. Two ways, chosen per change:
   * - small snapshots (below `syncSnapshotBytes`), nothing in the journal: the snapshot files
   *   are rewritten with the change (state-writer.ts), so agents.json, users.json and rooms.json
   *   read by a person or a tool show every acknowledged change;
   * - otherwise a journal line (the cost of the change is its own size), the snapshots follow by
   *   compaction. Once the journal holds anything, every change goes there until a compaction
   *   has folded it in: a journal line must never be older than the snapshot beside it.
   */
  write(entries: StateEntry[], apply: () => void, gate: Promise<unknown> = Promise.resolve(), after?: LogMark): Promise<void> {
    const direct =
      this.snapshotBytes < this.syncSnapshotBytes && this.journalWrites === 0 && !this.journal.pending && !this.compacting;
    const write = direct ? this.directWrite(entries, apply, gate) : this.journalWrite(entries, apply, gate, after);
    this.pendingWrites.add(write);
    const forget = (): void => void this.pendingWrites.delete(write);
    write.then(forget, forget);
    return write;
  }

  private async directWrite(entries: StateEntry[], apply: () => void, gate: Promise<unknown>): Promise<void> {
    await this.direct.write(entries, gate, apply);
    this.measure();
  }

  /**
   * A journal line. Behind `gate` (the log append of a room commit) when the commit appended no
   * new seq; beside it otherwise, marked with the commit's last message (`after`): the two
   * writes then cost one fsync wait, not two in a row, and a line whose messages never became
   * durable (a kill between the two, or a failed log append) is voided at start, because the
   * log does not hold its mark (`settleMarked`).
   */
  private async journalWrite(entries: StateEntry[], apply: () => void, gate: Promise<unknown>, after?: LogMark): Promise<void> {
    this.journalWrites++;
    // Awaited only after the journal line: until then a failure of the log append must not count as unhandled.
    if (after) gate.catch(() => undefined);
    try {
      if (!after) await gate;
      // A direct rewrite in flight may carry an older version of these records.
      await this.direct.idle();
      const lines = after ? entries.map((e) => (e.t === 'room' ? { ...e, after } : e)) : entries;
      await this.journal.append(
        lines,
        () => {
          for (const e of entries) this.snapshotOf(e).set(e.r);
          apply();
        },
        after ? gate : undefined,
      );
    } finally {
      this.journalWrites--;
    }
    if (this.journal.size > Math.max(this.compactBytes, this.snapshotBytes)) void this.compact();
    else this.scheduleCheckpoint();
  }
}
