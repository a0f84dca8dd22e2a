// Round state as stored in rooms.json (`current_round`, SPEC §4 and §6). The turn engine owns
// these shapes; field names are the contract's.
import type { ErrorCode } from '../errors.js';

export type RoundKind = 'rotation' | 'host' | 'host_floor';
export type TurnReason = 'rotation' | 'mention' | 'host';
export type RoundEndReason = 'completed' | 'mention_chain' | 'superseded' | 'room_empty' | 'guard';

export interface TurnState {
  /** Name of the agent that holds the turn. */
  agent: string;
  can_skip: boolean;
  reason: TurnReason;
  /** ISO 8601 UTC; null while the room is paused (no timer runs). */
  deadline: string | null;
  /** Visible posts made in this turn with `end_turn: false`. */
  posted: number;
  /** How many times `extend_turn` was used in this turn (at most 3). */
  extensions?: number;
}

/** Fields every round has, running or ended. */
interface RoundBase {
  round_id: string;
  kind: RoundKind;
  start_time: string;
  current_agent_index: number;
  agent_queue: string[];
  /** Names still to answer in the current mention chain, in order (always [] once ended). */
  pending_mentions: string[];
  /** Visible agent answers since the last person message or start_round. */
  guard_count: number;
  // Optional engine bookkeeping (absent in rooms stored before these existed = 0/false/[]).
  /** Visible agent answers in this round. */
  answers?: number;
  /**
   * Agents that gave a visible answer in this round, each once, in order of their first answer
   * (rule 6.1.1: a follow-up round needs two different ones). Absent in rounds stored before v2:
   * read as [] (who answered is unknown, so such a round is never followed up).
   */
  answered_by?: string[];
  /** The guard tripped; cleared by a person's visible message or start_round. */
  guard_tripped?: boolean;
}

/**
 * A round in progress. `turn` is null only between turns while the room is paused (the turn
 * moved on by pass_turn or the holder leaving; resume issues the next one), so it cannot be
 * narrowed to TurnState without lying about stored rooms.
 */
export interface RunningRound extends RoundBase {
  completed: false;
  /** Who holds the turn now. */
  turn: TurnState | null;
  end_reason?: never;
  follow_up?: never;
}

/**
 * A round that ended. It stays stored as `current_round` so the guard counter survives between
 * rounds; nobody holds a turn in it.
 */
export interface EndedRound extends RoundBase {
  completed: true;
  turn: null;
  /** Why the round ended. */
  end_reason: RoundEndReason;
  /**
   * A follow-up round is due (rule 6.1.1, third trigger: visible answers from ≥ 2 different
   * agents); it starts once ≥ 2 of the room's agents are online. Absent in older rooms = false.
   */
  follow_up?: boolean;
}

/**
 * Round state as stored in rooms.json, discriminated on `completed`. The JSON shape is the same
 * for both; only the combinations that cannot occur (an ended round with a holder, a running
 * round with an end reason) are no longer writable.
 */
export type CurrentRound = RunningRound | EndedRound;

// ── The engine's API (src/rounds/engine.ts implements `applyAction`) ──
//
// applyAction(view, state, action, ctx) → EngineResult. Pure: no clock, no I/O, no randomness
// (time, presence and id generation come in through `ctx`). The driver builds `view` from the
// stored room before each call, feeds actions, persists `state`, then carries out `effects` in
// order.

/** What the engine reads about the room; built fresh by the driver for every call. */
export interface RoomView {
  mode: 'default' | 'host';
  status: 'active' | 'paused';
  /** Names of agent members, in join order (after the change the action reports). */
  agents: readonly string[];
  /** Name of the host member (host mode matters), or null when the room is empty. */
  host: string | null;
  hostIsAgent: boolean;
  maxAutoRounds: number;
  /** Effective turn timeout: the room's `turn_timeout_ms` or the server's TURN_TIMEOUT_MS. */
  turnTimeoutMs: number;
  /** Room language (e.g. "zh-CN"), for the texts of records and the guard's system message. */
  language: string;
  /** Highest seq in the room log (including the message the action reports). */
  lastSeq: number;
  /** Highest seq of a visible person (role `user`) message, 0 if none. */
  lastPersonSeq: number;
}

