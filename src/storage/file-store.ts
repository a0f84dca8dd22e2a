// The embedded file store (SPEC §5) behind the Store seam (store.ts). docs/storage.md has the
// full story; in short:
//
// Here: opening and recovery, rooms and their commit queues, participants, reads. Beside it:
// state-files.ts (snapshots, journal, durable state writes, checkpoints), log-registry.ts (the
// logs registered at start, indexes persisted at close), message-append.ts (messages into a
// log, in slices), participant-index.ts, room-messages.ts and room-indexes.ts (the messages:
// reads over per-room indexes), file-store-options.ts.
//
// Layout under dataDir:
//   agents.json users.json rooms.json   snapshots (created as `[]` at first start): checkpoints
//                                       of the journal, at most about a second behind it while
//                                       small (checkpointMs), amortised past compactBytes
//   journal/state-{gen}.jsonl           every change of a room / agent / user record, one line
//                                       each, group-committed (state-journal.ts); replayed over
//                                       the snapshots at start, deleted once checkpointed
//   room_messages/{room_id}.jsonl       append-only logs (room-log.ts)
//   uploads/ exports/                   created here, written by others
//   server.lock                         one process per directory (lock.ts)
//
// The guarantees of store.ts, and how this store gives them:
// - Durable on resolve: snapshot rewrites (temp, fsync, rename, directory fsync), journal and
//   log appends (write + fsync; a new file also fsyncs its directory) finish before the promise
//   resolves.
// - No trace on reject: memory (records, indexes, message lists) changes only after the write
//   is durable, in one synchronous step. A failed append is cut back to the file's last durable
//   size. So what is served after a failure is what a fresh open of the directory loads.
// - commitRoom appends the messages to the room log and writes the room state (snapshot temp
//   file or journal line) so that the state never counts without its messages: the snapshot is
//   renamed into place once the log append is fsync'd; a journal line is appended beside the
//   log append, marked with the commit's last message, and counts at start only if the log
//   holds that message (`settleMarked`). If the state write fails the log is cut back before
//   rejecting. A kill between the two leaves the messages with the previous state
//   (docs/storage.md, "the crash window").
// - One writer per room: commits of one room run one after another (a queue per room), each
//   checked against the version the previous one produced; commits of different rooms run
//   concurrently and share journal fsyncs.
// - Reads hand out copies; what callers put in is copied too.
// - The cost of a change is bounded: a change costs its own journal line; the snapshots are
//   rewritten by a checkpoint (`compact`) a second after the first change they lack while they
//   are small, once the journal outgrows them (amortised) or periodically past that, and on
//   close. (`syncSnapshotBytes` can still make small state durable by rewriting the snapshots
//   with each change instead, state-writer.ts; the server does not use it.)
//
// Messages (room-messages.ts): memory holds a compact index per room in use (INDEX_CACHE_BYTES),
// a message id → room directory (6 bytes a message, for getMessage) and one LRU cache of
// messages (cacheMessages / CACHE_MESSAGES), never the history; older messages are read from
// the logs by position, search streams the log. Start-up scans each log once, streaming
// (log-reader.ts: torn tail cut, index built), or only its tail when a persisted index
// (`{room_id}.idx`, written on a clean shutdown) still matches the log. A corrupt line that
// passed the cheap checks is reported when read (file and byte); the rest keeps working.
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../logger.js';
import { cloneJson, cloneRoom } from '../clone.js';
import type { AgentRecord, Message, PublicRoomSummary, RoomRecord, UserRecord } from '../types.js';
import { makeDirectory, newIoStats, resolveFsOps, type FsOps } from './fs-ops.js';
import { DataDirLock } from './lock.js';
import { IndexFiles } from './index-files.js';
import { CorruptLogError, scanRoomLog } from './log-reader.js';
import type { RoomIndex } from './room-index.js';
import { MessageLogs } from './message-logs.js';
import { RoomMessages } from './room-messages.js';
import type { SnapshotFile } from './snapshot.js';
import { JOURNAL_DIR, type LogMark, type StateEntry } from './state-journal.js';
import { StateFiles } from './state-files.js';
import { checkCommitSeqs, participantIdOf, sameRecord, summarise } from './store-util.js';
import { NameTakenError, ParticipantChangedError, StaleRoomError } from './store.js';
import { persistIndexes, registerLogs, type LogParts } from './log-registry.js';
import { ParticipantIndex } from './participant-index.js';
import { INDEXES_DIR, ROOM_MESSAGES_DIR, SAFE_ROOM_ID, type FileStoreOptions, type FileStoreStats } from './file-store-options.js';
import { appendMessages, lastAppended, type MessageAppend } from './message-append.js';
import type { LoadedRoom, MessagePage, ParticipantRecord, RoomCommit, Store } from './store.js';

