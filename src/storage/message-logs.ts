// All room logs under room_messages/: one RoomLog per room, created lazily, with a cap on open
// descriptors (a server with thousands of rooms must not run out of fds; idle logs are closed
// least-recently-used first and reopened on their next append).
import { join } from 'node:path';
import type { Logger } from '../logger.js';
import type { FsOps, IoStats } from './fs-ops.js';
import { RoomLog, type AppendedRange } from './room-log.js';

export interface MessageLogsOptions {
  dir: string;
  fsOps: FsOps;
  stats: IoStats;
  logger: Logger;
  maxOpen: number;
}

export class MessageLogs {
  private readonly logs = new Map<string, RoomLog>();
  /** Sizes of logs found at open, until their RoomLog is created. */
  private readonly existing = new Map<string, number>();
  /** Open logs, least recently used first (Set keeps insertion order). */
  private readonly lru = new Set<RoomLog>();

  constructor(private readonly opts: MessageLogsOptions) {}

  static fileName(roomId: string): string {
    return `${roomId}.jsonl`;
  }

  /** Records a log file found at open, with its size after recovery. */
  registerExisting(roomId: string, size: number): void {
    this.existing.set(roomId, size);
  }

  append(roomId: string, data: Buffer): Promise<AppendedRange> {
    const log = this.get(roomId);
    if (this.lru.delete(log)) this.lru.add(log);
    return log.append(data);
  }

  /** Durable size of a room's log (0 if it has none). */
  sizeOf(roomId: string): number {
    return this.logs.get(roomId)?.size ?? this.existing.get(roomId) ?? 0;
  }

  /** Cuts a room's log back to `size` bytes (see RoomLog.cutBack). */
  cutBack(roomId: string, size: number): Promise<void> {
    return this.get(roomId).cutBack(size);
  }

  get openCount(): number {
    return this.lru.size;
  }

  async closeAll(): Promise<void> {
    await Promise.all([...this.logs.values()].map((log) => log.closeHandle()));
  }

  get(roomId: string): RoomLog {
    let log = this.logs.get(roomId);
    if (log) return log;
    const size = this.existing.get(roomId);
    this.existing.delete(roomId);
    log = new RoomLog({
      path: join(this.opts.dir, MessageLogs.fileName(roomId)),
      dir: this.opts.dir,
      size: size ?? 0,
      exists: size !== undefined,
      fsOps: this.opts.fsOps,
      stats: this.opts.stats,
      logger: this.opts.logger,
      onOpened: (l) => this.opened(l),
      onClosed: (l) => this.lru.delete(l),
    });
    this.logs.set(roomId, log);
    return log;
  }

  private opened(log: RoomLog): void {
    this.lru.add(log);
    if (this.lru.size <= this.opts.maxOpen) return;
    for (const candidate of this.lru) {
      if (this.lru.size <= this.opts.maxOpen) break;
      if (candidate !== log && candidate.idle) void candidate.closeHandle();
    }
  }
}