/** The persisted part: maps 1:1 onto RoomRecord fields. */
export interface RoundState {
  current_round: CurrentRound | null;
  history_rounds: string[];
  processed_through_seq: number;
  /**
   * Agents mentioned by people's messages posted while the room was paused and idle (rule
   * 6.1.9), merged in order without duplicates. The round that starts on resume puts this block
   * first as its pending mention chain; every round start empties it. Stored as the room's
   * `paused_mentions` (absent = []), so it survives a restart.
   */
  paused_mentions: string[];
}

export type EngineAction =
  /** A visible message was posted (seq already assigned, included in view.lastSeq). */
  | {
      type: 'message';
      sender: string;
      role: 'ai_agent' | 'user' | 'system';
      /** Room admins (creator, host) may always post. */
      isAdmin: boolean;
      seq: number;
      /** Member names mentioned, text mentions first, deduplicated (may include the sender). */
      mentions: readonly string[];
      /** false = post and keep the turn. */
      endTurn: boolean;
    }
  /** `reason` (≤ 200 characters, checked by the tool layer) goes into the skip record's text. */
  | { type: 'skip'; agent: string; reason?: string }
  /** The armed deadline passed. */
  | { type: 'timeout' }
  | { type: 'member_joined'; name: string; role: 'ai_agent' | 'user' }
  | { type: 'member_left'; name: string; role: 'ai_agent' | 'user' }
  /** An agent became online (presence change); may start a round (rule 6.1.1). */
  | { type: 'came_online'; name: string }
  /** view.status holds the new status. */
  | { type: 'status_changed' }
  /** view.mode holds the new mode: a running round ends cleanly. */
  | { type: 'mode_changed' }
  /**
   * `byPerson`: the caller is a person (role `user`). Only a person's start_round resets the
   * loop guard; an agent's (an admin agent, permission checked by the caller) is refused with
   * `conflict` (`details.reason: "guard"`) while the guard is tripped (SPEC §3, §6.1.11).
   */
  | { type: 'start_round'; by: string; byPerson: boolean }
  | { type: 'pass_turn'; by: string }
  | { type: 'extend_turn'; agent: string }
  /** Server start: the turn holder keeps the turn with a fresh full deadline. */
  | { type: 'restart' };

export interface EngineContext {
  /** Milliseconds since the epoch. */
  now: number;
  /**
   * Agents online right now. Checked when a turn is issued (offline → passed), and for automatic
   * round starts: an unanswered message waits until some agent is online, a follow-up until two
   * of the room's agents are (rule 6.1.1).
   */
  online: ReadonlySet<string>;
  newRoundId: () => string;
}

export type EngineEffect =
  | { type: 'round_start'; round_id: string; agent_queue: string[]; kind: RoundKind; mode: 'default' | 'host' }
  | {
      type: 'agent_turn';
      round_id: string;
      agent_name: string;
      can_skip: boolean;
      reason: TurnReason;
      deadline: string;
      timeout_ms: number;
      /** The round's queue, index and pending chain when the turn was issued (copies, §8). */
      agent_queue: string[];
      current_agent_index: number;
      pending_mentions: string[];
    }
  | { type: 'round_end'; round_id: string; reason: RoundEndReason }
  /** Write an invisible record for `agent` (skip_reason skip|timeout|offline|passed). */
  | { type: 'record'; agent: string; skip_reason: 'skip' | 'timeout' | 'offline' | 'passed'; text: string; round_id: string }
  /** Write a visible system message (the guard tripped). */
  | { type: 'system_message'; text: string; round_id: string | null }
  /** Arm the room's single timer at `deadline` (ISO), or cancel it when null. */
  | { type: 'timer'; deadline: string | null };

export type EngineResult =
  | { ok: true; state: RoundState; effects: EngineEffect[] }
  | { ok: false; code: ErrorCode; message: string; details?: unknown };
