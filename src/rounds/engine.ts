// The turn engine (SPEC §6) as a pure state machine:
//
//   applyAction(view, state, action, ctx) → { ok: true, state, effects } | { ok: false, code, … }
//
// Pure: the inputs are never mutated; time is ctx.now, presence ctx.online, ids
// ctx.newRoundId(). The driver (driver.ts) persists `state` and carries out `effects` in order.
// On `ok: false` nothing changed.
//
// ── Decisions where SPEC §6 is silent ────────────────────────────────────────────────────────
//
// State
// - `current_round` stays stored after the round ends (`completed: true`, `turn: null`) so the
//   guard counter survives between rounds. A new round copies `guard_count` forward.
// - Extra optional CurrentRound fields: `answers` (visible agent answers in this round),
//   `answered_by` (the agents that gave them, each once), `end_reason`, `follow_up` (a
//   follow-up round is due: rule 6.1.1's third trigger, decided when the round ends — ended
//   `completed` or `mention_chain`, visible answers from ≥ 2 different agents, default mode —
//   and fired only while ≥ 2 of the room's agents are online), `guard_tripped`. TurnState uses
//   `extensions`. The follow-up flag persists, so a round that ends while the room is paused
//   (or while fewer than two agents are online) is followed up on resume (or when the second
//   agent comes online).
// - Rooms stored before v2 have no `answered_by`: it loads as [] (who answered is unknown), and
//   an ended round's stored `follow_up: true` (the v1 rule: ≥ 1 answer) loads as false.
// - RoundState.paused_mentions (stored as the room's `paused_mentions`, absent = []): agents
//   mentioned by people while the room was paused and idle (rule 6.1.9), merged in order
//   without duplicates. Every round start empties it; a mode change empties it; an agent that
//   leaves is taken out of it.
// - `history_rounds` gets a round id when the round ends, never twice.
// - `processed_through_seq` only grows: a round start sets it to view.lastSeq plus the records
//   and system messages emitted earlier in the same action (the driver numbers those
//   view.lastSeq + 1, + 2, … in effect order); a mode change sets it to view.lastSeq.
//
// Guard
// - A "visible agent answer" is counted once per turn that ends answered (an `end_turn: true`
//   post, the 20th post of a turn, or skip/timeout/pass/leave after ≥ 1 `end_turn: false`
//   post), once for an agent's message that opens an idle room, and once for each message of a
//   host/admin agent posted outside a turn in host mode. `end_turn: false` posts are not
//   counted one by one.
// - It trips when guard_count ≥ max_auto_rounds × number of agents (checked when counting):
//   a visible `system_message` (zh-*: `已达到自动轮次上限（N 轮），等待用户发言或手动开始新一轮。`,
//   otherwise English) with the round's id, then `round_end` reason `guard`. Nothing starts
//   until a person's visible message or a person's start_round resets the counter and the flag
//   (SPEC §3: agents never reset it). An idle agent's message that trips the guard starts its
//   round and ends it at once with `guard`.
// - With no round ever run in the room (current_round null) nothing is counted.
//
// Starting rounds (default mode)
// - After every successful action: if no round runs, the room is active, has ≥ 1 agent and the
//   guard has not tripped, then, in this order: remembered paused mentions (those of current
//   agents) start a round with their block first, at once (as a mention in an active room
//   does, online or not); else an unanswered person message (view.lastPersonSeq >
//   processed_through_seq) starts a rotation round in join order once ≥ 1 agent is online;
//   else a due follow-up starts one once ≥ 2 of the room's agents are online. The driver's
//   `came_online` action re-checks. (Without an agent online a round would pass every agent as
//   offline and mark the message processed though nobody could answer.)
// - A person's message mentioning agents in an idle active room starts a round at once (even if
//   they are offline, they are then passed with `offline` records): queue = the mentioned block
//   first, then the remaining agents in join order; pending chain = the block, so the round ends
//   with `mention_chain` after the block (the rest are not asked unless the chain dissolves).
// - An agent's message in an idle room (no running round, active, guard not tripped) starts a
//   round in which it has answered: queue = join order rotated to start with it (its mentioned
//   agents, if any, inserted right after it as a chain), index 1. `end_turn` is ignored there.
// - A person's mentions posted into an idle *paused* room are remembered (paused_mentions); on
//   resume the round starts with their block first and the block as the pending chain. Agents
//   cannot post while paused (room_paused), so only people's mentions are remembered. A
//   person's mentions while paused with a round running change that round's queue at once.
// - In default mode agents (admins included) get `not_your_turn` outside their turn except in an
//   idle room. The engine never refuses people (the caller checks user_participation) and never
//   returns `forbidden`.
//
// Mentions (default mode)
// - Mentions are filtered to current agent members other than the sender, deduplicated, in
//   order. They are applied only to rotation rounds, and agents' mentions are ignored once the
//   guard has tripped.
// - A new chain merges with one still running: pending = [holder, if mentioned or already in
//   the chain] + new block + earlier members still waiting; the queue stays contiguous (block
//   right after the holder, then the earlier chain's waiting members).
// - A mentioned holder gets a fresh turn (`mention`, can_skip false, posted and extensions
//   reset to 0, new deadline).
// - If chain members still waiting leave so that the chain becomes empty, the chain dissolves
//   and the round continues in rotation (the `mention_chain` end happens only when the last
//   chain member finishes its own turn: answer, skip, timeout, offline, pass or leave).
//
// Turns
// - Deadline = ctx.now + view.turnTimeoutMs (ISO). Every issue/re-issue emits `agent_turn` then
//   `timer`; `agent_turn` carries copies of the round's agent_queue, current_agent_index and
//   pending_mentions as they are at that moment (SPEC §8). A round end emits `round_end` then
//   `timer: null`.
// - Posts per turn: `posted` counts the holder's `end_turn: false` posts; the post that would
//   be the 20th of the turn ends it as answered whatever `end_turn` says. A mentioned holder's
//   fresh turn (`mention`) starts counting again from 0.
// - skip reason: the record's text is `（跳过：<reason>）` with the reason trimmed; blank or
//   absent → `（跳过）` (in an English room `(skipped: <reason>)` / `(skipped)`: every record
//   text is in the room language, i18n/room-texts.ts). A skip after a visible post writes no record, so its reason is not kept.
// - Paused: status_changed→paused sets the holder's deadline to null and emits `timer: null`.
//   While paused no turn is issued: when the turn moves on (pass_turn, the holder leaves) the
//   holder becomes null and the index points at the next agent; the round can still end
//   (queue exhausted, chain end, room_empty). Resume re-issues the holder's turn (full
//   deadline, can_skip/reason unchanged, no presence check), or issues the next turn with the
//   usual presence check when nobody held it.
// - Agents' `message`, `skip` and `extend_turn` get `room_paused` while paused (checked first).
//   `pass_turn` works while paused (the next turn waits for resume). `timeout` with no armed
//   deadline (stale, or paused) is a no-op.
// - pass_turn writes a `passed` record even after `end_turn: false` posts (the turn then counts
//   as answered); `conflict` when nobody holds a turn.
// - extend_turn: holder only (`not_your_turn`), at most 3 per turn (`conflict`), fresh full
//   deadline and agent_turn; posts with end_turn:false and restarts keep the count.
// - restart: holder keeps the turn with a fresh full deadline (no presence check); nothing while
//   paused; a running round with no holder (should not happen) gets its turn issued.
// - member_joined (agent, default mode, rotation round): appended to the queue. member_left
//   (agent): removed from the not-yet-asked part and from the chain; the holder's turn moves on
//   without a record (counted as answered if it had posted); no agents left → `room_empty`.
//
// Host mode
// - Only the host's visible message mentioning agents (other than itself) starts a host round,
//   also while paused (its first turn is then issued on resume); a running round ends first with
//   `superseded`. A person host's message resets the guard as any person's; an agent host's
//   mentions are ignored once the guard tripped, including when the host's own message is the
//   answer that trips it. When the host answers its own turn (the floor) with mentions, with
//   `end_turn` true or false, that post counts as one answer and the floor round ends
//   `superseded` (rule 6.2.2: the host's message ends any running round), then the host round
//   starts.
// - A host round that ended `completed` gives an agent host (online or not: an offline host is
//   passed) the floor once (`host_floor`, reason `host`, can_skip true); not while paused (given
//   on resume) and not after `superseded`/`guard`/`room_empty`.
// - Host and admin agents may post at any time (counted for the guard); other agents only while
//   holding the turn. People's messages (other than a person host's with mentions) start
//   nothing; unanswered messages start no rounds, and nothing is remembered while paused.
// - start_round in host mode: floor for an agent host; `conflict` for a person host (or none).
//
// start_round checks, in order: `room_paused`; `conflict` while a round runs (details:
// `{ reason: 'round_running', current_round }`, the running round as stored); `conflict` with
// no agents (`{ reason: 'no_agents' }`); in host mode `conflict` unless the host is an agent
// (`{ reason: 'person_host' }`); then, when a person called it, the guard is reset; when an
// agent called it (the caller has checked it is an admin) and the guard has tripped, `conflict`
// (`{ reason: 'guard' }`), otherwise the counter carries on. It starts a join-order round
// (default mode) or the floor (host mode).
//
// Mode change
// - A running round ends with `superseded`; nothing starts, and messages up to view.lastSeq
//   count as processed (so a host-mode conversation is not re-answered by default mode).
//
// Role `system` messages change nothing.
import type { ErrorCode } from '../errors.js';
import {
  MAX_EXTENSIONS,
  MAX_POSTS_PER_TURN,
  applyMentions,
  countAnswer,
  emitTurn,
  endRound,
  finishTurn,
  firstUnasked,
  guardTripped,
  isPaused,
  issueTurn,
  newWork,
  resetGuard,
  running,
  settle,
  recordTextOf,
  startHostRound,
  startMentionRound,
  startRound,
  type Work,
} from './engine-core.js';
import type { EngineAction, EngineContext, EngineResult, RoomView, RoundState } from './types.js';

