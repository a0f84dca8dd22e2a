// One room's append-only log file with group commit: appends queue their bytes; one write and
// one fsync cover everything queued, and appends that arrive during an fsync go into the next
// batch. The file descriptor (append mode) stays open between batches.
//
// Failure leaves no trace (SPEC §5): the batch's callers are rejected and the file is cut back
// to its size before the batch (ftruncate + fsync), so a torn or un-fsync'd line can never be
// loaded later. If even the cut fails, the log remembers it must be cut before its next write
// (`needsRepair`) and a restart cuts a torn tail anyway; the error is logged.
import type { FileHandle } from 'node:fs/promises';
import type { Logger } from '../logger.js';
import type { FsOps, IoStats } from './fs-ops.js';

export interface RoomLogOptions {
  path: string;
  dir: string;
  /** Bytes known durable in the file (0 and `exists: false` for a new log). */
  size: number;
  exists: boolean;
  fsOps: FsOps;
  stats: IoStats;
  logger: Logger;
  onOpened: (log: RoomLog) => void;
  onClosed: (log: RoomLog) => void;
}

/** Where an append landed in the file: [start, end) in bytes. */
export interface AppendedRange {
  start: number;
  end: number;
}

interface Pending {
  data: Buffer;
  resolve: (range: AppendedRange) => void;
  reject: (err: unknown) => void;
}

export class RoomLog {
  private handle: FileHandle | null = null;
  private queue: Pending[] = [];
  private durableSize: number;
  private exists: boolean;
  private needsRepair = false;
  private flushing = false;
  private scheduled = false;

  constructor(private readonly opts: RoomLogOptions) {
    this.durableSize = opts.size;
    this.exists = opts.exists;
  }

  /** Bytes durable in the file (where the next append lands). */
  get size(): number {
    return this.durableSize;
  }

  get path(): string {
    return this.opts.path;
  }

  /** Appends bytes (whole lines); resolves with where they landed after the fsync covering them. */
  append(data: Buffer): Promise<AppendedRange> {
    return new Promise<AppendedRange>((resolve, reject) => {
      this.queue.push({ data, resolve, reject });
      this.schedule();
    });
  }

  /**
   * Cuts the log back to `size` bytes, durably (a later step of the caller's commit failed).
   * Only called while no append of this log is queued or in flight. Never rejects: if the cut
   * fails it is retried before the next append, and logged.
   */
  async cutBack(size: number): Promise<void> {
    if (size > this.durableSize) throw new Error(`cannot cut ${this.opts.path} back to ${size} > ${this.durableSize}`);
    await this.cutTo(size, () => this.ensureOpen());
  }

  /** Sets the durable size and cuts the file to it; on failure, repair before the next append. */
  private async cutTo(size: number, handleOf: () => Promise<FileHandle>): Promise<void> {
    this.durableSize = size;
    try {
      const handle = await handleOf();
      await this.opts.fsOps.truncate(handle, size);
      await this.opts.fsOps.fsync(handle);
    } catch (err) {
      this.needsRepair = true;
      await this.closeHandle();
      this.opts.logger.error({ err, file: this.opts.path, size }, 'cutting a room log back failed; retried before its next write');
    }
  }

  /** No batch pending or in flight: the descriptor can be closed safely. */
  get idle(): boolean {
    return !this.flushing && !this.scheduled && this.queue.length === 0;
  }

  async closeHandle(): Promise<void> {
    const handle = this.handle;
    if (!handle) return;
    this.handle = null;
    this.opts.onClosed(this);
    try {
      await this.opts.fsOps.close(handle);
    } catch (err) {
      this.opts.logger.warn({ err, file: this.opts.path }, 'closing a room log failed');
    }
  }

  // Deferred so appends of the same tick / poll phase share the first batch.
  private schedule(): void {
    if (this.flushing || this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      void this.run();
    });
  }

  private async run(): Promise<void> {
    if (this.flushing) return;
    this.flushing = true;
    try {
      while (this.queue.length > 0) {
        const batch = this.queue;
        this.queue = [];
        const before = this.durableSize;
        try {
          const data = batch.length === 1 ? batch[0]!.data : Buffer.concat(batch.map((p) => p.data));
          await this.writeAndSync(data);
          let start = before;
          for (const p of batch) {
            p.resolve({ start, end: start + p.data.length });
            start += p.data.length;
          }
        } catch (err) {
          this.opts.logger.error({ err, file: this.opts.path }, 'room log write failed; cutting it back');
          await this.repairAfterFailure(before);
          for (const p of batch) p.reject(err);
        }
      }
    } finally {
      this.flushing = false;
    }
  }

  private async writeAndSync(data: Buffer): Promise<void> {
    const { fsOps, stats } = this.opts;
    const handle = await this.ensureOpen();
    if (data.length === 0) return;
    await fsOps.write(handle, data);
    stats.logWrites++;
    await fsOps.fsync(handle);
    stats.logFsyncs++;
    this.durableSize += data.length;
  }

  // A failed write may have left part of the batch in the file (a torn line, or whole lines that
  // were never fsync'd): cut it off, so neither a read nor a restart sees it.
  private async repairAfterFailure(size: number): Promise<void> {
    const handle = this.handle;
    if (!handle) {
      this.durableSize = size; // never opened: nothing was written
      return;
    }
    await this.cutTo(size, async () => handle);
  }

  private async ensureOpen(): Promise<FileHandle> {
    if (this.handle) return this.handle;
    const { fsOps, stats, path, dir } = this.opts;
    const handle = await fsOps.open(path, 'a');
    try {
      if (this.needsRepair) {
        await fsOps.truncate(handle, this.durableSize);
        await fsOps.fsync(handle);
        this.needsRepair = false;
      }
      // A new file is only durable once its directory entry is.
      if (!this.exists) {
        await fsOps.fsyncDir(dir);
        stats.dirFsyncs++;
        this.exists = true;
      }
    } catch (err) {
      await fsOps.close(handle).catch(() => undefined);
      throw err;
    }
    this.handle = handle;
    this.opts.onOpened(this);
    return handle;
  }
}