export type { FileStoreOptions, FileStoreStats } from './file-store-options.js';
export { INDEXES_DIR, ROOM_MESSAGES_DIR } from './file-store-options.js';

type State = 'new' | 'opening' | 'open' | 'closing' | 'closed';

const copy = cloneJson;
/** A commit that updates no stored message reads no ids. */
const NO_IDS: ReadonlyMap<number, string> = new Map();

export class FileStore implements Store {
  readonly dataDir: string;
  private readonly logger: Logger;
  private readonly fsOps: FsOps;
  private readonly io = newIoStats();
  private readonly nameKeyOf: (name: string) => string;
  /** The snapshots, the journal and how changes become durable (state-files.ts). */
  private readonly stateFiles: StateFiles;
  private readonly agents: SnapshotFile<AgentRecord>;
  private readonly users: SnapshotFile<UserRecord>;
  private readonly rooms: SnapshotFile<RoomRecord>;
  private readonly logs: MessageLogs;
  private readonly loadConcurrency: number;
  /** Name and token indexes over the durable participant records (participant-index.ts). */
  private readonly participantIndex: ParticipantIndex;

  // Rooms.
  private readonly versions = new Map<string, number>();
  /** The rooms of each member: one room id (most participants, 110,000 Sets cost ~13 MB) or a Set. */
  private readonly roomsByMember = new Map<string, string | Set<string>>();
  private readonly creating = new Set<string>();
  /** The tail of each room's commit queue (one writer per room, in order). */
  private readonly roomQueues = new Map<string, Promise<unknown>>();

  // Messages: per-room indexes, the cache, reads from the logs.
  private readonly messages: RoomMessages;
  private readonly indexFiles: IndexFiles;
  /** Log mtimes of the rooms registered lazily at open (carried into the next manifest). */
  private readonly lazyMtimes = new Map<string, number>();
  private readonly warmIndexes: boolean;
  private readonly warmUpDelayMs: number;
  private warmUpTimer: NodeJS.Timeout | undefined;

  private state: State = 'new';
  private lock: DataDirLock | undefined;
  private openPromise: Promise<void> | undefined;
  private closePromise: Promise<void> | undefined;

  constructor(options: FileStoreOptions) {
    this.dataDir = options.dataDir;
    this.logger = options.logger;
    this.fsOps = resolveFsOps(options.fsOps);
    this.loadConcurrency = options.loadConcurrency ?? 4;
    const compactEveryMs = options.compactEveryMs ?? 60_000;
    this.nameKeyOf = options.nameKeyOf ?? ((name) => name.normalize('NFC').toLowerCase());
    this.stateFiles = new StateFiles({
      dataDir: this.dataDir,
      fsOps: this.fsOps,
      stats: this.io,
      logger: this.logger,
      compactBytes: options.compactBytes ?? 8 * 1024 * 1024,
      compactEveryMs,
      syncSnapshotBytes: options.syncSnapshotBytes ?? 0,
      checkpointMs: options.checkpointMs ?? (compactEveryMs === 0 ? 0 : 1000),
      isOpen: () => this.state === 'open',
    });
    ({ agents: this.agents, users: this.users, rooms: this.rooms } = this.stateFiles);
    this.participantIndex = new ParticipantIndex(this.nameKeyOf, this.logger, () => this.allTokens());
    this.logs = new MessageLogs({
      dir: join(this.dataDir, ROOM_MESSAGES_DIR),
      fsOps: this.fsOps,
      stats: this.io,
      logger: this.logger,
      maxOpen: options.maxOpenLogs ?? 256,
    });
    this.messages = new RoomMessages({
      dir: join(this.dataDir, ROOM_MESSAGES_DIR),
      logger: this.logger,
      cacheMessages: options.cacheMessages ?? 50_000, // DEFAULT_CACHE_MESSAGES in index.ts
      sizeOf: (roomId) => this.logs.sizeOf(roomId),
      loadIndex: (roomId) => this.loadIndex(roomId),
      loadIdHashes: (roomId) => this.indexFiles.readIdHashes(roomId, this.logs.sizeOf(roomId)),
      fsOps: this.fsOps,
      indexBudgetBytes: options.indexCacheBytes ?? 128 * 1024 * 1024,
      isBusy: (roomId) => this.roomQueues.has(roomId),
    });
    this.indexFiles = new IndexFiles({ dir: join(this.dataDir, INDEXES_DIR), logger: this.logger });
    this.warmIndexes = options.warmIndexes ?? true;
    this.warmUpDelayMs = options.warmUpDelayMs ?? 0;
  }

