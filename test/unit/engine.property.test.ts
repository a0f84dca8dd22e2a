// Property test: random action sequences on the room simulator; invariants after every step,
// and after draining with timeouts every round that started has ended exactly once.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { EngineEffect, EngineResult } from '../../src/rounds/types.js';
import { Room } from './engine-sim.js';

const AGENT_POOL = ['A1', 'A2', 'A3', 'A4', 'A5'];
const PEOPLE_POOL = ['P1', 'P2', 'P3'];

type Step =
  | { t: 'post'; who: number; holder: boolean; mentions: number[]; endTurn: boolean }
  | { t: 'skip'; who: number; holder: boolean }
  | { t: 'extend'; who: number; holder: boolean }
  | { t: 'timeout' }
  | { t: 'join'; agent: boolean; pick: number; online: boolean }
  | { t: 'leave'; who: number }
  | { t: 'online'; who: number }
  | { t: 'offline'; who: number }
  | { t: 'pause' }
  | { t: 'resume' }
  | { t: 'start' }
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
  { weight: 10, arbitrary: fc.record({ t: fc.constant('skip' as const), who: idx, holder: fc.boolean() }) },
  { weight: 3, arbitrary: fc.record({ t: fc.constant('extend' as const), who: idx, holder: fc.boolean() }) },
  { weight: 12, arbitrary: fc.constant({ t: 'timeout' as const }) },
  { weight: 4, arbitrary: fc.record({ t: fc.constant('join' as const), agent: fc.boolean(), pick: idx, online: fc.boolean() }) },
  { weight: 4, arbitrary: fc.record({ t: fc.constant('leave' as const), who: idx }) },
  { weight: 5, arbitrary: fc.record({ t: fc.constant('online' as const), who: idx }) },
  { weight: 5, arbitrary: fc.record({ t: fc.constant('offline' as const), who: idx }) },
  { weight: 3, arbitrary: fc.constant({ t: 'pause' as const }) },
  { weight: 4, arbitrary: fc.constant({ t: 'resume' as const }) },
  { weight: 3, arbitrary: fc.constant({ t: 'start' as const }) },
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
  paused: fc.boolean(),
});

const pick = <T>(list: readonly T[], i: number): T | undefined => (list.length === 0 ? undefined : list[i % list.length]);

interface Outcome {
  result: EngineResult | null;
  /** Who called (posts, skips, extends). */
  actor?: { name: string; role: 'ai_agent' | 'user' };
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
      return { result: s.t === 'skip' ? sim.skip(who) : sim.extend(who), actor: { name: who, role: 'ai_agent' } };
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
    case 'start':
      return done(sim.startRound());
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

class Checker {
  private readonly open = new Set<string>();
  private readonly seen = new Set<string>();
  private history: string[] = [];
  private processed = 0;

  constructor(private readonly sim: Room) {}

  afterStep(s: Step | null, outcome: Outcome, guardWasTripped: boolean): void {
    const sim = this.sim;
    const state = sim.state;
    const { result, actor } = outcome;
    const effects: EngineEffect[] = result?.ok ? result.effects : [];

    // Agents' calls in a paused room are refused with room_paused (before not_your_turn).
    if (sim.status === 'paused' && actor?.role === 'ai_agent') {
      expect(result).toMatchObject({ ok: false, code: 'room_paused' });
    }

    for (const e of effects) {
      if (e.type === 'round_start') {
        expect(this.seen.has(e.round_id), `round ${e.round_id} started twice`).toBe(false);
        this.seen.add(e.round_id);
        this.open.add(e.round_id);
        // Once the guard tripped, only a person's message or start_round starts a round.
        if (guardWasTripped) expect(s?.t === 'start' || (s?.t === 'post' && actor?.role === 'user')).toBe(true);
      }
      if (e.type === 'round_end') {
        expect(this.open.has(e.round_id), `round ${e.round_id} ended but was not open`).toBe(true);
        this.open.delete(e.round_id);
      }
      if (e.type === 'record') expect(sim.agents, `record for non-agent ${e.agent}`).toContain(e.agent);
      if (e.type === 'agent_turn') expect(sim.agents).toContain(e.agent_name);
    }
    const lastTurn = [...effects].reverse().find((e) => e.type === 'agent_turn');
    if (lastTurn && lastTurn.type === 'agent_turn') {
      expect(sim.holder).toBe(lastTurn.agent_name);
      expect(sim.running?.turn?.deadline).toBe(lastTurn.deadline);
    }

    const r = sim.running;
    expect(this.open.size).toBeLessThanOrEqual(1);
    expect([...this.open]).toEqual(r ? [r.round_id] : []);
    if (r) {
      if (r.turn) {
        expect(sim.agents).toContain(r.turn.agent);
        expect(r.agent_queue[r.current_agent_index]).toBe(r.turn.agent);
      }
      for (const n of r.pending_mentions) expect(r.agent_queue.slice(r.current_agent_index)).toContain(n);
      if (sim.status === 'active') {
        expect(r.turn, 'active running round without a holder').not.toBeNull();
        expect(r.turn!.deadline).not.toBeNull();
        expect(sim.timer).toBe(r.turn!.deadline);
      } else {
        expect(r.turn?.deadline ?? null).toBeNull();
        expect(sim.timer).toBeNull();
      }
    } else {
      expect(sim.timer).toBeNull();
    }
    // Never active with an online agent, an unanswered message, no holder and no timer.
    const onlineAgent = sim.agents.some((a) => sim.online.has(a));
    const unanswered = sim.lastPersonSeq > state.processed_through_seq;
    const tripped = state.current_round?.guard_tripped === true;
    if (sim.mode === 'default' && sim.status === 'active' && onlineAgent && unanswered && !tripped) {
      expect(r?.turn ?? null, 'idle room with an unanswered message').not.toBeNull();
      expect(sim.timer).not.toBeNull();
    }

    expect(state.history_rounds.slice(0, this.history.length)).toEqual(this.history);
    expect(new Set(state.history_rounds).size).toBe(state.history_rounds.length);
    this.history = [...state.history_rounds];
    expect(state.processed_through_seq).toBeGreaterThanOrEqual(this.processed);
    this.processed = state.processed_through_seq;
  }

  drained(): void {
    expect(this.open.size).toBe(0);
    for (const id of this.seen) expect(this.history).toContain(id);
  }
}

describe('turn engine invariants (property)', () => {
  it('hold under random action sequences, and every started round ends exactly once', () => {
    fc.assert(
      fc.property(setup, fc.array(step, { maxLength: 60 }), (cfg, steps) => {
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
        checker.afterStep(null, { result: null }, false);
        for (const s of steps) {
          const tripped = sim.state.current_round?.guard_tripped === true;
          const result = run(sim, s);
          checker.afterStep(s, result, tripped);
        }
        // Drain: resume, then let every deadline pass until no round runs.
        if (sim.status === 'paused') checker.afterStep(null, { result: sim.resume() }, false);
        for (let i = 0; i < 1000 && sim.running; i++) checker.afterStep({ t: 'timeout' }, { result: sim.fire() }, false);
        expect(sim.running).toBeNull();
        checker.drained();
      }),
      { numRuns: 1500 },
    );
  });
});
