// Property test: random action sequences on the room simulator; invariants after every step,
// and after draining with timeouts every round that started has ended exactly once.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { engineMessage } from '../../src/rounds/engine-messages.js';
import type { EngineEffect, EngineResult, RoundState } from '../../src/rounds/types.js';
import { Room, participantId } from './engine-sim.js';

const AGENT_POOL = ['A1', 'A2', 'A3', 'A4', 'A5'];
const PEOPLE_POOL = ['P1', 'P2', 'P3'];

type Step =
  | { t: 'post'; who: number; holder: boolean; mentions: number[]; endTurn: boolean }
  | { t: 'skip'; who: number; holder: boolean; reason: string | null }
  /** The holder posts `n` times in a row with end_turn false (reaches the 20-post cap). */
  | { t: 'burst'; n: number }
  | { t: 'extend'; who: number; holder: boolean }
  | { t: 'timeout' }
  | { t: 'join'; agent: boolean; pick: number; online: boolean }
  | { t: 'leave'; who: number }
  | { t: 'online'; who: number }
  | { t: 'offline'; who: number }
  | { t: 'pause' }
  | { t: 'resume' }
  | { t: 'start'; person: boolean; who: number }
  | { t: 'pass' }
  | { t: 'restart' }
  | { t: 'mode' }
  | { t: 'tick'; ms: number };

const idx = fc.nat({ max: 20 });
const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 30,
    arbitrary: fc.record({
      t: fc.constant('post' as const),
      who: idx,
      holder: fc.boolean(),
      mentions: fc.array(idx, { maxLength: 3 }),
      endTurn: fc.nat({ max: 9 }).map((n) => n < 7),
    }),
  },
  {
    weight: 10,
    arbitrary: fc.record({
      t: fc.constant('skip' as const),
      who: idx,
      holder: fc.boolean(),
      reason: fc.option(fc.constantFrom('', '  ', 'model error', '超时了'), { nil: null }),
    }),
  },
  { weight: 2, arbitrary: fc.record({ t: fc.constant('burst' as const), n: fc.integer({ min: 1, max: 25 }) }) },
  { weight: 3, arbitrary: fc.record({ t: fc.constant('extend' as const), who: idx, holder: fc.boolean() }) },
  { weight: 12, arbitrary: fc.constant({ t: 'timeout' as const }) },
  { weight: 4, arbitrary: fc.record({ t: fc.constant('join' as const), agent: fc.boolean(), pick: idx, online: fc.boolean() }) },
  { weight: 4, arbitrary: fc.record({ t: fc.constant('leave' as const), who: idx }) },
  { weight: 5, arbitrary: fc.record({ t: fc.constant('online' as const), who: idx }) },
  { weight: 5, arbitrary: fc.record({ t: fc.constant('offline' as const), who: idx }) },
  { weight: 2, arbitrary: fc.constant({ t: 'pause' as const }) },
  { weight: 5, arbitrary: fc.constant({ t: 'resume' as const }) },
  { weight: 3, arbitrary: fc.record({ t: fc.constant('start' as const), person: fc.boolean(), who: idx }) },
  { weight: 3, arbitrary: fc.constant({ t: 'pass' as const }) },
  { weight: 2, arbitrary: fc.constant({ t: 'restart' as const }) },
  { weight: 2, arbitrary: fc.constant({ t: 'mode' as const }) },
  { weight: 3, arbitrary: fc.record({ t: fc.constant('tick' as const), ms: fc.nat({ max: 300_000 }) }) },
);

const setup = fc.record({
  agents: fc.integer({ min: 0, max: 4 }),
  people: fc.integer({ min: 0, max: 2 }),
  peopleFirst: fc.boolean(),
  offline: fc.array(fc.boolean(), { minLength: 4, maxLength: 4 }),
  mode: fc.constantFrom('default' as const, 'host' as const),
  maxAutoRounds: fc.integer({ min: 1, max: 3 }),
  paused: fc.nat({ max: 4 }).map((n) => n === 0),
});

