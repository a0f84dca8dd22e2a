// The room runtimes of this process: loads a room's runtime on first use, creates rooms, routes
// commands to their room, turns presence changes into per-room commands, and tells waiters
// when a turn is issued. Reads that need more than the committed room go through `RoomReads`.
import { AppError } from '../errors.js';
import type { EventBus } from '../events/bus.js';
import type { Presence, PresenceChange, Timers } from '../identity/presence.js';
import type { Logger } from '../logger.js';
import { presentRoom } from '../rooms/present.js';
import { newRoomId } from '../rooms/rules.js';
import type { Store } from '../storage/store.js';
import type { Caller, InteractionMode, Member, Message, Room, RoomRecord } from '../types.js';
import { lastPersonSeqIn } from './change-events.js';
import type { Command } from './commands.js';
import { RoomRuntime, type CarriedChange } from './room-runtime.js';

export interface CreateRoomInput {
  room_name: string;
  room_description?: string | undefined;
  /** Already hashed (scrypt runs before). */
  password_hash?: string | null | undefined;
  interaction_mode?: InteractionMode | undefined;
  user_participation?: boolean | undefined;
  timezone?: string | undefined;
  language?: string | undefined;
}

export interface RoomsOptions {
  store: Store;
  bus: EventBus;
  presence: Presence;
  logger: Logger;
  now: () => number;
  timers: Timers;
  turnTimeoutMs: number;
  maxMessageChars: number;
  defaults: { language: string; timezone: string };
  /** Other nodes write the same store (PostgreSQL). */
  shared?: boolean;
  /** Shared store: whether another live node still serves the participant (its offline here is not stored). */
  onlineElsewhere?: (participantId: string) => Promise<boolean>;
}

/** SPEC §4: rounds a room runs on its own before waiting for a person. */
export const DEFAULT_MAX_AUTO_ROUNDS = 3;

type TurnListener = (roomId: string, agentName: string) => void;

export class Rooms {
  private readonly runtimes = new Map<string, RoomRuntime>();
  private readonly loading = new Map<string, Promise<RoomRuntime | undefined>>();
  private readonly turnListeners = new Set<TurnListener>();
  /** Per participant: the storing of its latest presence change (the next one waits for it). */
  private readonly presenceWrites = new Map<string, Promise<void>>();
  private stopped = false;

  constructor(private readonly opts: RoomsOptions) {
    opts.presence.onChange((change) => this.presenceChanged(change));
  }

  /** The room's runtime, loaded on first use; undefined when the room does not exist. */
  async runtime(roomId: string): Promise<RoomRuntime | undefined> {
    const live = this.runtimes.get(roomId);
    if (live) return live;
    let loading = this.loading.get(roomId);
    if (!loading) {
      loading = this.load(roomId).finally(() => this.loading.delete(roomId));
      this.loading.set(roomId, loading);
    }
    return loading;
  }

  /** The runtime if the room is loaded already (synchronous callers: event fan-out). */
  loaded(roomId: string): RoomRuntime | undefined {
    return this.runtimes.get(roomId);
  }

  async require(roomId: string): Promise<RoomRuntime> {
    const runtime = await this.runtime(roomId);
    if (!runtime) throw new AppError('room_not_found', `Room ${roomId} not found`);
    return runtime;
  }

  /**
   * The committed room (never mutate it). With a shared store the copy is first brought up to
   * the room's committed version (one version read, and the refresh when it is behind): a client
   * that wrote through another node reads its write here (SPEC §11), instead of whatever this
   * node's notifications have brought so far.
   */
  async room(roomId: string): Promise<RoomRecord> {
    const room = await this.currentRoom(roomId);
    if (!room) throw new AppError('room_not_found', `Room ${roomId} not found`);
    return room;
  }

  /** As `room`, but undefined when the room does not exist (a lookup that must not say so). */
  async currentRoom(roomId: string): Promise<RoomRecord | undefined> {
    const runtime = await this.runtime(roomId);
    if (!runtime) return undefined;
    const version = this.opts.shared ? await this.opts.store.roomVersion?.(roomId) : undefined;
    if (version !== undefined) await runtime.refresh(version);
    return runtime.room;
  }