type Refusal = Extract<EngineResult, { ok: false }>;
type MessageAction = Extract<EngineAction, { type: 'message' }>;

function refuse(code: ErrorCode, message: string, details?: unknown): Refusal {
  return details === undefined ? { ok: false, code, message } : { ok: false, code, message, details };
}

export function applyAction(view: RoomView, state: RoundState, action: EngineAction, ctx: EngineContext): EngineResult {
  const w = newWork(view, state, ctx);
  const refusal = dispatch(w, action);
  if (refusal) return refusal;
  settle(w);
  return { ok: true, state: w.state, effects: w.effects };
}

function dispatch(w: Work, action: EngineAction): Refusal | undefined {
  switch (action.type) {
    case 'message':
      return onMessage(w, action);
    case 'skip':
      return onSkip(w, action.agent, action.reason);
    case 'timeout':
      return onTimeout(w);
    case 'member_joined':
      return onJoined(w, action.name, action.role);
    case 'member_left':
      return onLeft(w, action.name, action.role);
    case 'came_online':
      return undefined; // settle() re-checks rule 6.1.1
    case 'status_changed':
      return onStatus(w);
    case 'mode_changed':
      return onModeChanged(w);
    case 'start_round':
      return onStartRound(w, action.byPerson);
    case 'pass_turn':
      return onPass(w);
    case 'extend_turn':
      return onExtend(w, action.agent);
    case 'restart':
      return onRestart(w);
    default: {
      const never: never = action;
      throw new Error(`unknown engine action ${JSON.stringify(never)}`);
    }
  }
}

