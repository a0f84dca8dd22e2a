// One step of the pure turn engine against a room draft: builds the engine's view, runs
// `applyAction`, and turns its effects into the messages to write and the events to publish.
// Pure apart from the injected clock and id source; it changes only the draft it is given.
import equal from 'fast-deep-equal';
import { v4 as uuidv4 } from 'uuid';
import type { AgentTurnData, RoomEvent } from '../protocol/events.js';
import { engineMessage } from '../rounds/engine-messages.js';
import { applyAction } from '../rounds/engine.js';
import type { EngineAction, EngineEffect, RoomView } from '../rounds/types.js';
import type { Message, RoomRecord } from '../types.js';
import { presentMessage, presentRoomUpdate } from '../rooms/present.js';

/**
 * How many ended rounds a room remembers with their reasons (`recent_round_ends`). One action
 * ends at most two (a host round superseded, then the next one ending at once); a few more
 * cover a batch of commands, or a node a few commits behind. The entries ride in every stored
 * state (and in the notifications that carry it), so the list stays short.
 */
export const RECENT_ROUND_ENDS = 4;

export interface StepEnv {
  now: number;
  /** Names of the room's agents that are online now. */
  online: ReadonlySet<string>;
  /** Server default turn timeout (a room's settings.turn_timeout_ms overrides it). */
  turnTimeoutMs: number;
  newId?: () => string;
}

export interface StepInput {
  /** The draft to change (a private copy of the room). */
  room: RoomRecord;
  /** Highest seq written so far, including messages of this batch not yet committed. */
  lastSeq: number;
  /** Highest seq of a visible person message (including this batch). */
  lastPersonSeq: number;
}

export type StepResult =
  | {
      ok: true;
      /** Records and system messages the engine asked for, numbered after lastSeq. */
      messages: Message[];
      /** Events in the order they must be published (message_new of `messages` included). */
      events: RoomEvent[];
      effects: EngineEffect[];
      /** The round state changed (the room must be stored). */
      changed: boolean;
      /** The deadline the room's timer must be armed at after commit (null = none; undefined = unchanged). */
      timer: string | null | undefined;
      /** Names of agents given a turn by this step (wait_for_turn wakes them). */
      turnsIssued: string[];
    }
  | { ok: false; code: import('../errors.js').ErrorCode; message: string; details?: unknown };

export function engineView(room: RoomRecord, input: Omit<StepInput, 'room'>, turnTimeoutMs: number): RoomView {
  const host = room.members.find((m) => m.is_host) ?? null;
  return {
    mode: room.interaction_mode,
    status: room.system_status,
    agents: room.members.filter((m) => m.role === 'ai_agent').map((m) => m.name),
    host: host?.name ?? null,
    hostIsAgent: host?.role === 'ai_agent',
    maxAutoRounds: room.settings.max_auto_rounds,
    turnTimeoutMs: room.settings.turn_timeout_ms ?? turnTimeoutMs,
    language: room.language,
    lastSeq: input.lastSeq,
    lastPersonSeq: input.lastPersonSeq,
  };
}

