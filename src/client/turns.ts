// Runs the client's turn handler when the server hands this participant a turn, and answers
// for it: send_message, skip_response, or nothing. A handler never holds a turn past its
// deadline: it races a timer set `margin` before the deadline, and on time-out the turn is
// skipped when that is allowed (otherwise the server's own timeout passes it).
import { randomUUID } from 'node:crypto';
import type { RoomEvent } from '../events/bus.js';
import type { CurrentRound, TurnReason } from '../rounds/types.js';
import type { Announcement, InteractionMode, Member, Message, SystemStatus } from '../types.js';
import { ChatroomError } from './rest.js';

/**
 * What `get_context` returns (SPEC §7). Spelled out here rather than derived from the server's
 * service, so the client's published types stand alone (`agent-chatroom/client`).
 */
export interface TurnContext {
  /** The newest `limit` unread visible messages, oldest first. */
  messages: Array<Message & { display_time: string; truncated?: boolean }>;
  /** How many older unread messages were left out (0 when none): page them with get_messages. */
  omitted: number;
  members: Array<
    Pick<Member, 'name' | 'role' | 'introduce' | 'status' | 'is_host' | 'last_active'> & { capabilities: string[]; activity?: string | null; note?: string | null }
  >;
  room: {
    room_id: string;
    room_name: string;
    room_description: string;
    interaction_mode: InteractionMode;
    system_status: SystemStatus;
    user_participation: boolean;
    announcement: Announcement;
    language: string;
    timezone: string;
    current_round: CurrentRound | null;
    current_agent: string | null;
  };
  your_turn: { room_id: string; round_id: string; can_skip: boolean; reason: TurnReason; deadline: string | null } | null;
}
export type AgentTurnData = Extract<RoomEvent, { event: 'agent_turn' }>['data'];

export interface TurnInfo {
  room_id: string;
  round_id: string;
  can_skip: boolean;
  /** ISO 8601, server clock. */
  deadline: string;
  reason: AgentTurnData['reason'];
  /** The turn's full length (the room's timeout). */
  timeout_ms: number;
  /** get_context, fetched for this turn. */
  context: TurnContext;
  /** Aborted when the handler's time is up (pass it to fetch). */
  signal: AbortSignal;
}

export type TurnAnswer =
  | { text: string; mentions?: string[]; end_turn?: boolean }
  /** Pass the turn; `reason` (≤ 200 characters) is shown in the room's skip record (SPEC §7). */
  | { skip: true; reason?: string }
  /** The handler answered by itself (through `call`), or lets the turn run out. */
  | void
  | undefined;

export type TurnHandler = (turn: TurnInfo) => TurnAnswer | Promise<TurnAnswer>;

export interface TurnHost {
  call<T>(tool: string, args: unknown, options?: { timeoutMs?: number; signal?: AbortSignal }): Promise<T>;
  /** Server clock minus local clock, ms. */
  clockOffsetMs(): number;
  log(level: 'debug' | 'info' | 'warn' | 'error', message: string, details?: unknown): void;
}

export interface TurnRunnerOptions {
  /** Time kept between the handler's cut-off and the deadline; default 10 % of the turn, 250 ms–5 s. */
  marginMs?: number;
  /** Skip reason when the handler runs out of time (default: a generic one naming the margin). */
  timeoutReason?: string;
}

/** Longest skip reason the server takes (SPEC §7). */
export const SKIP_REASON_MAX = 200;

/** A reason cut to what skip_response accepts (one line, ≤ 200 characters). */
export function skipReason(text: string): string {
  const line = text.replace(/\s+/g, ' ').trim();
  const chars = [...line];
  return chars.length > SKIP_REASON_MAX ? `${chars.slice(0, SKIP_REASON_MAX - 1).join('')}…` : line;
}

interface RoomTurnState {
  running: boolean;
  /** An agent_turn came in while the handler ran: check for a turn again afterwards. */
  again: boolean;
  controller: AbortController | null;
  /** round_id and deadline of the turn being worked on (a resent agent_turn of it changes nothing). */
  current: string | null;
}

function turnKey(turn: Pick<AgentTurnData, 'round_id' | 'deadline'>): string {
  return `${turn.round_id}@${turn.deadline}`;
}

export function defaultMargin(timeoutMs: number): number {
  return Math.min(5000, Math.max(250, Math.round(timeoutMs * 0.1)));
}

export class TurnRunner {
  private readonly rooms = new Map<string, RoomTurnState>();
  private stopped = false;

  constructor(
    private readonly host: TurnHost,
    private readonly handler: TurnHandler,
    private readonly options: TurnRunnerOptions = {},
  ) {}

  /** An agent_turn for this participant arrived. */
  onAgentTurn(roomId: string, data: AgentTurnData): void {
    if (this.stopped) return;
    let state = this.rooms.get(roomId);
    if (!state) this.rooms.set(roomId, (state = { running: false, again: false, controller: null, current: null }));
    if (state.running) {
      // The same turn again (sent after auth_ok and again after subscribe): already in hand.
      if (state.current !== turnKey(data)) state.again = true;
      return;
    }
    void this.run(roomId, state, data);
  }

  stop(): void {
    this.stopped = true;
    for (const state of this.rooms.values()) state.controller?.abort();
  }