  // ── lifecycle ──
  open(): Promise<void> {
    if (this.state !== 'new') return Promise.reject(new Error(`FileStore.open: store is already ${this.state}`));
    this.state = 'opening';
    this.openPromise = this.doOpen().then(
      async () => {
        this.state = 'open';
        if (this.warmIndexes) {
          this.warmUpTimer = setTimeout(() => void this.messages.loadAll(), this.warmUpDelayMs);
          this.warmUpTimer.unref();
        }
        await this.stateFiles.started();
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
    // Start-up errors name the variable (SPEC §2): a DATA_DIR that is a file, or not writable.
    await makeDirectory(this.dataDir).catch((err: NodeJS.ErrnoException) => {
      throw new Error(`DATA_DIR ${this.dataDir} cannot be used as the data directory (${err.code ?? err.message})`);
    });
    this.lock = await DataDirLock.acquire(this.dataDir, this.logger);
    this.logger.info({ data_dir: this.dataDir }, 'opening storage');
    const logDir = join(this.dataDir, ROOM_MESSAGES_DIR);
    for (const dir of [logDir, join(this.dataDir, INDEXES_DIR), join(this.dataDir, JOURNAL_DIR), join(this.dataDir, 'uploads'), join(this.dataDir, 'exports')]) {
      await mkdir(dir, { recursive: true, mode: 0o700 }); // private (SPEC §10)
    }
    // A .tmp is a snapshot write that never got renamed: the real file is still the valid one.
    for (const snap of [this.agents, this.users, this.rooms]) await rm(`${snap.path}.tmp`, { force: true });
    // Missing snapshots are created only once all three loaded: a corrupt one stops open first.
    const snapshots = [this.agents, this.users, this.rooms];
    const found = await Promise.all(snapshots.map((snap) => snap.load()));
    for (const [i, snap] of snapshots.entries()) if (!found[i]) await snap.write();
    // Room lines written beside their log append wait until the logs are registered (`settleMarked`).
    const marked = new Map<string, Array<{ room: RoomRecord; after: LogMark }>>();
    const journaled = await this.stateFiles.journal.replay((entry) => {
      if (entry.t === 'room') {
        const roomId = entry.r.room_id;
        if (entry.after) {
          this.stateFiles.snapshotOf(entry); // the rooms snapshot lacks it
          marked.set(roomId, [...(marked.get(roomId) ?? []), { room: entry.r, after: entry.after }]);
          return;
        }
        marked.delete(roomId); // a later whole record replaces them
      }
      this.stateFiles.snapshotOf(entry).set(entry.r);
    });

    const registered = await registerLogs(this.logParts());
    await this.settleMarked(marked);
    this.stateFiles.measure();
    for (const a of this.agents.records.values()) this.participantIndex.set(a.agent_id, a.name, a.token_hashes);
    for (const u of this.users.records.values()) this.participantIndex.set(u.user_id, u.name, u.token_hashes);
    for (const room of this.rooms.records.values()) {
      this.versions.set(room.room_id, 1);
      this.indexMembers(undefined, room);
    }
    const messages = this.messages.count;
    this.logger.info(
      {
        data_dir: this.dataDir,
        agents: this.agents.records.size,
        users: this.users.records.size,
        rooms: this.rooms.records.size,
        room_logs: registered.files,
        persisted_indexes_used: registered.indexed,
        indexes_loaded_on_use: registered.lazy,
        journal_entries: journaled,
        messages,
        ms: Date.now() - started,
      },
      'storage opened',
    );
  }

  /**
   * Start-up, once the logs are registered: per room, the newest journal line written beside
   * its log append whose mark the log holds is the room's state. Newer ones name messages that
   * never became durable (a kill between the two writes, or a log append that failed while its
   * journal line did not): they are dropped, as their calls were never acknowledged.
   */
  private async settleMarked(marked: Map<string, Array<{ room: RoomRecord; after: LogMark }>>): Promise<void> {
    for (const [roomId, lines] of marked) {
      let kept = lines.length - 1;
      while (kept >= 0 && !(await this.logHolds(roomId, lines[kept]!.after))) kept--;
      if (kept >= 0) this.rooms.set(lines[kept]!.room);
      const dropped = lines.length - 1 - kept;
      if (dropped > 0) {
        this.logger.warn({ room_id: roomId, dropped }, 'state journal: room changes whose messages never reached the room log were dropped (never acknowledged)');
      }
    }
  }

  private async logHolds(roomId: string, mark: LogMark): Promise<boolean> {
    try {
      return (await this.messages.idsAt(roomId, [mark.seq])).get(mark.seq) === mark.id;
    } catch (err) {
      // A corrupt line is not the message the mark names. Any other failure (a read that
      // failed) stops the start: dropping the line on it could lose an acknowledged change.
      if (err instanceof CorruptLogError) return false;
      throw err;
    }
  }

  close(): Promise<void> {
    this.closePromise ??= this.doClose();
    return this.closePromise;
  }

  private async doClose(): Promise<void> {
    if (this.state === 'new') {
      this.state = 'closed';
      return;
    }
    await this.openPromise?.catch(() => undefined);
    if (this.state === 'closed') return; // open failed and cleaned up
    this.state = 'closing';
    // Let every write in flight finish (each settles its own caller), then always release fds
    // and the lock: a server shutting down must not leave the directory locked.
    this.stateFiles.stopTimers();
    clearTimeout(this.warmUpTimer);
    await Promise.allSettled([...this.roomQueues.values(), ...this.stateFiles.pendingWrites]);
    // Leave the snapshots up to date on a clean shutdown (the journal stays if this fails).
    await this.stateFiles.close();
    await this.messages.stopLoading();
    await persistIndexes(this.logParts());
    await this.logs.closeAll();
    await this.lock?.release();
    this.state = 'closed';
  }

  /** Folds the state journal into the snapshot files now (state-files.ts); never rejects. */
  compact(): Promise<void> {
    return this.stateFiles.compact();
  }

  // ── persisted message indexes (index-files.ts) ──

  /** A lazily registered room's index: its `.idx` and the log after it (first use after start). */
  private async loadIndex(roomId: string): Promise<RoomIndex> {
    const path = this.messages.fileOf(roomId);
    const size = this.logs.sizeOf(roomId);
    const resume = await this.indexFiles.load(roomId, path, size, true);
    return (await scanRoomLog(path, roomId, this.logger, size, resume)).index;
  }

  /** What the log registry works on (log-registry.ts). */
  private logParts(): LogParts {
    const { logs, messages, indexFiles, logger, loadConcurrency, lazyMtimes } = this;
    return { logDir: join(this.dataDir, ROOM_MESSAGES_DIR), indexDir: join(this.dataDir, INDEXES_DIR), logs, messages, indexFiles, logger, loadConcurrency, lazyMtimes };
  }

  /** I/O counters (writes, fsyncs) and sizes, for tests and metrics. */
  stats(): FileStoreStats {
    return {
      ...this.io,
      openLogFiles: this.logs.openCount,
      messages: this.messages.count,
      cachedMessages: this.messages.cache.size,
      cacheHits: this.messages.cache.hits,
      cacheMisses: this.messages.cache.misses,
      indexBytes: this.messages.indexBytes,
      idDirectoryBytes: this.messages.idDirectoryBytes,
      idDirectoryRooms: this.messages.roomsWithIdsKnown,
    };
  }

  // ── participants ──
  async getParticipant(id: string): Promise<ParticipantRecord | undefined> {
    const agent = this.agents.records.get(id);
    if (agent) return { kind: 'agent', record: copy(agent) };
    const user = this.users.records.get(id);
    return user ? { kind: 'user', record: copy(user) } : undefined;
  }

  findParticipantByTokenHash(tokenHash: string): Promise<ParticipantRecord | undefined> {
    const id = this.participantIndex.idOfToken(tokenHash);
    return id === undefined ? Promise.resolve(undefined) : this.getParticipant(id);
  }

  findParticipantByNameKey(key: string): Promise<ParticipantRecord | undefined> {
    const id = this.participantIndex.idOfKey(key);
    return id === undefined ? Promise.resolve(undefined) : this.getParticipant(id);
  }

  async listParticipants(): Promise<ParticipantRecord[]> {
    return [
      ...[...this.agents.records.values()].map((record): ParticipantRecord => ({ kind: 'agent', record: copy(record) })),
      ...[...this.users.records.values()].map((record): ParticipantRecord => ({ kind: 'user', record: copy(record) })),
    ];
  }

  async readParticipants(visit: (found: Readonly<ParticipantRecord>) => void): Promise<void> {
    for (const record of this.agents.records.values()) visit({ kind: 'agent', record });
    for (const record of this.users.records.values()) visit({ kind: 'user', record });
  }

  async putParticipant(participant: ParticipantRecord, key: string, expected?: ParticipantRecord): Promise<void> {
    this.assertOpen();
    const id = participantIdOf(participant);
    if (typeof id !== 'string' || id === '') throw new Error('participant without an id');
    const other = participant.kind === 'agent' ? this.users : this.agents;
    if (other.records.has(id)) throw new Error(`participant ${id} exists as another kind`);
    if (expected) {
      const own = participant.kind === 'agent' ? this.agents.records.get(id) : this.users.records.get(id);
      const current = own && ({ kind: participant.kind, record: own } as ParticipantRecord);
      if (!sameRecord(current, expected) && !sameRecord(current, participant)) throw new ParticipantChangedError(id);
    }
    if (!this.participantIndex.reserve(key, id)) throw new NameTakenError(participant.record.name);
    try {
      const record = copy(participant.record);
      const entry = { t: participant.kind, r: record } as StateEntry;
      await this.stateFiles.write([entry], () => this.participantIndex.set(id, key, record.token_hashes, true));
    } finally {
      this.participantIndex.release(key);
    }
  }

  /** Every stored participant's token hashes (the token index is built from them on first use). */
  private *allTokens(): Iterable<[id: string, tokens: readonly string[]]> {
    for (const a of this.agents.records.values()) yield [a.agent_id, a.token_hashes];
    for (const u of this.users.records.values()) yield [u.user_id, u.token_hashes];
  }

  // ── rooms ──
  async loadRoom(roomId: string): Promise<LoadedRoom | undefined> {
    const room = this.rooms.records.get(roomId);
    if (!room) return undefined;
    return { room: cloneRoom(room), lastSeq: this.lastSeqOf(roomId), version: this.versions.get(roomId) ?? 1 };
  }

  async listRoomIds(): Promise<string[]> {
    return [...this.rooms.records.keys()];
  }

  async roomIdsWhere(test: (room: Readonly<RoomRecord>) => boolean): Promise<string[]> {
    const out: string[] = [];
    for (const room of this.rooms.records.values()) if (test(room)) out.push(room.room_id);
    return out;
  }

  async listRoomSummaries(includeArchived: boolean): Promise<PublicRoomSummary[]> {
    const out: PublicRoomSummary[] = [];
    for (const room of this.rooms.records.values()) if (includeArchived || !room.archived) out.push(summarise(room));
    return out;
  }

  async roomsOf(participantId: string): Promise<string[]> {
    const rooms = this.roomsByMember.get(participantId);
    return rooms === undefined ? [] : typeof rooms === 'string' ? [rooms] : [...rooms];
  }

  async createRoom(room: RoomRecord, messages: readonly Message[] = []): Promise<number> {
    this.assertOpen();
    const roomId = room.room_id;
    if (typeof roomId !== 'string' || !SAFE_ROOM_ID.test(roomId)) {
      throw new Error(`room id ${JSON.stringify(roomId)} cannot name a log file`);
    }
    if (this.rooms.records.has(roomId) || this.creating.has(roomId)) throw new Error(`room ${roomId} exists`);
    // A log without a room is what a create killed between its log append and its state write
    // leaves: never append to it (its seqs would repeat). Room ids are new for every create.
    if (this.messages.lastSeq(roomId) > 0 || this.logs.sizeOf(roomId) > 0) {
      throw new Error(`room ${roomId} has a message log but no stored room; not creating it over that log`);
    }
    checkCommitSeqs(roomId, 0, () => undefined, messages);
    this.creating.add(roomId);
    try {
      const record = cloneRoom(room);
      const append = await appendMessages(this.logs, this.messages, roomId, messages, true);
      await this.writeStateAfter(append, record, () => {
        append.apply();
        this.versions.set(roomId, 1);
        this.indexMembers(undefined, record);
      });
      return 1;
    } finally {
      this.creating.delete(roomId);
    }
  }

  commitRoom(roomId: string, commit: RoomCommit): Promise<number> {
    try {
      this.assertOpen();
    } catch (err) {
      return Promise.reject(err);
    }
    // One commit of a room at a time, in call order; a failed one does not stop the next.
    const previous = this.roomQueues.get(roomId) ?? Promise.resolve();
    const run = previous.then(() => this.doCommit(roomId, commit));
    const tail = run.catch(() => undefined);
    this.roomQueues.set(roomId, tail);
    void tail.then(() => {
      if (this.roomQueues.get(roomId) === tail) this.roomQueues.delete(roomId);
    });
    return run;
  }

  private async doCommit(roomId: string, commit: RoomCommit): Promise<number> {
    const current = this.rooms.records.get(roomId);
    if (!current) throw new Error(`room ${roomId} does not exist`);
    const version = this.versions.get(roomId) ?? 1;
    if (commit.expectedVersion !== version) throw new StaleRoomError(roomId);
    if (commit.room && commit.room.room_id !== roomId) throw new Error(`room state for ${commit.room.room_id} committed to ${roomId}`);
    // The index with its id and client tables: the append below is put into them (RoomIndex.add)
    // in the synchronous step after it is durable, so they must be in memory before anything is
    // written. A commit of state alone (a join, a status, presence) needs no index: a cold room's
    // is not read for it (its last seq is known without it).
    const hasMessages = commit.messages.length > 0;
    // In memory already (the usual case), the index is used without an await: a one-message
    // send took three async lookups of it here (issue 40).
    const index = hasMessages ? (this.messages.withTablesNow(roomId) ?? (await this.messages.readyWithTables(roomId))) : undefined;
    const lastSeq = this.messages.lastSeq(roomId);
    // Updates name stored messages: read their ids (cache or disk) for the seq check.
    const updated = commit.messages.filter((m) => m.seq <= lastSeq).map((m) => m.seq);
    const stored = updated.length > 0 ? await this.messages.idsAt(roomId, [...new Set(updated)]) : NO_IDS;
    checkCommitSeqs(roomId, lastSeq, (seq) => stored.get(seq), commit.messages);
    // A new message must not reuse the id of one stored in this room. (Ids are UUIDs made by
    // the server; other rooms are not searched, which would cost a probe per room.) An id the
    // index has never seen needs no read.
    for (const m of commit.messages) {
      if (m.seq > lastSeq && (!index || index.seqsOfId(m.message_id).length > 0)) {
        const at = await this.messages.hasId(roomId, m.message_id);
        if (at !== undefined) throw new Error(`message ${m.message_id} is stored at seq ${at}, not ${m.seq}`);
      }
    }
    const room = commit.room ? cloneRoom(commit.room) : undefined;
    const next = version + 1;
    const append = await appendMessages(this.logs, this.messages, roomId, commit.messages);
    // Once everything is durable: make it visible, all in one synchronous step.
    const apply = (): void => {
      append.apply();
      if (room) this.indexMembers(current, room);
      this.versions.set(roomId, next);
    };
    if (!room) {
      await append.written;
      apply();
      return next;
    }
    await this.writeStateAfter(append, room, apply, lastAppended(commit.messages, lastSeq));
    return next;
  }

  /**
   * Writes a room's state so that it becomes durable only after the messages' append: the
   * state is written while the log append runs and made visible after it (the direct writer
   * renames the snapshot once the log is durable; the journal waits for it). If the state write
   * fails, the messages are taken back off the log before rejecting.
   */
  private async writeStateAfter(append: MessageAppend, room: RoomRecord, apply: () => void, after?: LogMark): Promise<void> {
    try {
      await this.stateFiles.write([{ t: 'room', r: room }], apply, append.written, after);
    } catch (err) {
      await append.undo();
      throw err;
    }
  }

  /** Only the members who joined or left change the index (most commits change no membership). */
  private indexMembers(before: RoomRecord | undefined, after: RoomRecord): void {
    const stay = new Set<string>();
    if (before) {
      const now = new Set(after.members.map((m) => m.participant_id));
      for (const m of before.members) {
        if (now.has(m.participant_id)) stay.add(m.participant_id);
        else this.removeMemberRoom(m.participant_id, before.room_id);
      }
    }
    for (const m of after.members) if (!stay.has(m.participant_id)) this.addMemberRoom(m.participant_id, after.room_id);
  }

  private addMemberRoom(participantId: string, roomId: string): void {
    const rooms = this.roomsByMember.get(participantId);
    if (rooms === undefined) this.roomsByMember.set(participantId, roomId);
    else if (typeof rooms !== 'string') rooms.add(roomId);
    else if (rooms !== roomId) this.roomsByMember.set(participantId, new Set([rooms, roomId]));
  }

  private removeMemberRoom(participantId: string, roomId: string): void {
    const rooms = this.roomsByMember.get(participantId);
    if (rooms === roomId) this.roomsByMember.delete(participantId);
    else if (typeof rooms === 'object' && rooms.delete(roomId) && rooms.size <= 1) {
      const [last] = rooms;
      if (last === undefined) this.roomsByMember.delete(participantId);
      else this.roomsByMember.set(participantId, last);
    }
  }

  // ── messages ──
  async getMessage(messageId: string): Promise<Message | undefined> {
    const found = await this.messages.getMessage(messageId);
    return found ? copy(found) : undefined;
  }

  async readMessages(roomId: string, page: MessagePage): Promise<Message[]> {
    return (await this.messages.page(roomId, page.afterSeq, page.beforeSeq, page.limit)).map(copy);
  }

  async searchMessages(roomId: string, query: string, limit: number): Promise<Message[]> {
    return (await this.messages.search(roomId, query, limit)).map(copy);
  }

  lastSeqBySender(roomId: string, senderId: string): Promise<number> {
    return this.messages.lastSeqBySender(roomId, senderId);
  }

  async lastPersonSeq(roomId: string): Promise<number> {
    return this.messages.lastPersonSeq(roomId);
  }

  countVisible(roomId: string, afterSeq: number, beforeSeq: number): Promise<number> {
    return this.messages.countVisible(roomId, afterSeq, beforeSeq);
  }

  async findByClientMsgId(roomId: string, senderId: string, clientMsgId: string): Promise<Message | undefined> {
    const found = await this.messages.findByClientMsgId(roomId, senderId, clientMsgId);
    return found ? copy(found) : undefined;
  }

  async messageCount(): Promise<number> {
    return this.messages.count;
  }

  private lastSeqOf(roomId: string): number {
    return this.messages.lastSeq(roomId);
  }

  private assertOpen(): void {
    if (this.state !== 'open') throw new Error(`store is ${this.state}, not open`);
  }
}