  /**
   * Runs a command in its room. A caller whose presence change (the first call in a while marks
   * it online) is still being queued waits until it is: its own command then follows it into the
   * same room's queue in the same event-loop turn, and the two share one commit (one fsync)
   * instead of the call waiting for the presence commit and then for its own. A loaded room
   * with nothing to wait for takes the command at once (no async step per call).
   */
  execute(roomId: string, cmd: Command): Promise<unknown> {
    const presenceWrite = 'caller' in cmd ? this.presenceWrites.get(cmd.caller.id) : undefined;
    const live = presenceWrite ? undefined : this.runtimes.get(roomId);
    return live ? live.execute(cmd) : this.executeWhenReady(roomId, cmd, presenceWrite);
  }

  private async executeWhenReady(roomId: string, cmd: Command, presenceWrite: Promise<void> | undefined): Promise<unknown> {
    if (presenceWrite) await presenceWrite;
    const runtime = await this.require(roomId);
    return runtime.execute(cmd);
  }

  /** Running waits listening for turns (a gauge; tests watch a wait start and end). */
  get turnListenerCount(): number {
    return this.turnListeners.size;
  }

  onTurn(listener: TurnListener): () => void {
    this.turnListeners.add(listener);
    return () => this.turnListeners.delete(listener);
  }

  async create(caller: Caller, input: CreateRoomInput, creator: Member): Promise<Room> {
    const now = new Date(this.opts.now());
    const room: RoomRecord = {
      room_id: newRoomId(input.room_name, now),
      room_name: input.room_name,
      room_description: input.room_description ?? '',
      created_at: now.toISOString(),
      created_by: caller.name,
      created_by_id: caller.id,
      password_hash: input.password_hash ?? null,
      interaction_mode: input.interaction_mode ?? 'default',
      user_participation: input.user_participation ?? true,
      system_status: 'active',
      language: input.language ?? this.opts.defaults.language,
      timezone: input.timezone ?? this.opts.defaults.timezone,
      members: [{ ...creator, is_host: true }],
      announcement: { user_announcement: '', announcement_publisher: '', timestamp: null, system_announcement: '' },
      current_round: null,
      history_rounds: [],
      settings: { display_time_format: '24h', display_date_format: 'yyyy-MM-dd', max_auto_rounds: DEFAULT_MAX_AUTO_ROUNDS, turn_timeout_ms: null },
      archived: false,
      processed_through_seq: 0,
    };
    const version = await this.opts.store.createRoom(room);
    this.install(room.room_id, () => this.newRuntime({ room, lastSeq: 0, version, lastPersonSeq: 0 }));
    this.opts.bus.publishAccess({ type: 'joined', room_id: room.room_id, participant_id: caller.id });
    return presentRoom(room);
  }

  /** A room built elsewhere (import): created with its messages in one write, then announced. */
  async adopt(caller: Caller, room: RoomRecord, messages: readonly Message[]): Promise<void> {
    // One write: the room and its history exist together or not at all (SPEC §5, no trace).
    const version = await this.opts.store.createRoom({ ...room, processed_through_seq: messages.length }, messages);
    // The room holds exactly these messages: no need to ask the store.
    const lastPersonSeq = lastPersonSeqIn(messages);
    this.install(room.room_id, () =>
      this.newRuntime({ room: { ...room, processed_through_seq: messages.length }, lastSeq: messages.length, version, lastPersonSeq }),
    );
    this.opts.bus.publishAccess({ type: 'joined', room_id: room.room_id, participant_id: caller.id });
  }

  /**
   * Start-up: every stored turn holder keeps its turn with a fresh full deadline (SPEC §6.1.10).
   * With a shared store other nodes may be running those rooms: a deadline still ahead is kept
   * (this node arms it too, and whichever node fires first wins), one that passed while no node
   * ran the room is renewed. Only the rooms that need it are loaded: those with a running turn
   * before this resolves, then, in the background, those with a member whose stored status
   * disagrees with presence (corrected on load; after a restart that follows busy hours these
   * can be thousands, and serving must not wait for them). The others load on first use.
   */
  async restoreAll(options: { shared?: boolean } = {}): Promise<void> {
    const ids = await this.opts.store.roomIdsWhere((room) => runningTurn(room) !== null);
    await Promise.all(
      ids.map(async (roomId) => {
        const runtime = await this.runtime(roomId);
        const running = runtime ? runningTurn(runtime.room) : null;
        if (options.shared && running?.deadline && Date.parse(running.deadline) > this.opts.now()) return;
        if (runtime && running) {
          await runtime.execute({ type: 'restart' }).catch((err: unknown) => {
            this.opts.logger.error({ err, room_id: roomId }, 'could not restore the turn; its stored deadline stays armed');
            runtime.armFromState();
          });
        }
      }),
    );
    if (!options.shared) void this.reconcileStatuses();
  }