const pick = <T>(list: readonly T[], i: number): T | undefined => (list.length === 0 ? undefined : list[i % list.length]);

interface Outcome {
  result: EngineResult | null;
  /** Who called (posts, skips, extends, start_round). */
  actor?: { name: string; role: 'ai_agent' | 'user' };
  /** Effects of every engine call the step made (a burst makes several). */
  effects?: EngineEffect[];
}

/** Runs one step; result null when the step does not reach the engine. */
function run(sim: Room, s: Step): Outcome {
  const done = (result: EngineResult | null): Outcome => ({ result });
  const members = sim.members.map((m) => m.name);
  const agents = sim.agents;
  switch (s.t) {
    case 'post': {
      const who = (s.holder && sim.holder) || pick(members, s.who);
      if (!who) return done(null);
      const role = sim.role(who);
      const mentions = s.mentions.map((i) => pick(members, i)!).filter(Boolean);
      return { result: sim.post(who, { mentions: [...new Set(mentions)], endTurn: s.endTurn }), actor: { name: who, role } };
    }
    case 'skip':
    case 'extend': {
      const who = (s.holder && sim.holder) || pick(agents, s.who);
      if (!who) return done(null);
      return { result: s.t === 'skip' ? sim.skip(who, s.reason ?? undefined) : sim.extend(who), actor: { name: who, role: 'ai_agent' } };
    }
    case 'burst': {
      const who = sim.holder;
      if (!who || sim.status === 'paused') return done(null);
      const effects: EngineEffect[] = [];
      let result: EngineResult | null = null;
      for (let i = 0; i < s.n && sim.holder === who; i++) {
        const posted = sim.running?.turn?.posted;
        result = sim.post(who, { endTurn: false });
        if (result.ok) effects.push(...result.effects);
        if (result.ok && posted === 19) coverage['posts:20'] = (coverage['posts:20'] ?? 0) + 1;
      }
      return { result, actor: { name: who, role: 'ai_agent' }, effects };
    }
    case 'timeout':
      return done(sim.timer === null ? null : sim.fire());
    case 'join': {
      const free = (s.agent ? AGENT_POOL : PEOPLE_POOL).filter((n) => !members.includes(n));
      const name = pick(free, s.pick);
      return done(name ? sim.join(name, s.agent ? 'ai_agent' : 'user', s.online) : null);
    }
    case 'leave': {
      const who = pick(members, s.who);
      return done(who ? sim.leave(who) : null);
    }
    case 'online': {
      const who = pick(agents, s.who);
      return done(who ? sim.goOnline(who) : null);
    }
    case 'offline': {
      const who = pick(agents, s.who);
      if (who) sim.goOffline(who);
      return done(null);
    }
    case 'pause':
      return done(sim.pause());
    case 'resume':
      return done(sim.resume());
    case 'start': {
      const by = pick(sim.members.filter((m) => (m.role === 'user') === s.person), s.who) ?? pick(sim.members, s.who);
      if (!by) return done(sim.startRound('admin'));
      return { result: sim.startRound(by.name), actor: { name: by.name, role: by.role } };
    }
    case 'pass':
      return done(sim.pass());
    case 'restart':
      return done(sim.restart());
    case 'mode':
      return done(sim.setMode(sim.mode === 'default' ? 'host' : 'default'));
    case 'tick':
      sim.tick(s.ms);
      return done(null);
  }
}

/** How often each interesting thing happened, so the generator is known to reach it. */
const coverage: Record<string, number> = {};

/** A cheap assertion: vitest's expect is too slow for tens of thousands of steps. */
function check(cond: boolean, what: string, detail?: unknown): asserts cond {
  if (!cond) throw new Error(`invariant broken: ${what}${detail === undefined ? '' : ` ${JSON.stringify(detail)}`}`);
}

const STAMP = { message_id: 'm', seq: 1, timestamp: '2025-01-01T00:00:00.000Z' };

