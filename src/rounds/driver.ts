// Feeds real events to the pure turn engine and carries out what it decides: builds the
// RoomView from the stored room, writes skip/timeout records and system messages, stores the
// round state with the change that caused it, arms one timer per room, and publishes the
// resulting events in commit order.
import { v4 as uuidv4 } from 'uuid';
import type { RoomEvent } from '../events/bus.js';
import type { Presence, Timers } from '../identity/presence.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../observability/metrics.js';
import type { Committer } from '../rooms/commit.js';
import { presentMessage, presentRoom } from '../rooms/present.js';
import type { Store } from '../storage/store.js';
import type { Message, RoomRecord } from '../types.js';
import { applyAction } from './engine.js';
import { engineMessage } from './engine-messages.js';
import type { EngineAction, EngineEffect, RoomView } from './types.js';

export interface DriverOptions {
  store: Store;
  committer: Committer;
  presence: Presence;
  /** Server default; a room's settings.turn_timeout_ms overrides it. */
  turnTimeoutMs: number;
  now: () => number;
  timers: Timers;
  logger: Logger;
  metrics?: Metrics;
}

export interface ApplyExtras {
  /** Messages the caller created in this tick (seqs from store.nextSeq), committed and announced first. */
  lead?: Message[];
  /** Events of the caller's own change, published before the engine's. */
  leadEvents?: RoomEvent[];
  /** The caller changed the room record itself (members, status…): store it even if the round did not change. */
  roomChanged?: boolean;
}

export type ApplyOutcome =
  | { ok: true; done: Promise<void>; effects: EngineEffect[] }
  | { ok: false; code: import('../errors.js').ErrorCode; message: string; details?: unknown };

type TurnListener = (roomId: string, agentName: string) => void;

export class RoundsDriver {
  private readonly timers = new Map<string, unknown>();
  private readonly lastPersonSeq = new Map<string, number>();
  private readonly turnListeners = new Set<TurnListener>();
  private stopped = false;

  constructor(private readonly opts: DriverOptions) {}

  /** After a restart: every turn holder keeps its turn with a fresh full deadline (rule 6.1.10). */
  restoreAll(): Promise<void>[] {
    const pending: Promise<void>[] = [];
    for (const room of this.opts.store.listRooms()) {
      if (room.current_round?.turn && !room.current_round.completed) {
        const outcome = this.apply(room, { type: 'restart' });
        if (outcome.ok) pending.push(outcome.done);
      }
    }
    return pending;
  }

  stop(): void {
    this.stopped = true;
    for (const handle of this.timers.values()) this.opts.timers.clearTimeout(handle);
    this.timers.clear();
  }

  /** Called whenever a turn is issued (wait_for_turn and hubs listen). */
  onTurn(listener: TurnListener): () => void {
    this.turnListeners.add(listener);
    return () => this.turnListeners.delete(listener);
  }

  view(room: RoomRecord, lead: readonly Message[] = []): RoomView {
    const host = room.members.find((m) => m.is_host) ?? null;
    let lastSeq = this.opts.store.nextSeq(room.room_id) - 1;
    for (const m of lead) lastSeq = Math.max(lastSeq, m.seq);
    return {
      mode: room.interaction_mode,
      status: room.system_status,
      agents: room.members.filter((m) => m.role === 'ai_agent').map((m) => m.name),
      host: host?.name ?? null,
      hostIsAgent: host?.role === 'ai_agent',
      maxAutoRounds: room.settings.max_auto_rounds,
      turnTimeoutMs: room.settings.turn_timeout_ms ?? this.opts.turnTimeoutMs,
      language: room.language,
      lastSeq,
      lastPersonSeq: this.personSeq(room.room_id, lead),
    };
  }