  /** Loads (and so corrects, see reconcilePresence) the rooms whose member statuses are stale, 4 at a time. */
  private async reconcileStatuses(): Promise<void> {
    const ids = await this.opts.store.roomIdsWhere((room) => this.statusDisagrees(room));
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < ids.length && !this.stopped) {
        const roomId = ids[next++]!;
        await this.runtime(roomId).catch((err: unknown) => this.opts.logger.warn({ err, room_id: roomId }, 'could not load a room to correct its member statuses'));
      }
    };
    await Promise.all(Array.from({ length: 4 }, worker));
  }

  /** A member's stored status says online where presence says offline, or the reverse. */
  private statusDisagrees(room: Readonly<RoomRecord>): boolean {
    return room.members.some((m) => (m.status !== 'offline') !== this.opts.presence.isOnline(m.participant_id));
  }

  /**
   * Another node committed the room (shared store): loaded rooms take its state and events. An
   * unloaded room is loaded when the change may start a deadline this node must be ready to
   * fire (its state has a running turn, or the notification did not carry the state), or when
   * one of its members is a client of this node (a socket here must be subscribed to a room its
   * participant joined through another node: `load` announces the members); a carried change
   * with neither (messages only, or a state no one here is in) is left to the room's first use
   * here, which loads it fresh.
   */
  remoteChange(roomId: string, version: number, carried?: CarriedChange, events?: unknown[]): void {
    if (this.stopped) return;
    const runtime = this.runtimes.get(roomId);
    if (!runtime && !this.loading.has(roomId) && carried && !(carried.room && this.concernsThisNode(carried.room))) return;
    const notified = events ? { version, plan: events } : undefined;
    // A load in flight may have read the room before this commit: it refreshes once loaded.
    const work = runtime ? runtime.refresh(version, carried, notified) : this.runtime(roomId).then((loaded) => loaded?.refresh(version, carried, notified));
    work.catch((err: unknown) => this.opts.logger.warn({ err, room_id: roomId }, 'could not take a change made on another node'));
  }

  private concernsThisNode(room: RoomRecord): boolean {
    return runningTurn(room) !== null || room.members.some((m) => this.opts.presence.isOnline(m.participant_id));
  }

  /**
   * Shared store: a stored turn deadline is past due, and maybe no live node holds its room (the
   * node that did died, and the notification that would have made this one load it was lost).
   * Loading the room arms its timer from the stored state; a room loaded already is brought up
   * to date and its timer armed again if it is not (it fired into a timeout that failed). The
   * timer fires through the ordinary `timeout` command, which does nothing if the turn moved on;
   * when another node fires the same deadline at the same time only one commit lands (the
   * version check), the other reloads and finds the turn moved.
   */
  async fireDue(roomId: string): Promise<void> {
    if (this.stopped) return;
    const loaded = this.runtimes.get(roomId);
    if (!loaded) {
      await this.runtime(roomId);
      return;
    }
    await loaded.refresh();
    loaded.armFromState();
  }

  /** After the feed reconnected: notifications may have been missed. */
  refreshAll(): void {
    for (const runtime of this.runtimes.values()) {
      runtime.refresh().catch((err: unknown) => this.opts.logger.warn({ err, room_id: runtime.roomId }, 'could not refresh a room'));
    }
  }

  loadedIds(): string[] {
    return [...this.runtimes.keys()];
  }

  stop(): void {
    this.stopped = true;
    for (const runtime of this.runtimes.values()) runtime.stop();
  }

  private async load(roomId: string): Promise<RoomRuntime | undefined> {
    const loaded = await this.opts.store.loadRoom(roomId);
    if (!loaded) return undefined;
    const existing = this.runtimes.get(roomId);
    if (existing) return existing;
    const lastPersonSeq = await this.opts.store.lastPersonSeq(roomId);
    // Created or adopted here meanwhile (a shared store's feed can load a room this node is
    // just creating): that runtime stays the room's one command path.
    const raced = this.runtimes.get(roomId);
    if (raced) return raced;
    const runtime = this.newRuntime({ ...loaded, lastPersonSeq });
    this.runtimes.set(roomId, runtime);
    runtime.armFromState();
    this.reconcilePresence(runtime);
    // With a shared store a member may have joined through another node while this node did not
    // hold the room: its sockets here subscribe now (the hub skips those already subscribed).
    if (this.opts.shared) {
      for (const m of loaded.room.members) this.opts.bus.publishAccess({ type: 'joined', room_id: roomId, participant_id: m.participant_id });
    }
    return runtime;
  }

  /**
   * A room this node just created (or imported) gets its runtime, unless one was loaded while
   * the store wrote it (the feed of a shared store can): one runtime per room, never two.
   */
  private install(roomId: string, make: () => RoomRuntime): void {
    if (!this.runtimes.has(roomId)) this.runtimes.set(roomId, make());
  }

  private newRuntime(loaded: ConstructorParameters<typeof RoomRuntime>[0]): RoomRuntime {
    const { store, logger, now, timers, turnTimeoutMs, maxMessageChars, presence, bus } = this.opts;
    return new RoomRuntime(loaded, {
      store,
      logger,
      now,
      timers,
      turnTimeoutMs,
      maxMessageChars,
      // With a shared store an agent may be connected to another node: the status that node
      // stored in the room counts too (SPEC §11: presence whichever node a client talks to).
      isOnline: (member) => presence.isOnline(member.participant_id) || (this.opts.shared === true && member.status !== 'offline'),
      publish: (access, events) => {
        for (const event of access) bus.publishAccess(event);
        for (const event of events) bus.publish(event);
      },
      turnsIssued: (roomId, names) => {
        for (const name of names) for (const listener of this.turnListeners) listener(roomId, name);
      },
    });
  }

  /** A loaded room whose stored member status disagrees with presence is corrected (SPEC §6). */
  private reconcilePresence(runtime: RoomRuntime): void {
    if (this.opts.shared) return; // other nodes own the presence of their clients
    for (const member of runtime.room.members) {
      const online = this.opts.presence.isOnline(member.participant_id);
      if ((member.status !== 'offline') === online) continue; // as statusDisagrees
      const lastActive = this.opts.presence.lastActive(member.participant_id) ?? Date.parse(member.last_active);
      runtime
        .execute({ type: 'presence', participantId: member.participant_id, online, lastActive })
        .catch((err: unknown) => this.opts.logger.warn({ err, room_id: runtime.roomId }, 'could not store a member status'));
    }
  }

  private presenceChanged(change: PresenceChange): void {
    this.storePresence(change);
  }

  /**
   * Stores a member status in every room of the participant (also for a dead node's clients).
   * One participant's changes are stored one after the other, in the order they happened: a
   * quick disconnect/reconnect never ends stored offline while connected (or the reverse)
   * because the later change's reads finished first.
   */
  storePresence(change: PresenceChange): void {
    if (this.stopped) return;
    const id = change.participantId;
    const next = (this.presenceWrites.get(id) ?? Promise.resolve())
      .then(() => this.applyPresence(change))
      .catch((err: unknown) => this.opts.logger.warn({ err }, 'could not store a member status'));
    this.presenceWrites.set(id, next);
    void next.then(() => {
      if (this.presenceWrites.get(id) === next) this.presenceWrites.delete(id);
    });
  }

  /** Resolves once the change's command is queued in each of the participant's rooms. */
  private async applyPresence(change: PresenceChange): Promise<void> {
    const elsewhere = this.opts.onlineElsewhere;
    // Not stored while another live node serves the participant (asked until answered), nor
    // when a newer change here (back online) follows it.
    if (!change.online && elsewhere && ((await elsewhere(change.participantId)) || this.opts.presence.isOnline(change.participantId))) return;
    if (this.stopped) return;
    const roomIds = await this.opts.store.roomsOf(change.participantId);
    const runtimes = await Promise.all(
      roomIds.map((roomId) => this.require(roomId).catch((err: unknown) => this.opts.logger.warn({ err, room_id: roomId }, 'could not load a room to store a member status'))),
    );
    for (const runtime of runtimes) {
      runtime?.execute({ type: 'presence', ...change }).catch((err: unknown) => this.opts.logger.warn({ err, room_id: runtime.roomId }, 'could not store a member status'));
    }
  }
}

/** The turn of the room's running round, if one is running. */
function runningTurn(room: Readonly<RoomRecord>): NonNullable<NonNullable<RoomRecord['current_round']>['turn']> | null {
  const round = room.current_round;
  return round && !round.completed && round.turn ? round.turn : null;
}
