// The embedded file store (SPEC §5): JSON snapshots for agents, users and rooms, an append-only
// JSONL log per room, all served from memory and made durable before any promise resolves.
//
// Layout under dataDir:
//   agents.json users.json rooms.json   snapshots, replaced atomically (snapshot.ts)
//   room_messages/{room_id}.jsonl       append-only logs with group commit (room-log.ts)
//   uploads/ exports/                   created here, written by others
//   server.lock                         one process per directory (lock.ts)
//
// Records put into the store are owned by it from then on (see snapshot.ts); appended messages
// are immutable (see message-index.ts).
//
// Start-up is lazy (1M messages would take ~8 s to parse): open scans each log — recovery, ids,
// last seq — without parsing it (log-reader.ts); a room is parsed on first need, synchronously,
// and after open resolves a background warm-up parses the rest one room per event-loop turn.
// A corrupt line found only then is logged (file and line) and makes that room's reads and
// appends throw; other rooms are unaffected (see message-index.ts).
//
// After a failed write the in-memory state already reflects the change while the caller was
// told it failed: reads may show it until a later write makes it durable (snapshots rewrite
// everything; logs rewrite the failed bytes ahead of the next batch) or, if none succeeds, until
// a restart drops it. This is accepted: nothing acknowledged is ever lost, which is the contract.
import { mkdir, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../logger.js';
import type { AgentRecord, Message, RoomRecord, UserRecord } from '../types.js';
import { newIoStats, resolveFsOps, type FsOps, type IoStats } from './fs-ops.js';
import { DataDirLock } from './lock.js';
import { parseRoomLog, scanRoomLog } from './log-reader.js';
import { MessageIndex } from './message-index.js';
import { MessageLogs } from './message-logs.js';
import { forEachConcurrent } from './pool.js';
import { SnapshotFile } from './snapshot.js';
import type { Store } from './store.js';

export interface FileStoreOptions {
  dataDir: string;
  logger: Logger;
  /** Replaces file operations on the write paths; tests use it to inject failures. */
  fsOps?: Partial<FsOps>;
  /** Room log descriptors kept open at once; idle ones beyond are closed LRU. Default 256. */
  maxOpenLogs?: number;
  /** Room logs read ahead at open while others are scanned. Default 4. */
  loadConcurrency?: number;
  /** Parse all room logs in the background after open (default true; tests turn it off). */
  warmUp?: boolean;
}

export interface FileStoreStats extends IoStats {
  openLogFiles: number;
  messages: number;
  /** Room logs not parsed yet (lazy start-up; 0 once the warm-up is done). */
  unparsedLogs: number;
}

export const ROOM_MESSAGES_DIR = 'room_messages';
const LOG_SUFFIX = '.jsonl';
// Room ids become file names: no separators, no leading dot, nothing a shell or Windows chokes on.
const SAFE_ROOM_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$/;

type State = 'new' | 'opening' | 'open' | 'closing' | 'closed';

export class FileStore implements Store {
  readonly dataDir: string;
  private readonly logger: Logger;
  private readonly fsOps: FsOps;
  private readonly io = newIoStats();
  private readonly agents: SnapshotFile<AgentRecord>;
  private readonly users: SnapshotFile<UserRecord>;
  private readonly rooms: SnapshotFile<RoomRecord>;
  private readonly index = new MessageIndex((roomId) => this.parseLog(roomId));
  private readonly logs: MessageLogs;
  private readonly loadConcurrency: number;
  private readonly warmUpEnabled: boolean;
  /** Recovered sizes of the logs not parsed yet. */
  private readonly unparsed = new Map<string, number>();
  private warmUpTimer: NodeJS.Immediate | undefined;
  private warmUpDone: Promise<void> | undefined;
  private stopWarmUp: () => void = () => undefined;
  private state: State = 'new';
  private lock: DataDirLock | undefined;
  private openPromise: Promise<void> | undefined;
  private closePromise: Promise<void> | undefined;

  constructor(options: FileStoreOptions) {
    this.dataDir = options.dataDir;
    this.logger = options.logger;
    this.fsOps = resolveFsOps(options.fsOps);
    this.loadConcurrency = options.loadConcurrency ?? 4;
    this.warmUpEnabled = options.warmUp ?? true;
    const snapshot = <T extends object>(file: string, key: (r: T) => unknown) =>
      new SnapshotFile<T>({
        path: join(this.dataDir, file),
        dir: this.dataDir,
        key,
        fsOps: this.fsOps,
        stats: this.io,
        logger: this.logger,
      });
    this.agents = snapshot<AgentRecord>('agents.json', (a) => a.agent_id);
    this.users = snapshot<UserRecord>('users.json', (u) => u.user_id);
    this.rooms = snapshot<RoomRecord>('rooms.json', (r) => r.room_id);
    this.logs = new MessageLogs({
      dir: join(this.dataDir, ROOM_MESSAGES_DIR),
      fsOps: this.fsOps,
      stats: this.io,
      logger: this.logger,
      maxOpen: options.maxOpenLogs ?? 256,
    });
  }

  open(): Promise<void> {
    if (this.state !== 'new') return Promise.reject(new Error(`FileStore.open: store is already ${this.state}`));
    this.state = 'opening';
    this.openPromise = this.doOpen().then(
      () => {
        this.state = 'open';
        if (this.warmUpEnabled) this.warmUpDone = this.startWarmUp();
      },
      async (err: unknown) => {
        this.state = 'closed';
        await this.lock?.release().catch(() => undefined);
        throw err;
      },
    );
    return this.openPromise;
  }

  private async doOpen(): Promise<void> {
    const started = Date.now();
    await mkdir(this.dataDir, { recursive: true });
    this.lock = await DataDirLock.acquire(this.dataDir, this.logger);
    const logDir = join(this.dataDir, ROOM_MESSAGES_DIR);
    for (const dir of [logDir, join(this.dataDir, 'uploads'), join(this.dataDir, 'exports')]) {
      await mkdir(dir, { recursive: true });
    }
    // A .tmp is a snapshot write that never got renamed: the real file is still the valid one.
    for (const snap of [this.agents, this.users, this.rooms]) await rm(`${snap.path}.tmp`, { force: true });
    await Promise.all([this.agents.load(), this.users.load(), this.rooms.load()]);

    const files = (await readdir(logDir)).filter((f) => f.endsWith(LOG_SUFFIX));
    await forEachConcurrent(files, this.loadConcurrency, async (file) => {
      const roomId = file.slice(0, -LOG_SUFFIX.length);
      const { ids, lastSeq, size } = await scanRoomLog(join(logDir, file), roomId, this.logger);
      this.unparsed.set(roomId, size);
      this.index.addLazyRoom(roomId, ids, lastSeq);
      this.logs.registerExisting(roomId, size);
    });
    this.logger.info(
      {
        data_dir: this.dataDir,
        agents: this.agents.records.size,
        users: this.users.records.size,
        rooms: this.rooms.records.size,
        room_logs: files.length,
        messages: this.index.count,
        ms: Date.now() - started,
      },
      'storage opened',
    );
  }

  close(): Promise<void> {
    this.closePromise ??= this.doClose();
    return this.closePromise;
  }

  /** Resolves when the background warm-up has parsed every room (or stopped at close). */
  warmedUp(): Promise<void> {
    return this.warmUpDone ?? Promise.resolve();
  }

  // Parses one room log on first need (synchronously: a 1,000-message room takes a few ms).
  private parseLog(roomId: string): Message[] {
    const size = this.unparsed.get(roomId) ?? 0;
    const file = join(this.dataDir, ROOM_MESSAGES_DIR, MessageLogs.fileName(roomId));
    try {
      const messages = parseRoomLog(file, roomId, size);
      this.unparsed.delete(roomId);
      return messages;
    } catch (err) {
      this.logger.error({ err, file, room_id: roomId }, 'room log is corrupt; its room cannot be read');
      throw err;
    }
  }

  // One room per event-loop turn, so requests are answered in between; stops at close.
  private startWarmUp(): Promise<void> {
    const started = Date.now();
    const rooms = this.index.lazyRoomIds;
    let next = 0;
    let failed = 0;
    return new Promise<void>((resolve) => {
      const step = (): void => {
        this.warmUpTimer = undefined;
        if (this.state !== 'open') return resolve();
        const roomId = rooms[next++];
        if (roomId === undefined) {
          this.logger.info({ rooms: rooms.length, failed, ms: Date.now() - started }, 'storage warm-up done');
          return resolve();
        }
        try {
          this.index.ensure(roomId); // a no-op if a request got there first
        } catch {
          failed++; // logged by parseLog; the room's reads keep throwing
        }
        this.warmUpTimer = setImmediate(step);
      };
      this.warmUpTimer = setImmediate(step);
      this.stopWarmUp = () => {
        if (this.warmUpTimer) clearImmediate(this.warmUpTimer);
        this.warmUpTimer = undefined;
        resolve();
      };
    });
  }

  private async doClose(): Promise<void> {
    if (this.state === 'new') {
      this.state = 'closed';
      return;
    }
    await this.openPromise?.catch(() => undefined);
    if (this.state === 'closed') return; // open failed and cleaned up
    this.state = 'closing';
    this.stopWarmUp();
    // Flush everything, even if one part fails, then always release fds and the lock: a
    // server shutting down must not leave the directory locked.
    const results = await Promise.allSettled([
      this.agents.flush(),
      this.users.flush(),
      this.rooms.flush(),
      this.logs.flushAll(),
    ]);
    await this.logs.closeAll();
    await this.lock?.release();
    this.state = 'closed';
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
  }

  /** I/O counters (writes, fsyncs) and sizes, for tests and metrics. */
  stats(): FileStoreStats {
    return {
      ...this.io,
      openLogFiles: this.logs.openCount,
      messages: this.index.count,
      unparsedLogs: this.index.lazyRoomIds.length,
    };
  }

  // ── participants ──
  listAgents(): readonly AgentRecord[] {
    return [...this.agents.records.values()];
  }
  listUsers(): readonly UserRecord[] {
    return [...this.users.records.values()];
  }
  getAgent(agentId: string): AgentRecord | undefined {
    return this.agents.records.get(agentId);
  }
  getUser(userId: string): UserRecord | undefined {
    return this.users.records.get(userId);
  }
  putAgent(agent: AgentRecord): Promise<void> {
    return this.whenOpen(() => this.agents.put(agent));
  }
  putUser(user: UserRecord): Promise<void> {
    return this.whenOpen(() => this.users.put(user));
  }

  // ── rooms ──
  listRooms(): readonly RoomRecord[] {
    return [...this.rooms.records.values()];
  }
  getRoom(roomId: string): RoomRecord | undefined {
    return this.rooms.records.get(roomId);
  }
  putRoom(room: RoomRecord): Promise<void> {
    return this.whenOpen(() => this.rooms.put(room));
  }
  touchRoom(room: RoomRecord): void {
    if (this.state !== 'open') {
      this.logger.debug({ room_id: room.room_id, state: this.state }, 'touchRoom ignored: store not open');
      return;
    }
    this.rooms.touch(room);
  }

  // ── message logs ──
  nextSeq(roomId: string): number {
    return this.index.nextSeq(roomId);
  }

  appendMessages(roomId: string, messages: Message[]): Promise<void> {
    return this.whenOpen(() => {
      if (!SAFE_ROOM_ID.test(roomId)) throw new Error(`room id ${JSON.stringify(roomId)} cannot name a log file`);
      this.index.ensure(roomId); // appends go after the parsed log (throws if it is corrupt)
      this.index.validate(roomId, messages);
      if (messages.length === 0) return Promise.resolve();
      // Serialise everything before touching the index, so a bad message changes nothing.
      let lines = '';
      for (const m of messages) lines += JSON.stringify(m) + '\n';
      this.index.loadRoom(roomId, messages);
      return this.logs.append(roomId, lines);
    });
  }

  getMessage(messageId: string): Message | undefined {
    return this.index.get(messageId);
  }
  roomMessages(roomId: string): readonly Message[] {
    return this.index.room(roomId);
  }
  messageCount(): number {
    return this.index.count;
  }

  // Runs a write if the store is open; any synchronous throw becomes a rejection.
  private whenOpen(write: () => Promise<void>): Promise<void> {
    if (this.state !== 'open') return Promise.reject(new Error(`store is ${this.state}, not open`));
    try {
      return write();
    } catch (err) {
      return Promise.reject(err);
    }
  }
}
