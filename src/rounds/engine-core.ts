// Building blocks of the turn engine (see engine.ts for the rules and the decisions). Every
// function here works on a `Work`: a private deep copy of the round state plus the list of
// effects emitted so far. They mutate that copy only, never the caller's input.
import { guardNotice, recordText, type RecordReason } from '../i18n/room-texts.js';
import type {
  CurrentRound,
  EndedRound,
  EngineContext,
  EngineEffect,
  RoomView,
  RoundEndReason,
  RoundKind,
  RoundState,
  RunningRound,
  TurnReason,
} from './types.js';

/** extend_turn may be used at most this many times per turn. */
export const MAX_EXTENSIONS = 3;
/** The 20th post of one turn ends it as answered whatever `end_turn` says (rule 6.1.4). */
export const MAX_POSTS_PER_TURN = 20;
/** A follow-up round needs answers from this many different agents, and this many online (6.1.1). */
export const FOLLOW_UP_AGENTS = 2;

export interface Work {
  readonly view: RoomView;
  readonly ctx: EngineContext;
  /** Private deep copy; the result's state once the action succeeds. */
  readonly state: RoundState;
  readonly effects: EngineEffect[];
}

export function newWork(view: RoomView, state: RoundState, ctx: EngineContext): Work {
  return { view, ctx, state: cloneState(state), effects: [] };
}

export function cloneState(state: RoundState): RoundState {
  return {
    current_round: state.current_round ? cloneRound(state.current_round) : null,
    history_rounds: [...state.history_rounds],
    processed_through_seq: state.processed_through_seq,
    paused_mentions: [...((state.paused_mentions as string[] | undefined) ?? [])],
  };
}

/**
 * Deep copy of a stored round, normalised: rooms stored before `pending_mentions`,
 * `guard_count` or `end_reason` existed load as if those had been written ([] / 0 / completed).
 * A round stored before v2 has no `answered_by`: who answered is unknown, so it reads as [] and
 * an ended one is not followed up (its `follow_up` was decided by the v1 rule, ≥ 1 answer).
 */
export function cloneRound(r: CurrentRound): CurrentRound {
  const answeredBy = r.answered_by as string[] | undefined;
  const lists = {
    agent_queue: [...r.agent_queue],
    pending_mentions: [...((r.pending_mentions as string[] | undefined) ?? [])],
    guard_count: (r.guard_count as number | undefined) ?? 0,
    answered_by: [...(answeredBy ?? [])],
  };
  if (r.completed) {
    return {
      ...r,
      ...lists,
      turn: null,
      end_reason: (r.end_reason as RoundEndReason | undefined) ?? 'completed',
      ...(answeredBy === undefined && r.follow_up === true ? { follow_up: false } : {}),
    };
  }
  return { ...r, ...lists, turn: r.turn ? { ...r.turn } : null };
}

/** The running (not completed) round, if any. */
export function running(w: Work): RunningRound | null {
  const r = w.state.current_round;
  return r && !r.completed ? r : null;
}

export function isPaused(w: Work): boolean {
  return w.view.status === 'paused';
}

export function guardTripped(w: Work): boolean {
  return w.state.current_round?.guard_tripped === true;
}