/** Agents mentioned by a message: members with role ai_agent, sender excluded, in order. */
function mentionedAgents(w: Work, a: MessageAction): string[] {
  const out: string[] = [];
  for (const n of a.mentions) if (n !== a.sender && w.view.agents.includes(n) && !out.includes(n)) out.push(n);
  return out;
}

function onMessage(w: Work, a: MessageAction): Refusal | undefined {
  if (a.role === 'system') return undefined;
  if (a.role === 'user') {
    onPersonMessage(w, a);
    return undefined;
  }
  if (isPaused(w)) return refuse('room_paused', 'The room is paused');
  return w.view.mode === 'host' ? onHostModeAgentMessage(w, a) : onDefaultAgentMessage(w, a);
}

function onPersonMessage(w: Work, a: MessageAction): void {
  resetGuard(w);
  const mentioned = mentionedAgents(w, a);
  if (w.view.mode === 'host') {
    if (a.sender === w.view.host && mentioned.length > 0) startHostRound(w, mentioned);
    return;
  }
  if (mentioned.length === 0) return; // unanswered: settle() starts a round when idle
  const r = running(w);
  if (r) {
    if (r.kind === 'rotation') applyMentions(w, r, mentioned);
    return;
  }
  if (isPaused(w)) {
    // Rule 6.1.9: remembered, in order, for the round that starts on resume (see settle()).
    const kept = w.state.paused_mentions;
    for (const n of mentioned) if (!kept.includes(n)) kept.push(n);
    return;
  }
  startMentionRound(w, mentioned);
}