export function runEngine(input: StepInput, action: EngineAction, env: StepEnv): StepResult {
  const { room } = input;
  const newId = env.newId ?? uuidv4;
  // What the engine may change, kept to compare after the step (the engine returns new objects
  // and never changes these in place, engine-core.ts): `history_rounds` only ever grows at its
  // end, so its length and last id stand for it. (`recent_round_ends` changes only with a
  // round's end, which grows `history_rounds`.) Compared field by field: serialising them twice
  // a step was a measurable part of a send (issue 40).
  const before = {
    round: room.current_round,
    historyLength: room.history_rounds.length,
    lastRound: room.history_rounds.at(-1),
    processed: room.processed_through_seq,
    paused: room.paused_mentions ?? [],
  };
  const result = applyAction(
    engineView(room, input, env.turnTimeoutMs),
    {
      current_round: room.current_round,
      history_rounds: room.history_rounds,
      processed_through_seq: room.processed_through_seq,
      paused_mentions: room.paused_mentions ?? [],
    },
    action,
    { now: env.now, online: env.online, newRoundId: newId },
  );
  if (!result.ok) return result;
  room.current_round = result.state.current_round;
  room.history_rounds = result.state.history_rounds;
  room.processed_through_seq = result.state.processed_through_seq;
  if (result.state.paused_mentions.length > 0) room.paused_mentions = result.state.paused_mentions;
  else delete room.paused_mentions;
  // The reasons of the rounds this step ended, for nodes that rebuild its events from the
  // stored state (change-events.ts): the ended round may be replaced at once by the next one.
  const ended = result.effects.flatMap((e) => (e.type === 'round_end' ? [{ round_id: e.round_id, reason: e.reason }] : []));
  if (ended.length > 0) room.recent_round_ends = [...(room.recent_round_ends ?? []), ...ended].slice(-RECENT_ROUND_ENDS);
  const changed =
    room.history_rounds.length !== before.historyLength ||
    room.history_rounds.at(-1) !== before.lastRound ||
    room.processed_through_seq !== before.processed ||
    !equal(room.paused_mentions ?? [], before.paused) ||
    !equal(room.current_round, before.round);

  const messages: Message[] = [];
  const events: RoomEvent[] = [];
  const turnsIssued: string[] = [];
  let timer: string | null | undefined;
  let seq = input.lastSeq + 1;
  const timestamp = new Date(env.now).toISOString();
  for (const effect of result.effects) {
    switch (effect.type) {
      case 'record':
      case 'system_message': {
        const message = engineMessage(room, effect, { message_id: newId(), seq: seq++, timestamp });
        messages.push(message);
        events.push({ event: 'message_new', room_id: room.room_id, data: { message } });
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
      case 'agent_turn':
        turnsIssued.push(effect.agent_name);
        events.push({ event: 'agent_turn', room_id: room.room_id, data: agentTurnFromEffect(room, effect) });
        break;
      case 'timer':
        timer = effect.deadline;
        break;
      default: {
        const never: never = effect;
        throw new Error(`unknown effect ${JSON.stringify(never)}`);
      }
    }
  }
  // The round's queue moves to clients with round_start/round_end (room_update) and with each
  // agent_turn. A post that changes it during a turn (an @mention adds agents, SPEC §6.1) issues
  // neither, so the new queue goes out as a room_update: clients never guess it (SPEC §8).
  const roundBoundary = result.effects.some((e) => e.type === 'round_start' || e.type === 'round_end');
  const turnIssued = result.effects.some((e) => e.type === 'agent_turn');
  if (roundBoundary || (!turnIssued && !sameQueue(room.current_round, before.round))) {
    events.push({ event: 'room_update', room_id: room.room_id, data: { room: presentRoomUpdate(room) } });
  }
  // Records are announced with the processed marks of the room as it is now.
  for (const event of events) {
    if (event.event === 'message_new') event.data.message = presentMessage(event.data.message, room);
  }
  return { ok: true, messages, events, effects: result.effects, changed, timer, turnsIssued };
}

/** The running round's queue as clients see it is the same in both. */
function sameQueue(a: RoomRecord['current_round'], b: RoomRecord['current_round']): boolean {
  if (!a || !b) return a === b;
  return a.round_id === b.round_id && a.current_agent_index === b.current_agent_index && equal(a.agent_queue, b.agent_queue) && equal(a.pending_mentions, b.pending_mentions);
}

/** The agent_turn event of an engine effect (the queue fields as the engine issued the turn). */
function agentTurnFromEffect(room: RoomRecord, effect: Extract<EngineEffect, { type: 'agent_turn' }>): AgentTurnData {
  const { type: _type, ...turn } = effect;
  return { ...turn, agent_id: room.members.find((m) => m.name === effect.agent_name)?.participant_id ?? '' };
}