  /**
   * Applies one action. Synchronous up to the decision, so the caller can refuse at once; on
   * success the room record is already updated in memory and `done` resolves once the change
   * (lead messages, records, room state) is durable.
   */
  apply(room: RoomRecord, action: EngineAction, extras: ApplyExtras = {}): ApplyOutcome {
    const lead = extras.lead ?? [];
    const roundBefore = room.current_round && !room.current_round.completed ? room.current_round.round_id : null;
    const view = this.view(room, lead);
    const online = new Set(
      room.members
        .filter((m) => m.role === 'ai_agent' && this.opts.presence.isOnline(m.participant_id))
        .map((m) => m.name),
    );
    const result = applyAction(
      view,
      {
        current_round: room.current_round,
        history_rounds: room.history_rounds,
        processed_through_seq: room.processed_through_seq,
        paused_mentions: room.paused_mentions ?? [],
      },
      action,
      { now: this.opts.now(), online, newRoundId: () => uuidv4() },
    );
    if (!result.ok) return result;

    this.countTurns(room, action, result.effects);
    // Most posts leave the round state as it was; then the room snapshot need not be rewritten.
    const roundChanged =
      result.state.processed_through_seq !== room.processed_through_seq ||
      result.state.history_rounds.length !== room.history_rounds.length ||
      result.state.paused_mentions.join('\n') !== (room.paused_mentions ?? []).join('\n') ||
      JSON.stringify(result.state.current_round) !== JSON.stringify(room.current_round);
    room.current_round = result.state.current_round;
    room.history_rounds = result.state.history_rounds;
    room.processed_through_seq = result.state.processed_through_seq;
    if (result.state.paused_mentions.length > 0) room.paused_mentions = result.state.paused_mentions;
    else delete room.paused_mentions;
    for (const m of lead) {
      this.notePerson(room.room_id, m);
      // A message belongs to the round it was posted in; an agent's message that opened an
      // idle room belongs to the round it started.
      m.round_id = roundBefore ?? (m.role === 'ai_agent' ? (room.current_round?.round_id ?? null) : null);
    }

    const messages = [...lead];
    // The caller's own messages are announced as they are now (processed marks included).
    const events: RoomEvent[] = [
      ...lead.map((m): RoomEvent => ({ event: 'message_new', room_id: room.room_id, data: { message: presentMessage(m, room) } })),
      ...(extras.leadEvents ?? []),
    ];
    const turnsIssued: string[] = [];
    let seq = view.lastSeq + 1;
    for (const effect of result.effects) {
      switch (effect.type) {
        case 'record':
        case 'system_message': {
          const message = engineMessage(room, effect, {
            message_id: uuidv4(),
            seq: seq++,
            timestamp: new Date(this.opts.now()).toISOString(),
          });
          messages.push(message);
          events.push({ event: 'message_new', room_id: room.room_id, data: { message: presentMessage(message, room) } });
          break;
        }
        case 'round_start':
          events.push({
            event: 'round_start',
            room_id: room.room_id,
            data: { round_id: effect.round_id, agent_queue: effect.agent_queue, mode: effect.mode, kind: effect.kind },
          });
          break;
        case 'round_end':
          events.push({ event: 'round_end', room_id: room.room_id, data: { round_id: effect.round_id, reason: effect.reason } });
          break;
        case 'agent_turn': {
          const member = room.members.find((m) => m.name === effect.agent_name);
          events.push({
            event: 'agent_turn',
            room_id: room.room_id,
            data: {
              round_id: effect.round_id,
              agent_id: member?.participant_id ?? '',
              agent_name: effect.agent_name,
              can_skip: effect.can_skip,
              reason: effect.reason,
              deadline: effect.deadline,
              timeout_ms: effect.timeout_ms,
            },
          });
          turnsIssued.push(effect.agent_name);
          break;
        }
        case 'timer':
          this.arm(room.room_id, effect.deadline);
          break;
        default: {
          const never: never = effect;
          throw new Error(`unknown effect ${JSON.stringify(never)}`);
        }
      }
    }
    if (result.effects.some((e) => e.type === 'round_start' || e.type === 'round_end')) {
      events.push({ event: 'room_update', room_id: room.room_id, data: { room: presentRoom(room) } });
    }

    const roomChanged = roundChanged || extras.roomChanged === true;
    const done = this.opts.committer.commit(room.room_id, { ...(roomChanged ? { room } : {}), messages, events });
    if (turnsIssued.length > 0) {
      void done.then(
        () => {
          for (const name of turnsIssued) for (const listener of this.turnListeners) listener(room.room_id, name);
        },
        () => undefined,
      );
    }
    return { ok: true, done, effects: result.effects };
  }