/** Skip records are invisible: the message the driver writes for a `record` effect. */
function checkRecordMessage(sim: Room, e: Extract<EngineEffect, { type: 'record' }>): void {
  const m = engineMessage(sim.messageRoom(), e, STAMP);
  check(
    m.visible === false &&
      m.skip_reason === e.skip_reason &&
      m.role === 'ai_agent' &&
      m.sender === e.agent &&
      m.sender_id === participantId(e.agent) &&
      m.round_id === e.round_id,
    'a record is an invisible ai_agent message from the agent with its skip_reason',
    m,
  );
}

/** The room as it was before a step. */
interface Before {
  state: RoundState;
  lastPersonSeq: number;
  holderPosted: number;
}

class Checker {
  private readonly open = new Set<string>();
  private readonly seen = new Set<string>();
  private history: string[] = [];
  private processed = 0;
  /** guard_tripped before the step being checked. */
  private tripped = false;
  private before: Before;

  constructor(private readonly sim: Room) {
    this.before = this.snapshot();
  }

  private snapshot(): Before {
    // The engine never mutates its input, so keeping the state object is a snapshot.
    return { state: this.sim.state, lastPersonSeq: this.sim.lastPersonSeq, holderPosted: this.sim.running?.turn?.posted ?? 0 };
  }

