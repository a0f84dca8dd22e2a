// One room's append-only log file with group commit: appends buffer their lines; one write and
// one fsync cover everything buffered, and appends that arrive during an fsync go into the next
// batch. The file descriptor (append mode) stays open between batches.
//
// Failure: the batch's callers are rejected, but its bytes are kept and written again ahead of
// the next batch, after cutting the file back to its last durable size (a failed write may have
// left part of a line, which would corrupt the middle of the log). The in-memory index already
// holds those messages, so this makes the disk catch up with memory instead of leaving a seq
// gap; a client that retries with its client_msg_id then finds its message stored.
import type { FileHandle } from 'node:fs/promises';
import type { Logger } from '../logger.js';
import { settleAll, type FsOps, type IoStats, type Waiter } from './fs-ops.js';

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

export class RoomLog {
  private handle: FileHandle | null = null;
  private chunks: string[] = [];
  private waiters: Waiter[] = [];
  private retry: Buffer | null = null;
  private durableSize: number;
  private exists: boolean;
  private needsRepair = false;
  private flushing = false;
  private scheduled = false;

  constructor(private readonly opts: RoomLogOptions) {
    this.durableSize = opts.size;
    this.exists = opts.exists;
  }

  /** Appends serialised lines (each ending in \n); resolves after the fsync covering them. */
  append(lines: string): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (lines !== '') this.chunks.push(lines);
      this.waiters.push({ resolve, reject });
      this.schedule();
    });
  }

  /** Resolves when everything appended so far, and any bytes of an earlier failed batch, is durable. */
  flush(): Promise<void> {
    if (!this.flushing && this.chunks.length === 0 && this.retry === null) return Promise.resolve();
    return this.append('');
  }

  /** No batch pending or in flight: the descriptor can be closed safely. */
  get idle(): boolean {
    return !this.flushing && !this.scheduled && this.waiters.length === 0;
  }

  get isOpen(): boolean {
    return this.handle !== null;
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
      while (this.waiters.length > 0) {
        const batch = this.waiters;
        const text = this.chunks.join('');
        this.waiters = [];
        this.chunks = [];
        const fresh = Buffer.from(text, 'utf8');
        const data = this.retry ? Buffer.concat([this.retry, fresh]) : fresh;
        try {
          if (data.length > 0) await this.writeAndSync(data);
          this.retry = null;
          settleAll(batch);
        } catch (err) {
          this.retry = data;
          this.needsRepair = true;
          this.opts.logger.error({ err, file: this.opts.path }, 'room log write failed');
          await this.closeHandle();
          settleAll(batch, err);
          // Retry when a new caller comes, not in a loop against a failing disk.
          if (this.waiters.length === 0) break;
        }
      }
    } finally {
      this.flushing = false;
    }
  }

  private async writeAndSync(data: Buffer): Promise<void> {
    const { fsOps, stats } = this.opts;
    const handle = await this.ensureOpen();
    await fsOps.write(handle, data);
    stats.logWrites++;
    await fsOps.fsync(handle);
    stats.logFsyncs++;
    this.durableSize += data.length;
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
