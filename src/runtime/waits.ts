// wait_for_turn on every transport: resolves as soon as the caller holds a turn (in one room or
// any of its rooms) or when the wait runs out. A running wait keeps the caller online
// (presence hold), whichever transport it came from. Time comes from the injected clock.
import type { Presence, Timers } from '../identity/presence.js';
import { omittedLine } from '../i18n/room-texts.js';
import { yourTurn } from '../protocol/events.js';
import type { Store } from '../storage/store.js';
import type { Caller, RoomRecord } from '../types.js';
import type { RoomReads } from './reads.js';
import type { Rooms } from './rooms.js';

export const WAIT_DEFAULT_S = 25;
export const WAIT_MAX_S = 50;
const PROGRESS_EVERY_MS = 5000;

export interface WaitOptions {
  room_id?: string | undefined;
  timeout_s?: number | undefined;
  signal?: AbortSignal | undefined;
  /** Called every few seconds while waiting (MCP progress notifications). */
  onProgress?: ((elapsedMs: number, totalMs: number) => void) | undefined;
}

export class TurnWaits {
  constructor(
    private readonly rooms: Rooms,
    private readonly reads: RoomReads,
    private readonly store: Store,
    private readonly presence: Presence,
    private readonly timers: Timers,
    private readonly now: () => number,
  ) {}

  async wait(caller: Caller, opts: WaitOptions) {
    const timeoutMs = Math.min(WAIT_MAX_S, Math.max(0, opts.timeout_s ?? WAIT_DEFAULT_S)) * 1000;
    // Listening starts before the first look, so a turn given in between is not missed. Any room
    // the caller is a member of when the turn comes counts, also one it joined during the wait.
    let given: string | undefined;
    let wake: ((roomId: string) => void) | undefined;
    const unsubscribe = this.rooms.onTurn((turnRoomId, agentName) => {
      if (agentName !== caller.name || (opts.room_id !== undefined && turnRoomId !== opts.room_id)) return;
      void this.rooms.runtime(turnRoomId).then((runtime) => {
        if (!runtime || !runtime.room.members.some((m) => m.participant_id === caller.id) || !yourTurn(runtime.room, caller.name)) return;
        given ??= turnRoomId;
        wake?.(turnRoomId);
      });
    });
    try {
      // A named room is read once, current (memberRoom checks its committed version).
      const named = opts.room_id ? await this.reads.memberRoom(opts.room_id, caller) : undefined;
      const ready = named ? (yourTurn(named, caller.name) ? named : undefined) : await this.findTurn(caller, await this.store.roomsOf(caller.id));
      if (ready) return await this.turnResult(caller, ready);

      const release = this.presence.hold(caller.id);
      try {
        const roomId = given ?? (await this.until((resolve) => (wake = resolve), timeoutMs, opts));
        const room = roomId ? (await this.rooms.runtime(roomId))?.room : undefined;
        if (room && yourTurn(room, caller.name)) return await this.turnResult(caller, room);
        return { your_turn: null, hint: 'No turn yet. Call wait_for_turn again right away to keep waiting.' };
      } finally {
        release();
      }
    } finally {
      unsubscribe();
    }
  }

  /**
   * Resolves with the room `listen` hands over, or null when the wait runs out or is aborted;
   * reports progress every PROGRESS_EVERY_MS meanwhile.
   */
  private until(listen: (resolve: (roomId: string) => void) => void, timeoutMs: number, opts: WaitOptions): Promise<string | null> {
    return new Promise<string | null>((resolve) => {
      const started = this.now();
      let settled = false;
      let timer: unknown;
      let progress: unknown;
      const finish = (value: string | null) => {
        if (settled) return;
        settled = true;
        this.timers.clearTimeout(timer);
        this.timers.clearTimeout(progress);
        opts.signal?.removeEventListener('abort', onAbort);
        resolve(value);
      };
      listen(finish);
      const onAbort = () => finish(null);
      opts.signal?.addEventListener('abort', onAbort);
      timer = this.timers.setTimeout(() => finish(null), timeoutMs);
      const tick = () => {
        opts.onProgress?.(this.now() - started, timeoutMs);
        progress = this.timers.setTimeout(tick, PROGRESS_EVERY_MS);
      };
      progress = this.timers.setTimeout(tick, PROGRESS_EVERY_MS);
      if (opts.signal?.aborted) finish(null);
    });
  }

  private async findTurn(caller: Caller, roomIds: readonly string[]): Promise<RoomRecord | undefined> {
    for (const roomId of roomIds) {
      // Current (a turn given through another node counts even if its notification is late).
      const room = await this.rooms.currentRoom(roomId);
      if (room && room.members.some((m) => m.participant_id === caller.id) && yourTurn(room, caller.name)) return room;
    }
    return undefined;
  }

  /**
   * The turn and its context; when the context left older unread messages out, `notice` says so
   * in the room's language ("N earlier messages not shown; call get_messages"), so the agent
   * knows it has not seen the whole conversation (SPEC §7 `omitted`).
   */
  private async turnResult(caller: Caller, room: RoomRecord) {
    const context = await this.reads.context(caller, room.room_id);
    const notice = omittedLine(room.language, context.omitted);
    return { your_turn: yourTurn(room, caller.name), context, ...(notice ? { notice } : {}) };
  }
}
