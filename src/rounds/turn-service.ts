// Turn tools: skip_response, start_round, pass_turn, extend_turn, wait_for_turn.
import { AppError } from '../errors.js';
import { findRecord } from '../identity/records.js';
import type { MessageService } from '../messages/service.js';
import { yourTurn } from '../messages/service.js';
import type { RoomService } from '../rooms/service.js';
import type { Store } from '../storage/store.js';
import type { Caller, RoomRecord } from '../types.js';
import type { RoundsDriver } from './driver.js';
import type { EngineAction } from './types.js';

export const WAIT_DEFAULT_S = 25;
export const WAIT_MAX_S = 50;

export interface WaitOptions {
  room_id?: string;
  timeout_s?: number;
  signal?: AbortSignal;
  /** Called every few seconds while waiting (MCP progress notifications). */
  onProgress?: (elapsedMs: number, totalMs: number) => void;
}

export class TurnService {
  constructor(
    private readonly store: Store,
    private readonly rooms: RoomService,
    private readonly messages: MessageService,
    private readonly driver: RoundsDriver,
  ) {}

  async skip(caller: Caller, roomId: string): Promise<{ skipped: true }> {
    const { room } = this.rooms.requireMember(roomId, caller);
    this.rooms.requireWritable(room);
    await this.run(room, { type: 'skip', agent: caller.name });
    return { skipped: true };
  }

  async startRound(caller: Caller, roomId: string) {
    const { room } = this.rooms.requireAdmin(roomId, caller);
    this.rooms.requireWritable(room);
    await this.run(room, { type: 'start_round', by: caller.name, byPerson: caller.role === 'user' });
    return room.current_round;
  }

  async passTurn(caller: Caller, roomId: string) {
    const { room } = this.rooms.requireAdmin(roomId, caller);
    this.rooms.requireWritable(room);
    const holder = room.current_round?.turn?.agent ?? null;
    await this.run(room, { type: 'pass_turn', by: caller.name });
    return { passed: holder, current_round: room.current_round };
  }

  async extendTurn(caller: Caller, roomId: string) {
    const { room } = this.rooms.requireMember(roomId, caller);
    this.rooms.requireWritable(room);
    await this.run(room, { type: 'extend_turn', agent: caller.name });
    return { your_turn: yourTurn(room, caller.name), extensions: room.current_round?.turn?.extensions ?? 0 };
  }

  /** Resolves as soon as the caller holds a turn (in `room_id`, or any of its rooms), or after the timeout. */
  async waitForTurn(caller: Caller, opts: WaitOptions) {
    const timeoutMs = Math.min(WAIT_MAX_S, Math.max(0, opts.timeout_s ?? WAIT_DEFAULT_S)) * 1000;
    const rooms = opts.room_id ? [this.rooms.requireMember(opts.room_id, caller).room] : this.roomsOf(caller);
    const ready = this.findTurn(caller, rooms);
    if (ready) return this.turnResult(caller, ready);

    const roomId = await new Promise<string | null>((resolve) => {
      const started = Date.now();
      let settled = false;
      const finish = (value: string | null) => {
        if (settled) return;
        settled = true;
        unsubscribe();
        clearTimeout(timer);
        clearInterval(progress);
        opts.signal?.removeEventListener('abort', onAbort);
        resolve(value);
      };
      const unsubscribe = this.driver.onTurn((turnRoomId, agentName) => {
        if (agentName !== caller.name) return;
        if (opts.room_id && turnRoomId !== opts.room_id) return;
        const room = this.store.getRoom(turnRoomId);
        if (room && yourTurn(room, caller.name)) finish(turnRoomId);
      });
      const onAbort = () => finish(null);
      opts.signal?.addEventListener('abort', onAbort);
      const timer = setTimeout(() => finish(null), timeoutMs);
      const progress = setInterval(() => opts.onProgress?.(Date.now() - started, timeoutMs), 5000);
      if (opts.signal?.aborted) finish(null);
    });
    const room = roomId ? this.store.getRoom(roomId) : undefined;
    if (room && yourTurn(room, caller.name)) return this.turnResult(caller, room);
    return {
      your_turn: null,
      hint: 'No turn yet. Call wait_for_turn again right away to keep waiting.',
    };
  }

  private roomsOf(caller: Caller): RoomRecord[] {
    return (findRecord(this.store, caller)?.record.rooms ?? []).map((id) => this.store.getRoom(id)).filter((r): r is RoomRecord => r !== undefined);
  }

  private findTurn(caller: Caller, rooms: RoomRecord[]): RoomRecord | undefined {
    return rooms.find((room) => yourTurn(room, caller.name) !== null);
  }

  private turnResult(caller: Caller, room: RoomRecord) {
    return {
      your_turn: yourTurn(room, caller.name),
      context: this.messages.context(caller, room.room_id),
    };
  }

  private async run(room: RoomRecord, action: EngineAction): Promise<void> {
    const outcome = this.driver.apply(room, action);
    if (!outcome.ok) throw new AppError(outcome.code, outcome.message, outcome.details);
    await outcome.done;
  }
}