  afterStep(s: Step | null, outcome: Outcome): void {
    const sim = this.sim;
    const agents = sim.agents;
    const guardWasTripped = this.tripped;
    const state = sim.state;
    const before = this.before;
    this.before = this.snapshot();
    const { result, actor } = outcome;
    const effects: EngineEffect[] = outcome.effects ?? (result?.ok ? result.effects : []);
    const byPerson = actor?.role === 'user';

    // Agents' calls in a paused room are refused with room_paused (before not_your_turn).
    if (sim.status === 'paused' && actor?.role === 'ai_agent') {
      check(result?.ok === false && result.code === 'room_paused', 'paused room refuses agents with room_paused', result);
    }

    // The guard's system message is written exactly when the guard trips.
    const trippedNow = state.current_round?.guard_tripped === true;
    const notices = effects.filter((e) => e.type === 'system_message').length;
    check(notices === (trippedNow && !guardWasTripped ? 1 : 0), 'one system message exactly when the guard trips', effects);
    this.tripped = trippedNow;

    if (result && !result.ok) coverage[result.code] = (coverage[result.code] ?? 0) + 1;
    let lastTurn: Extract<EngineEffect, { type: 'agent_turn' }> | null = null;
    for (const e of effects) {
      const key =
        e.type === 'round_end' ? `end:${e.reason}` : e.type === 'record' ? `record:${e.skip_reason}` : e.type === 'round_start' ? `start:${e.kind}` : e.type;
      coverage[key] = (coverage[key] ?? 0) + 1;
      if (e.type === 'round_start') {
        check(!this.seen.has(e.round_id), 'a round starts once', e);
        this.seen.add(e.round_id);
        this.open.add(e.round_id);
        // Once the guard tripped, only a person's message or a person's start_round starts a round.
        if (guardWasTripped) check((s?.t === 'start' || s?.t === 'post') && byPerson, 'tripped guard blocks rounds', s);
      }
      if (e.type === 'round_end') {
        check(this.open.has(e.round_id), 'round_end matches an open round', e);
        this.open.delete(e.round_id);
      }
      if (e.type === 'record') {
        check(agents.includes(e.agent), 'records only for agents', e);
        checkRecordMessage(sim, e);
        if (e.skip_reason === 'skip') {
          const why = s?.t === 'skip' ? (s.reason ?? '').trim() : '';
          check(e.text === (why === '' ? '（跳过）' : `（跳过：${why}）`), 'a skip record carries the reason given', { e, s });
        }
      }
      if (e.type === 'system_message') {
        const m = engineMessage(sim.messageRoom(), e, STAMP);
        check(m.visible && m.role === 'system' && m.skip_reason === null, 'the guard notice is a visible system message', m);
      }
      if (e.type === 'agent_turn') {
        check(agents.includes(e.agent_name), 'turns only for agents', e);
        check(e.agent_queue[e.current_agent_index] === e.agent_name, 'agent_turn: the queue at the index is the agent', e);
        const unasked = e.agent_queue.slice(e.current_agent_index);
        check(e.pending_mentions.every((n) => unasked.includes(n)), 'agent_turn: the chain is in the unasked part', e);
      }
    }
    // The holder is the last agent_turn of the last engine call (a burst makes several calls).
    for (const e of result?.ok ? result.effects : []) if (e.type === 'agent_turn') lastTurn = e;
    this.checkRoundStarts(s, outcome, before, effects);
    const r = sim.running;
    if (lastTurn) {
      check(sim.holder === lastTurn.agent_name && r?.turn?.deadline === lastTurn.deadline, 'last agent_turn = the holder', lastTurn);
      check(
        JSON.stringify([lastTurn.agent_queue, lastTurn.current_agent_index, lastTurn.pending_mentions]) ===
          JSON.stringify([r?.agent_queue, r?.current_agent_index, r?.pending_mentions]),
        'the last agent_turn carries the round as it is',
        { lastTurn, r },
      );
    }

    // Only people reset the guard (SPEC §3): the counter never drops and the tripped flag
    // never clears except by a person's message or a person's start_round.
    const prev = before.state.current_round;
    const cur = state.current_round;
    if (prev && cur && (cur.guard_count < prev.guard_count || (prev.guard_tripped === true && cur.guard_tripped !== true))) {
      check((s?.t === 'post' || s?.t === 'start') && byPerson, 'only a person resets the guard', { s, actor });
    }
    if (s?.t === 'start' && actor?.role === 'ai_agent' && guardWasTripped && result && !result.ok && result.code === 'conflict') {
      coverage['conflict:guard'] = (coverage['conflict:guard'] ?? 0) + 1;
    }

    // Mentions remembered from a pause wait only while nothing can start them.
    if (state.paused_mentions.length > 0) {
      coverage['paused_mentions'] = (coverage['paused_mentions'] ?? 0) + 1;
      check(
        sim.mode === 'default' && !r && sim.status === 'paused' && state.paused_mentions.every((n) => agents.includes(n)),
        'paused mentions wait only in a paused idle default-mode room, and name agent members',
        { state, status: sim.status },
      );
    }

    check(this.open.size === (r ? 1 : 0) && (!r || this.open.has(r.round_id)), 'the open round is the running round');
    if (r) {
      if (r.turn) {
        check(agents.includes(r.turn.agent), 'the holder is an agent member', r);
        check(r.turn.posted < 20, 'at most 20 posts per turn', r.turn);
        check(r.agent_queue[r.current_agent_index] === r.turn.agent, 'the holder sits at the index', r);
      }
      const unasked = r.agent_queue.slice(r.current_agent_index);
      check(r.pending_mentions.every((n) => unasked.includes(n)), 'the chain is in the unasked part', r);
      if (sim.status === 'active') {
        check(r.turn !== null && r.turn.deadline !== null && sim.timer === r.turn.deadline, 'active round: holder, deadline, timer', {
          r,
          timer: sim.timer,
        });
      } else {
        check((r.turn?.deadline ?? null) === null && sim.timer === null, 'paused: no deadline, no timer', r);
      }
    } else {
      check(sim.timer === null, 'no round: no timer');
    }
    // Never active with an online agent, an unanswered message, no holder and no timer.
    const onlineAgent = agents.some((a) => sim.online.has(a));
    const unanswered = sim.lastPersonSeq > state.processed_through_seq;
    if (sim.mode === 'default' && sim.status === 'active' && onlineAgent && unanswered && !trippedNow) {
      check(r?.turn != null && sim.timer !== null, 'an unanswered message is being answered', state);
    }

    const h = state.history_rounds;
    check(h.length >= this.history.length && this.history.every((id, i) => h[i] === id), 'history only grows', h);
    check(new Set(h).size === h.length, 'history has no duplicates', h);
    this.history = [...h];
    check(state.processed_through_seq >= this.processed, 'processed_through_seq never decreases');
    this.processed = state.processed_through_seq;
  }