  /** Feeds the turn counters: new turns issued, answers, and how turns were passed. */
  private countTurns(room: RoomRecord, action: EngineAction, effects: readonly EngineEffect[]): void {
    const metrics = this.opts.metrics;
    if (!metrics) return;
    const before = room.current_round && !room.current_round.completed ? room.current_round : null;
    if (action.type === 'message' && action.role === 'ai_agent' && action.endTurn && (before === null || before.turn?.agent === action.sender)) {
      metrics.turns.inc({ outcome: 'answered' });
    }
    let holder = before?.turn ? `${before.round_id}/${before.turn.agent}` : null;
    for (const effect of effects) {
      if (effect.type === 'agent_turn') {
        const next = `${effect.round_id}/${effect.agent_name}`;
        if (next !== holder) metrics.turns.inc({ outcome: 'issued' });
        holder = next;
      } else if (effect.type === 'record') {
        holder = null;
        const outcome = effect.skip_reason === 'skip' ? 'skipped' : effect.skip_reason === 'timeout' ? 'timed_out' : effect.skip_reason;
        metrics.turns.inc({ outcome });
      } else if (effect.type === 'round_start' || effect.type === 'round_end') {
        metrics.rounds.inc({ event: effect.type === 'round_start' ? 'started' : 'ended' });
      }
    }
  }

  private arm(roomId: string, deadline: string | null): void {
    const existing = this.timers.get(roomId);
    if (existing !== undefined) this.opts.timers.clearTimeout(existing);
    this.timers.delete(roomId);
    if (deadline === null || this.stopped) return;
    const delay = Math.max(0, Date.parse(deadline) - this.opts.now());
    this.timers.set(
      roomId,
      this.opts.timers.setTimeout(() => this.fire(roomId, deadline), delay),
    );
  }

  private fire(roomId: string, deadline: string): void {
    this.timers.delete(roomId);
    const room = this.opts.store.getRoom(roomId);
    const turn = room?.current_round?.turn;
    // A stale timer (the turn moved on or the deadline was extended) does nothing.
    if (!room || !turn || turn.deadline !== deadline || room.current_round?.completed) return;
    if (this.opts.now() < Date.parse(deadline)) {
      this.arm(roomId, deadline);
      return;
    }
    const outcome = this.apply(room, { type: 'timeout' });
    if (outcome.ok) {
      outcome.done.catch((err: unknown) => this.opts.logger.error({ err, roomId }, 'storing a timeout failed'));
    }
  }

  private personSeq(roomId: string, lead: readonly Message[]): number {
    let known = this.lastPersonSeq.get(roomId);
    if (known === undefined) {
      known = 0;
      const all = this.opts.store.roomMessages(roomId);
      for (let i = all.length - 1; i >= 0; i--) {
        const m = all[i]!;
        if (m.role === 'user' && m.visible && !m.deleted) {
          known = m.seq;
          break;
        }
      }
      this.lastPersonSeq.set(roomId, known);
    }
    for (const m of lead) if (m.role === 'user' && m.visible) known = Math.max(known, m.seq);
    return known;
  }

  private notePerson(roomId: string, message: Message): void {
    if (message.role === 'user' && message.visible) {
      this.lastPersonSeq.set(roomId, Math.max(this.lastPersonSeq.get(roomId) ?? 0, message.seq));
    }
  }
}