/** A person's visible message or a person's start_round: the guard starts counting from zero. */
export function resetGuard(w: Work): void {
  const r = w.state.current_round;
  if (!r) return;
  r.guard_count = 0;
  r.guard_tripped = false;
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

/** Index of the first queue entry nobody has been asked yet. */
export function firstUnasked(r: RunningRound): number {
  return r.turn ? r.current_agent_index + 1 : r.current_agent_index;
}

/** (Re)issues the holder's turn: fresh full deadline, `agent_turn`, timer. Active rooms only. */
export function emitTurn(w: Work, r: RunningRound): void {
  const turn = r.turn!;
  turn.deadline = iso(w.ctx.now + w.view.turnTimeoutMs);
  w.effects.push({
    type: 'agent_turn',
    round_id: r.round_id,
    agent_name: turn.agent,
    can_skip: turn.can_skip,
    reason: turn.reason,
    deadline: turn.deadline,
    timeout_ms: w.view.turnTimeoutMs,
    agent_queue: [...r.agent_queue],
    current_agent_index: r.current_agent_index,
    pending_mentions: [...r.pending_mentions],
  });
  w.effects.push({ type: 'timer', deadline: turn.deadline });
}

function turnShape(r: RunningRound, name: string): { reason: TurnReason; can_skip: boolean } {
  if (r.kind === 'host') return { reason: 'host', can_skip: false };
  if (r.kind === 'host_floor') return { reason: 'host', can_skip: true };
  return r.pending_mentions.includes(name)
    ? { reason: 'mention', can_skip: false }
    : { reason: 'rotation', can_skip: true };
}

/**
 * Gives the turn to `agent_queue[current_agent_index]` when nobody holds it. Offline agents are
 * passed at once with an `offline` record, until an online agent holds the turn or the round
 * ends. While paused no turn is issued (the holder stays null, the index points at the next
 * agent to ask); resuming issues it.
 */
export function issueTurn(w: Work): void {
  for (;;) {
    const r = running(w);
    if (!r || r.turn) return;
    if (r.current_agent_index >= r.agent_queue.length) {
      endRound(w, 'completed');
      return;
    }
    const name = r.agent_queue[r.current_agent_index]!;
    if (!w.view.agents.includes(name)) {
      // Defensive: a stale entry (the member is gone) is dropped, not asked.
      r.agent_queue.splice(r.current_agent_index, 1);
      r.pending_mentions = r.pending_mentions.filter((n) => n !== name);
      continue;
    }
    if (isPaused(w)) return;
    const shape = turnShape(r, name);
    if (!w.ctx.online.has(name)) {
      w.effects.push({ type: 'record', agent: name, skip_reason: 'offline', text: recordText(w.view.language, 'offline'), round_id: r.round_id });
      r.turn = { agent: name, ...shape, deadline: null, posted: 0 };
      if (finishTurn(w, false)) return;
      continue;
    }
    r.turn = { agent: name, ...shape, deadline: null, posted: 0, extensions: 0 };
    emitTurn(w, r);
    return;
  }
}

/**
 * Ends the holder's turn (the caller has emitted any record). Counts a visible answer when
 * `answered`, closes the mention chain when the holder was its last member, else advances the
 * index. Returns true when the round ended. The caller then calls issueTurn.
 */
export function finishTurn(w: Work, answered: boolean): boolean {
  const r = running(w)!;
  const name = r.turn!.agent;
  r.turn = null;
  if (answered && countAnswer(w, name)) return true;
  const i = r.pending_mentions.indexOf(name);
  if (i >= 0) {
    r.pending_mentions.splice(i, 1);
    if (r.pending_mentions.length === 0) {
      endRound(w, 'mention_chain');
      return true;
    }
  }
  r.current_agent_index += 1;
  return false;
}

/**
 * Ends the running round: the state's `current_round` is replaced by its ended form (callers
 * must not keep using the running round object afterwards).
 */
export function endRound(w: Work, reason: RoundEndReason): void {
  const r = running(w)!;
  const ended: EndedRound = {
    ...r,
    completed: true,
    turn: null,
    end_reason: reason,
    pending_mentions: [],
    follow_up:
      w.view.mode === 'default' &&
      r.kind === 'rotation' &&
      (reason === 'completed' || reason === 'mention_chain') &&
      (r.answered_by ?? []).length >= FOLLOW_UP_AGENTS,
  };
  w.state.current_round = ended;
  if (!w.state.history_rounds.includes(r.round_id)) w.state.history_rounds.push(r.round_id);
  w.effects.push({ type: 'round_end', round_id: r.round_id, reason });
  w.effects.push({ type: 'timer', deadline: null });
}

export function startRound(w: Work, kind: RoundKind, queue: string[], index: number, pending: string[]): RunningRound {
  const prev = w.state.current_round;
  const r: RunningRound = {
    round_id: w.ctx.newRoundId(),
    kind,
    start_time: iso(w.ctx.now),
    current_agent_index: index,
    agent_queue: queue,
    completed: false,
    turn: null,
    pending_mentions: pending,
    guard_count: prev?.guard_count ?? 0,
    answers: 0,
    answered_by: [],
    guard_tripped: false,
  };
  w.state.current_round = r;
  // The remembered paused mentions are consumed by whatever round starts first (rule 6.1.9).
  w.state.paused_mentions = [];
  // Every earlier message is processed, including records/system messages this same action
  // emitted before: the driver numbers them view.lastSeq + 1, + 2, … in effect order.
  const written = w.effects.filter((e) => e.type === 'record' || e.type === 'system_message').length;
  w.state.processed_through_seq = Math.max(w.state.processed_through_seq, w.view.lastSeq + written);
  w.effects.push({ type: 'round_start', round_id: r.round_id, agent_queue: [...queue], kind, mode: w.view.mode });
  return r;
}

export function guardText(view: RoomView): string {
  return guardNotice(view.language, view.maxAutoRounds);
}

/** An engine record's text in the room's language (SPEC §6); `why` is a skip's reason. */
export function recordTextOf(w: Work, reason: RecordReason, why?: string): string {
  return recordText(w.view.language, reason, why);
}

/**
 * Counts one visible answer by `agent`. When the guard trips: a system message, and the running
 * round (if any) ends with `guard`. Returns true when a running round ended.
 */
export function countAnswer(w: Work, agent: string): boolean {
  const r = w.state.current_round;
  if (!r) return false; // no round ever ran here: nothing to protect yet
  r.guard_count += 1;
  if (!r.completed) {
    r.answers = (r.answers ?? 0) + 1;
    const by = (r.answered_by ??= []);
    if (!by.includes(agent)) by.push(agent);
  }
  if (r.guard_tripped) return false;
  if (r.guard_count < w.view.maxAutoRounds * w.view.agents.length) return false;
  r.guard_tripped = true;
  w.effects.push({ type: 'system_message', text: guardText(w.view), round_id: r.completed ? null : r.round_id });
  if (r.completed) return false;
  endRound(w, 'guard');
  return true;
}

/**
 * Rule 6.1.5 on a running rotation round: `mentioned` (agents, sender excluded, in order)
 * becomes the head of the pending chain. The block (minus the holder) is taken out of the
 * not-yet-asked part and inserted right after the holder; members of an earlier chain that are
 * still waiting stay in the chain, after the block. A mentioned holder joins the chain at its
 * head with a fresh turn (`mention`, can_skip false).
 */
export function applyMentions(w: Work, r: RunningRound, mentioned: readonly string[]): void {
  const holder = r.turn?.agent ?? null;
  const holderMentioned = holder !== null && mentioned.includes(holder);
  const block = mentioned.filter((n) => n !== holder);
  const free = firstUnasked(r);
  const tail = r.agent_queue.slice(free).filter((n) => !block.includes(n));
  r.agent_queue = [...r.agent_queue.slice(0, free), ...block, ...tail];
  const pending: string[] = [];
  if (holder !== null && (holderMentioned || r.pending_mentions.includes(holder))) pending.push(holder);
  for (const n of block) if (!pending.includes(n)) pending.push(n);
  for (const n of r.pending_mentions) if (!pending.includes(n)) pending.push(n);
  r.pending_mentions = pending;
  if (holderMentioned && r.turn) {
    r.turn.reason = 'mention';
    r.turn.can_skip = false;
    r.turn.posted = 0;
    r.turn.extensions = 0;
    if (!isPaused(w)) emitTurn(w, r);
  }
}

/**
 * A host round (rule 6.2.2): supersedes a running round; queue = the mentioned agents.
 * `counted`: answers to add to the new round's guard count before its first turn is issued.
 */
export function startHostRound(w: Work, mentioned: readonly string[], counted = 0): void {
  if (running(w)) endRound(w, 'superseded');
  startRound(w, 'host', [...mentioned], 0, []).guard_count += counted;
  issueTurn(w);
}

/** Runs after every successful action: does a round start now (rules 6.1.1, 6.2.3)? */
export function settle(w: Work): void {
  if (running(w) || isPaused(w) || w.view.agents.length === 0 || guardTripped(w)) return;
  const prev = w.state.current_round;
  if (w.view.mode === 'host') {
    // 6.2.3: a host round that ran to its end gives an agent host the floor, once.
    const host = w.view.host;
    if (prev?.kind !== 'host' || prev.end_reason !== 'completed') return;
    if (!w.view.hostIsAgent || host === null || !w.view.agents.includes(host)) return;
    startRound(w, 'host_floor', [host], 0, []);
    issueTurn(w);
    return;
  }
  // Mentions remembered from a pause start at once, as a mention in an active room does.
  const block = w.state.paused_mentions.filter((n) => w.view.agents.includes(n));
  if (block.length > 0) {
    startMentionRound(w, block);
    return;
  }
  // Automatic starts wait until some agent is online (came_online re-checks); a follow-up
  // needs two of them, so a lone agent never talks to itself.
  const online = w.view.agents.filter((a) => w.ctx.online.has(a)).length;
  if (online === 0) return;
  const unanswered = w.view.lastPersonSeq > w.state.processed_through_seq;
  const followUp = prev?.follow_up === true && online >= FOLLOW_UP_AGENTS;
  if (!unanswered && !followUp) return;
  startRound(w, 'rotation', [...w.view.agents], 0, []);
  issueTurn(w);
}

/**
 * Rule 6.1.5 in an idle room: a rotation round whose queue is the mentioned block first, then
 * the other agents in join order; the block is the pending chain.
 */
export function startMentionRound(w: Work, block: readonly string[]): void {
  const rest = w.view.agents.filter((n) => !block.includes(n));
  startRound(w, 'rotation', [...block, ...rest], 0, [...block]);
  issueTurn(w);
}