  /**
   * Rule 6.1.1: the first rotation round a step starts has a reason: start_round, a message
   * (a person's, or an agent's opening an idle room), an unanswered message, remembered paused
   * mentions (then their block comes first), or a follow-up, which needs visible answers from
   * two different agents in the round before and two agents online.
   */
  private checkRoundStarts(s: Step | null, outcome: Outcome, before: Before, effects: EngineEffect[]): void {
    const sim = this.sim;
    const start = effects.find((e): e is Extract<EngineEffect, { type: 'round_start' }> => e.type === 'round_start' && e.kind === 'rotation');
    if (!start) return;
    const block = before.state.paused_mentions.filter((n) => sim.agents.includes(n));
    if (block.length > 0 && s?.t !== 'start' && !(s?.t === 'post' && outcome.actor?.role === 'user' && sim.status === 'active')) {
      coverage['start:paused_mentions'] = (coverage['start:paused_mentions'] ?? 0) + 1;
      check(block.every((n, i) => start.agent_queue[i] === n), 'remembered mentions come first', { block, start });
      return;
    }
    if (s?.t === 'start') return;
    // A message may start a round by itself: a person's, or an agent's opening an idle room.
    if (s?.t === 'post' && (outcome.actor?.role === 'user' || before.state.current_round?.completed !== false)) return;
    if (before.lastPersonSeq > before.state.processed_through_seq) return; // unanswered
    // A follow-up: an upper bound of who answered in the round before.
    const prev = before.state.current_round;
    const answered = new Set(prev?.answered_by ?? []);
    if (prev && !prev.completed && prev.turn) {
      const holder = prev.turn.agent;
      if (before.holderPosted > 0 || ((s?.t === 'post' || s?.t === 'burst') && outcome.actor?.name === holder)) answered.add(holder);
    }
    coverage['start:follow_up'] = (coverage['start:follow_up'] ?? 0) + 1;
    check(answered.size >= 2, 'a follow-up needs answers from two different agents', { prev, s });
    check(sim.agents.filter((a) => sim.online.has(a)).length >= 2, 'a follow-up needs two agents online', { s });
  }

  drained(): void {
    check(this.open.size === 0, 'every round ended', [...this.open]);
    for (const id of this.seen) check(this.history.includes(id), 'every ended round is in history', id);
  }
}

describe('turn engine invariants (property)', () => {
  it('hold under random action sequences, and every started round ends exactly once', () => {
    fc.assert(
      fc.property(setup, fc.array(step, { minLength: 20, maxLength: 80, size: 'max' }), (cfg, steps) => {
        const agents = AGENT_POOL.slice(0, cfg.agents);
        const sim = new Room({
          mode: cfg.mode,
          maxAutoRounds: cfg.maxAutoRounds,
          agents,
          people: PEOPLE_POOL.slice(0, cfg.people),
          peopleFirst: cfg.peopleFirst,
          offline: agents.filter((_, i) => cfg.offline[i]),
        });
        if (cfg.paused) sim.pause();
        const checker = new Checker(sim);
        checker.afterStep(null, { result: null });
        for (const s of steps) checker.afterStep(s, run(sim, s));
        // Drain: resume, then let every deadline pass until no round runs.
        if (sim.status === 'paused') checker.afterStep(null, { result: sim.resume() });
        for (let i = 0; i < 1000 && sim.running; i++) checker.afterStep({ t: 'timeout' }, { result: sim.fire() });
        expect(sim.running).toBeNull();
        checker.drained();
      }),
      { numRuns: 2000 },
    );
    for (const key of [
      'start:rotation', 'start:host', 'start:host_floor',
      'end:completed', 'end:mention_chain', 'end:superseded', 'end:room_empty', 'end:guard',
      'record:skip', 'record:timeout', 'record:offline', 'record:passed', 'system_message',
      'not_your_turn', 'room_paused', 'cannot_skip', 'conflict',
      'conflict:guard', 'paused_mentions', 'start:paused_mentions', 'start:follow_up', 'posts:20',
    ]) {
      expect(coverage[key] ?? 0, `never saw ${key}`).toBeGreaterThan(20);
    }
  });
});