/** The holder's post ends its turn: `end_turn` true, or the 20th post of the turn (rule 6.1.4). */
function endsTurn(a: MessageAction, posted: number): boolean {
  return a.endTurn || posted + 1 >= MAX_POSTS_PER_TURN;
}

function onDefaultAgentMessage(w: Work, a: MessageAction): Refusal | undefined {
  const r = running(w);
  if (r && r.turn?.agent === a.sender) {
    const mentioned = guardTripped(w) ? [] : mentionedAgents(w, a);
    if (mentioned.length > 0 && r.kind === 'rotation') applyMentions(w, r, mentioned);
    if (!endsTurn(a, r.turn.posted)) {
      r.turn.posted += 1;
      emitTurn(w, r);
      return undefined;
    }
    if (!finishTurn(w, true)) issueTurn(w);
    return undefined;
  }
  if (r || guardTripped(w)) return refuse('not_your_turn', 'It is not your turn');
  // Idle room: the message opens a round in which the sender has already answered.
  const agents = w.view.agents;
  const i = agents.indexOf(a.sender);
  const rotated = i >= 0 ? [...agents.slice(i), ...agents.slice(0, i)] : [a.sender, ...agents];
  const mentioned = mentionedAgents(w, a);
  const rest = rotated.slice(1).filter((n) => !mentioned.includes(n));
  startRound(w, 'rotation', [a.sender, ...mentioned, ...rest], 1, [...mentioned]);
  if (countAnswer(w, a.sender)) return undefined;
  issueTurn(w);
  return undefined;
}

function onHostModeAgentMessage(w: Work, a: MessageAction): Refusal | undefined {
  const r = running(w);
  const isHost = a.sender === w.view.host;
  const mentioned = isHost && !guardTripped(w) ? mentionedAgents(w, a) : [];
  if (r && r.turn?.agent === a.sender) {
    if (mentioned.length === 0) {
      if (!endsTurn(a, r.turn.posted)) {
        r.turn.posted += 1;
        emitTurn(w, r);
      } else if (!finishTurn(w, true)) {
        issueTurn(w);
      }
      return undefined;
    }
    // Rule 6.2.2: a host message with mentions ends any running round as `superseded`, the
    // host's own floor included (whatever `end_turn` says); it counts as one answer.
    countAnswer(w, a.sender);
  } else {
    if (!isHost && !a.isAdmin) return refuse('not_your_turn', 'It is not your turn');
    if (w.state.current_round === null && mentioned.length > 0) {
      // No round ever ran here, so there is no count yet to add to: the message is counted in
      // the round it starts (as every later host message is). It cannot trip the guard: the
      // limit is at least 2 with the host and one mentioned agent.
      startHostRound(w, mentioned, 1);
      return undefined;
    }
    countAnswer(w, a.sender);
  }
  // The answer just counted may have tripped the guard: then the mentions start nothing.
  if (mentioned.length > 0 && !guardTripped(w)) startHostRound(w, mentioned);
  return undefined;
}

function onSkip(w: Work, agent: string, reason?: string): Refusal | undefined {
  if (isPaused(w)) return refuse('room_paused', 'The room is paused');
  const r = running(w);
  if (!r || r.turn?.agent !== agent) return refuse('not_your_turn', 'It is not your turn');
  if (r.turn.posted > 0) {
    // After a visible post the skip just ends the turn, which counts as answered.
    if (!finishTurn(w, true)) issueTurn(w);
    return undefined;
  }
  if (!r.turn.can_skip) return refuse('cannot_skip', 'This turn cannot be skipped (you were mentioned)');
  w.effects.push({ type: 'record', agent, skip_reason: 'skip', text: recordTextOf(w, 'skip', reason), round_id: r.round_id });
  if (!finishTurn(w, false)) issueTurn(w);
  return undefined;
}

function onTimeout(w: Work): Refusal | undefined {
  const r = running(w);
  if (!r || !r.turn || r.turn.deadline === null || isPaused(w)) return undefined; // stale
  if (r.turn.posted > 0) {
    if (!finishTurn(w, true)) issueTurn(w);
    return undefined;
  }
  w.effects.push({ type: 'record', agent: r.turn.agent, skip_reason: 'timeout', text: recordTextOf(w, 'timeout'), round_id: r.round_id });
  if (!finishTurn(w, false)) issueTurn(w);
  return undefined;
}

function onJoined(w: Work, name: string, role: 'ai_agent' | 'user'): Refusal | undefined {
  if (role !== 'ai_agent' || w.view.mode !== 'default') return undefined;
  const r = running(w);
  if (r && r.kind === 'rotation' && !r.agent_queue.slice(firstUnasked(r)).includes(name)) r.agent_queue.push(name);
  return undefined;
}