  private async run(roomId: string, state: RoomTurnState, first: AgentTurnData): Promise<void> {
    state.running = true;
    try {
      let turn: Pick<AgentTurnData, 'round_id' | 'can_skip' | 'deadline' | 'reason' | 'timeout_ms'> | null = first;
      while (turn && !this.stopped) {
        state.again = false;
        state.current = turnKey(turn);
        await this.take(roomId, state, turn);
        if (!state.again || this.stopped) break;
        // A turn event came while we worked (a new turn, a mention, end_turn: false): ask.
        const context = await this.host.call<TurnContext>('get_context', { room_id: roomId, limit: 1 }).catch(() => null);
        const yours = context?.your_turn;
        turn = yours?.deadline ? { ...yours, deadline: yours.deadline, timeout_ms: turn.timeout_ms } : null;
      }
    } catch (err) {
      this.host.log('error', 'turn failed', { room_id: roomId, err: String(err) });
    } finally {
      state.running = false;
      state.controller = null;
      state.current = null;
    }
  }

  private async take(
    roomId: string,
    state: RoomTurnState,
    turn: Pick<AgentTurnData, 'round_id' | 'can_skip' | 'deadline' | 'reason' | 'timeout_ms'>,
  ): Promise<void> {
    const localDeadline = Date.parse(turn.deadline) - this.host.clockOffsetMs();
    const margin = this.options.marginMs ?? defaultMargin(turn.timeout_ms);
    const cutOff = localDeadline - margin;
    let canSkip = turn.can_skip;
    const controller = new AbortController();
    state.controller = controller;
    const timer = setTimeout(() => controller.abort(new ChatroomError('timeout', 'turn deadline near')), Math.max(0, cutOff - Date.now()));
    let answer: TurnAnswer;
    let gaveUp = false;
    let failure = '';
    try {
      const context = await this.host.call<TurnContext>('get_context', { room_id: roomId }, { signal: controller.signal });
      const yours = context.your_turn;
      if (!yours) return; // stale: the turn moved on meanwhile
      canSkip = yours.can_skip;
      const info: TurnInfo = {
        room_id: roomId,
        round_id: yours.round_id,
        can_skip: yours.can_skip,
        deadline: yours.deadline ?? turn.deadline,
        reason: yours.reason,
        timeout_ms: turn.timeout_ms,
        context,
        signal: controller.signal,
      };
      answer = await raceAbort(Promise.resolve().then(() => this.handler(info)), controller.signal);
    } catch (err) {
      gaveUp = true;
      const timedOut = controller.signal.aborted;
      failure = timedOut
        ? this.options.timeoutReason ?? `no answer in time (stopped ${Math.round(margin / 100) / 10} s before the deadline)`
        : `error: ${err instanceof Error ? err.message : String(err)}`;
      this.host.log(timedOut ? 'warn' : 'error', timedOut ? 'turn handler ran out of time' : 'turn handler failed', {
        room_id: roomId,
        err: err instanceof Error ? err.message : String(err),
      });
    } finally {
      clearTimeout(timer);
    }
    if (this.stopped && !gaveUp) return;
    if (gaveUp || answer === undefined) {
      if (gaveUp && canSkip) await this.skip(roomId, failure);
      return;
    }
    if ('skip' in answer) {
      if (canSkip) await this.skip(roomId, answer.reason);
      else this.host.log('warn', 'handler asked to skip a turn that cannot be skipped', { room_id: roomId });
      return;
    }
    if (answer.text.trim() === '') {
      if (canSkip) await this.skip(roomId);
      return;
    }
    await this.send(roomId, answer, localDeadline);
  }

  private async skip(roomId: string, reason?: string): Promise<void> {
    const why = reason ? skipReason(reason) : '';
    try {
      await this.host.call('skip_response', { room_id: roomId, ...(why ? { reason: why } : {}) });
    } catch (err) {
      const code = (err as ChatroomError).code;
      // A server older than SPEC v2 refuses the `reason` argument: pass the turn all the same.
      if (why && code === 'validation_error') {
        this.host.log('warn', 'server refused the skip reason; skipping without it', { room_id: roomId, reason: why });
        return this.skip(roomId);
      }
      this.host.log('warn', 'skip_response failed', { room_id: roomId, code });
    }
  }

  /** Sends the answer; a send lost with the connection is retried with the same client_msg_id. */
  private async send(roomId: string, answer: { text: string; mentions?: string[]; end_turn?: boolean }, localDeadline: number): Promise<void> {
    const args = {
      room_id: roomId,
      text_content: answer.text,
      ...(answer.mentions?.length ? { mentions: answer.mentions } : {}),
      ...(answer.end_turn === false ? { end_turn: false } : {}),
      client_msg_id: randomUUID(),
    };
    for (;;) {
      try {
        await this.host.call('send_message', args, { timeoutMs: Math.max(1000, localDeadline - Date.now()) });
        return;
      } catch (err) {
        const code = (err as ChatroomError).code;
        if (code === 'connection_lost' && Date.now() < localDeadline && !this.stopped) continue;
        this.host.log('warn', 'send_message failed', { room_id: roomId, code, message: (err as Error).message });
        return;
      }
    }
  }
}

/** Resolves with the promise, or rejects as soon as the signal aborts. */
export function raceAbort<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason ?? new ChatroomError('aborted', 'aborted'));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason ?? new ChatroomError('aborted', 'aborted'));
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (err: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(err);
      },
    );
  });
}