function onLeft(w: Work, name: string, role: 'ai_agent' | 'user'): Refusal | undefined {
  if (role !== 'ai_agent') return undefined;
  // A remembered mention of an agent that left is dropped (it would not be asked anyway, and
  // must not come back to life if the agent rejoins).
  w.state.paused_mentions = w.state.paused_mentions.filter((n) => n !== name);
  const r = running(w);
  if (!r) return undefined;
  if (w.view.agents.length === 0) {
    endRound(w, 'room_empty');
    return undefined;
  }
  const free = firstUnasked(r);
  r.agent_queue = [...r.agent_queue.slice(0, free), ...r.agent_queue.slice(free).filter((n) => n !== name)];
  if (r.turn?.agent === name) {
    if (!finishTurn(w, r.turn.posted > 0)) issueTurn(w);
    return undefined;
  }
  r.pending_mentions = r.pending_mentions.filter((n) => n !== name);
  if (!r.turn) issueTurn(w); // paused between turns: the round may now be over
  return undefined;
}

function onStatus(w: Work): Refusal | undefined {
  const r = running(w);
  if (isPaused(w)) {
    if (r?.turn) r.turn.deadline = null;
    w.effects.push({ type: 'timer', deadline: null });
    return undefined;
  }
  if (!r) return undefined;
  if (!r.turn) issueTurn(w);
  else if (r.turn.deadline === null) emitTurn(w, r);
  return undefined;
}

function onModeChanged(w: Work): Refusal | undefined {
  if (running(w)) endRound(w, 'superseded');
  w.state.processed_through_seq = Math.max(w.state.processed_through_seq, w.view.lastSeq);
  w.state.paused_mentions = []; // they were default-mode mentions; host mode starts nothing from them
  return undefined;
}

function onStartRound(w: Work, byPerson: boolean): Refusal | undefined {
  if (isPaused(w)) return refuse('room_paused', 'The room is paused');
  const r = running(w);
  if (r) return refuse('conflict', 'A round is already running', { reason: 'round_running', current_round: r });
  if (w.view.agents.length === 0) return refuse('conflict', 'The room has no agents', { reason: 'no_agents' });
  let queue: string[];
  let kind: 'rotation' | 'host_floor' = 'rotation';
  if (w.view.mode === 'host') {
    const host = w.view.host;
    if (!w.view.hostIsAgent || host === null || !w.view.agents.includes(host)) {
      return refuse('conflict', 'In host mode start_round gives the floor to an agent host; this host is a person', {
        reason: 'person_host',
      });
    }
    queue = [host];
    kind = 'host_floor';
  } else {
    // start_round starts the plain rotation; mentions remembered from a pause (none can be
    // left here: the room is active and idle) would have started their round already.
    queue = [...w.view.agents];
  }
  if (byPerson) resetGuard(w);
  else if (guardTripped(w)) {
    return refuse('conflict', 'The loop guard has tripped: only a person can start the next round', { reason: 'guard' });
  }
  startRound(w, kind, queue, 0, []);
  issueTurn(w);
  return undefined;
}

function onPass(w: Work): Refusal | undefined {
  const r = running(w);
  if (!r || !r.turn) return refuse('conflict', 'Nobody holds a turn');
  const answered = r.turn.posted > 0;
  w.effects.push({ type: 'record', agent: r.turn.agent, skip_reason: 'passed', text: recordTextOf(w, 'passed'), round_id: r.round_id });
  if (!finishTurn(w, answered)) issueTurn(w);
  return undefined;
}

function onExtend(w: Work, agent: string): Refusal | undefined {
  if (isPaused(w)) return refuse('room_paused', 'The room is paused');
  const r = running(w);
  if (!r || r.turn?.agent !== agent) return refuse('not_your_turn', 'It is not your turn');
  const used = r.turn.extensions ?? 0;
  if (used >= MAX_EXTENSIONS) return refuse('conflict', `extend_turn may be used at most ${MAX_EXTENSIONS} times per turn`);
  r.turn.extensions = used + 1;
  emitTurn(w, r);
  return undefined;
}

function onRestart(w: Work): Refusal | undefined {
  const r = running(w);
  if (!r || isPaused(w)) return undefined;
  if (r.turn) emitTurn(w, r);
  else issueTurn(w);
  return undefined;
}
