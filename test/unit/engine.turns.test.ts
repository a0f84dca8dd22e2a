// SPEC §6.1.5–6.1.11 on the pure turn engine, plus pass_turn / extend_turn / mode changes.
import { describe, expect, it } from 'vitest';
import { applyAction as applyActionDirect } from '../../src/rounds/engine.js';
import type { CurrentRound } from '../../src/rounds/types.js';
import { expectRefused, Room, T0, TIMEOUT, ok } from './engine-sim.js';

const room = (opts: ConstructorParameters<typeof Room>[0] = {}) =>
  new Room({ agents: ['A', 'B', 'C', 'D'], people: ['U'], ...opts });
const iso = (ms: number) => new Date(ms).toISOString();
/** A room where U posted and A holds the turn of round r1. */
const running = (opts: ConstructorParameters<typeof Room>[0] = {}) => {
  const sim = room(opts);
  ok(sim.post('U'), sim);
  return sim;
};

describe('6.1.5 Mentions', () => {
  it("a person's mention during a round inserts the chain right after the holder; its end ends the round", () => {
    const sim = running();
    expect(ok(sim.post('U', { mentions: ['C'] }), sim)).toEqual([]);
    expect(sim.round).toMatchObject({ agent_queue: ['A', 'C', 'B', 'D'], pending_mentions: ['C'] });
    expect(ok(sim.post('A'), sim)).toEqual(['agent_turn r1 C mention no-skip +180s', 'timer +180s']);
    expect(sim.round?.turn).toMatchObject({ agent: 'C', reason: 'mention', can_skip: false });
    expect(ok(sim.post('C'), sim)).toEqual([
      'round_end r1 mention_chain',
      'timer off',
      // U's second message is unanswered, and r1 had answers: the next round follows.
      'round_start r2 rotation [A,B,C,D]',
      'agent_turn r2 A rotation +180s',
      'timer +180s',
    ]);
    expect(sim.state.history_rounds).toEqual(['r1']);
  });

  it('a mentioned holder joins the chain at its head with a fresh mention turn', () => {
    const sim = running();
    sim.post('A', { endTurn: false });
    sim.tick(50_000);
    expect(ok(sim.post('U', { mentions: ['A', 'C'] }), sim)).toEqual(['agent_turn r1 A mention no-skip +180s', 'timer +180s']);
    expect(sim.round).toMatchObject({
      agent_queue: ['A', 'C', 'B', 'D'],
      pending_mentions: ['A', 'C'],
      turn: { agent: 'A', reason: 'mention', can_skip: false, posted: 0, deadline: iso(T0 + 50_000 + TIMEOUT) },
    });
    expect(sim.skip('A')).toMatchObject({ ok: false, code: 'cannot_skip' });
    expect(ok(sim.post('A'), sim)).toEqual(['agent_turn r1 C mention no-skip +180s', 'timer +180s']);
    expect(ok(sim.post('C'), sim)[0]).toBe('round_end r1 mention_chain');
  });

  it('in an idle room a mention starts a round with the block first, then the others in join order', () => {
    const sim = room();
    expect(ok(sim.post('U', { mentions: ['C', 'B'] }), sim)).toEqual([
      'round_start r1 rotation [C,B,A,D]',
      'agent_turn r1 C mention no-skip +180s',
      'timer +180s',
    ]);
    expect(sim.round?.pending_mentions).toEqual(['C', 'B']);
    sim.post('C');
    expect(ok(sim.post('B'), sim)).toEqual([
      'round_end r1 mention_chain', // A and D are not asked in r1
      'timer off',
      'round_start r2 rotation [A,B,C,D]',
      'agent_turn r2 A rotation +180s',
      'timer +180s',
    ]);
  });

  it("an agent's mentions form the chain, in mention order, after the holder", () => {
    const sim = running();
    expect(ok(sim.post('A', { mentions: ['D', 'C'] }), sim)).toEqual(['agent_turn r1 D mention no-skip +180s', 'timer +180s']);
    expect(sim.round).toMatchObject({ agent_queue: ['A', 'D', 'C', 'B'], pending_mentions: ['D', 'C'] });
  });

  it('the sender, people and repeated names are ignored', () => {
    const sim = running();
    sim.post('A', { mentions: ['A', 'U', 'C', 'C'] });
    expect(sim.round).toMatchObject({ agent_queue: ['A', 'C', 'B', 'D'], pending_mentions: ['C'] });
  });

  it('a new chain goes before the members of a running chain still waiting', () => {
    const sim = running();
    sim.post('U', { mentions: ['C'] });
    expect(ok(sim.post('A', { mentions: ['D'] }), sim)).toEqual(['agent_turn r1 D mention no-skip +180s', 'timer +180s']);
    expect(sim.round).toMatchObject({ agent_queue: ['A', 'D', 'C', 'B'], pending_mentions: ['D', 'C'] });
    expect(ok(sim.post('D'), sim)).toEqual(['agent_turn r1 C mention no-skip +180s', 'timer +180s']);
    expect(ok(sim.post('C'), sim)[0]).toBe('round_end r1 mention_chain');
  });

  it('an agent already asked may be asked again: a name appears twice', () => {
    const sim = running();
    sim.post('A');
    expect(ok(sim.post('B', { mentions: ['A'] }), sim)).toEqual(['agent_turn r1 A mention no-skip +180s', 'timer +180s']);
    expect(sim.round).toMatchObject({ agent_queue: ['A', 'B', 'A', 'C', 'D'], current_agent_index: 2 });
  });

  it('mentions posted with end_turn:false change the queue and the holder keeps its turn', () => {
    const sim = running();
    expect(ok(sim.post('A', { mentions: ['C'], endTurn: false }), sim)).toEqual(['agent_turn r1 A rotation +180s', 'timer +180s']);
    expect(sim.round).toMatchObject({ agent_queue: ['A', 'C', 'B', 'D'], pending_mentions: ['C'], turn: { agent: 'A', posted: 1 } });
  });

  it('an offline chain member is passed with a record, and that finishes the chain', () => {
    const sim = running({ offline: ['D'] });
    sim.post('U', { mentions: ['D'] });
    expect(ok(sim.post('A'), sim)).toEqual([
      'record r1 D offline （离线跳过）',
      'round_end r1 mention_chain',
      'timer off',
      'round_start r2 rotation [A,B,C,D]',
      'agent_turn r2 A rotation +180s',
      'timer +180s',
    ]);
  });

  it('a chain whose waiting members all leave dissolves; the round goes on in rotation', () => {
    const sim = running();
    sim.post('U', { mentions: ['C'] });
    sim.leave('C');
    expect(sim.round).toMatchObject({ agent_queue: ['A', 'B', 'D'], pending_mentions: [] });
    expect(ok(sim.post('A'), sim)).toEqual(['agent_turn r1 B rotation +180s', 'timer +180s']);
  });
});

describe('6.1.6 Cannot skip', () => {
  it('a mentioned agent without a post gets cannot_skip and keeps the turn', () => {
    const sim = running();
    sim.post('A', { mentions: ['B'] });
    expectRefused(sim, 'cannot_skip', (s) => s.skip('B'));
    expect(sim.holder).toBe('B');
  });

  it('after a visible post the mentioned agent may end its turn with skip (no record)', () => {
    const sim = running();
    sim.post('A', { mentions: ['B'] });
    sim.post('B', { endTurn: false });
    expect(ok(sim.skip('B'), sim)).toEqual([
      'round_end r1 mention_chain',
      'timer off',
      'round_start r2 rotation [A,B,C,D]',
      'agent_turn r2 A rotation +180s',
      'timer +180s',
    ]);
  });
});

describe('6.1.7 Timeout', () => {
  it('at the deadline the turn is passed with an invisible timeout record', () => {
    const sim = running();
    expect(ok(sim.fire(), sim)).toEqual(['record r1 A timeout （超时跳过）', 'agent_turn r1 B rotation +180s', 'timer +180s']);
    expect(sim.now).toBe(T0 + TIMEOUT);
  });

  it('mentioned agents time out too, which ends the chain', () => {
    const sim = running();
    sim.post('A', { mentions: ['C'] });
    expect(ok(sim.fire(), sim)).toEqual([
      'record r1 C timeout （超时跳过）',
      'round_end r1 mention_chain',
      'timer off',
      // Only A answered in r1: no follow-up (rule 6.1.1 needs two different agents).
    ]);
  });

  it('a timeout without an armed turn (stale, idle or paused) changes nothing', () => {
    const idle = room();
    expect(idle.apply({ type: 'timeout' })).toMatchObject({ ok: true, effects: [] });
    const sim = running();
    sim.pause();
    const before = sim.state;
    expect(sim.apply({ type: 'timeout' })).toMatchObject({ ok: true, effects: [] });
    expect(sim.state).toEqual(before);
  });
});

describe('6.1.8 End', () => {
  it('when the index passes the end: completed, history, round_end, timer cancelled', () => {
    const sim = running({ agents: ['A', 'B'] });
    sim.skip('A');
    expect(ok(sim.skip('B'), sim)).toEqual(['record r1 B skip （跳过）', 'round_end r1 completed', 'timer off']);
    expect(sim.round).toMatchObject({
      round_id: 'r1',
      completed: true,
      turn: null,
      current_agent_index: 2,
      end_reason: 'completed',
      follow_up: false,
    });
    expect(sim.state.history_rounds).toEqual(['r1']);
    expect(sim.timer).toBeNull();
  });

  it('history_rounds lists every ended round once, in order', () => {
    const sim = running({ agents: ['A', 'B'] });
    sim.post('A');
    sim.post('B');
    sim.skip('A');
    sim.skip('B');
    expect(sim.state.history_rounds).toEqual(['r1', 'r2']);
    expect(sim.log.filter((e) => e.type === 'round_end').map((e) => e.type === 'round_end' && e.round_id)).toEqual(['r1', 'r2']);
  });
});

describe('6.1.9 Pause', () => {
  it('pausing cancels the timer and clears the deadline; agents get room_paused before not_your_turn', () => {
    const sim = running();
    expect(ok(sim.pause(), sim)).toEqual(['timer off']);
    expect(sim.round?.turn).toMatchObject({ agent: 'A', deadline: null });
    for (const r of [sim.post('A'), sim.post('B'), sim.skip('A'), sim.skip('B'), sim.extend('A'), sim.startRound()]) {
      expect(r).toMatchObject({ ok: false, code: 'room_paused' });
    }
  });

  it('people still post; their mentions change the queue; resuming re-issues the turn with can_skip unchanged', () => {
    const sim = running();
    sim.pause();
    sim.tick(1_000_000);
    expect(ok(sim.post('U', { mentions: ['A', 'C'] }), sim)).toEqual([]);
    expect(sim.round).toMatchObject({ agent_queue: ['A', 'C', 'B', 'D'], turn: { agent: 'A', can_skip: false, deadline: null } });
    expect(ok(sim.resume(), sim)).toEqual(['agent_turn r1 A mention no-skip +180s', 'timer +180s']);
    expect(sim.round?.turn?.deadline).toBe(iso(T0 + 1_000_000 + TIMEOUT));
    expect(ok(sim.resume(), sim)).toEqual([]); // already active
  });

  it('a turn that moves on while paused is issued on resume, with the presence check', () => {
    const sim = running({ offline: ['B'] });
    sim.pause();
    expect(ok(sim.pass(), sim)).toEqual(['record r1 A passed （管理员跳过）']);
    expect(sim.round).toMatchObject({ turn: null, current_agent_index: 1 });
    expect(sim.pass()).toMatchObject({ ok: false, code: 'conflict' });
    expect(ok(sim.resume(), sim)).toEqual(['record r1 B offline （离线跳过）', 'agent_turn r1 C rotation +180s', 'timer +180s']);
  });

  it('membership changes while paused can end the round; resuming then follows rule 6.1.1', () => {
    const sim = running({ agents: ['A', 'B'] });
    sim.post('A');
    sim.pause();
    expect(ok(sim.leave('B'), sim)).toEqual(['round_end r1 completed', 'timer off']);
    expect(ok(sim.resume(), sim)).toEqual([]); // one agent left: no follow-up
  });

  it('a round ending while paused with a follow-up due starts the next round on resume', () => {
    const sim = running({ agents: ['A', 'B', 'C'] });
    sim.post('A');
    sim.post('B');
    sim.pause();
    expect(ok(sim.leave('C'), sim)).toEqual(['round_end r1 completed', 'timer off']);
    expect(ok(sim.resume(), sim)).toEqual(['round_start r2 rotation [A,B]', 'agent_turn r2 A rotation +180s', 'timer +180s']);
  });

  it("a person's mentions posted into a paused idle room are remembered; on resume the round starts with their block first", () => {
    const sim = room();
    sim.pause();
    expect(ok(sim.post('U', { mentions: ['C'] }), sim)).toEqual([]);
    expect(ok(sim.post('U', { mentions: ['B', 'C'] }), sim)).toEqual([]);
    expect(ok(sim.post('U'), sim)).toEqual([]);
    expect(sim.state).toMatchObject({ current_round: null, paused_mentions: ['C', 'B'] });
    // Stored in rooms.json: a restart (a JSON round trip of the state) keeps them.
    sim.state = JSON.parse(JSON.stringify(sim.state));
    ok(sim.restart(), sim);
    expect(ok(sim.resume(), sim)).toEqual([
      'round_start r1 rotation [C,B,A,D]',
      'agent_turn r1 C mention no-skip +180s',
      'timer +180s',
    ]);
    expect(sim.state.paused_mentions).toEqual([]);
    expect(sim.state.processed_through_seq).toBe(3);
    expect(sim.round).toMatchObject({ pending_mentions: ['C', 'B'] });
    expect(sim.skip('C')).toMatchObject({ ok: false, code: 'cannot_skip' });
    sim.post('C');
    expect(ok(sim.post('B'), sim).slice(0, 2)).toEqual(['round_end r1 mention_chain', 'timer off']);
  });

  it('remembered mentions of an agent that left are dropped; they start the round even with the agents offline', () => {
    const sim = room({ offline: ['A', 'B', 'C', 'D'] });
    sim.pause();
    sim.post('U', { mentions: ['B', 'D'] });
    sim.leave('B');
    expect(sim.state.paused_mentions).toEqual(['D']);
    expect(ok(sim.resume(), sim)).toEqual([
      'round_start r1 rotation [D,A,C]',
      'record r1 D offline （离线跳过）',
      'round_end r1 mention_chain',
      'timer off',
    ]);
    expect(sim.state.paused_mentions).toEqual([]);
  });

  it('remembered mentions are forgotten when the mode changes; a running round takes mentions at once', () => {
    const sim = room();
    sim.pause();
    sim.post('U', { mentions: ['C'] });
    sim.setMode('host');
    expect(sim.state.paused_mentions).toEqual([]);
    const busy = running();
    busy.pause();
    busy.post('U', { mentions: ['C'] });
    expect(busy.state.paused_mentions).toEqual([]);
    expect(busy.round).toMatchObject({ agent_queue: ['A', 'C', 'B', 'D'], pending_mentions: ['C'] });
  });
});

describe('6.1.10 Restart', () => {
  it('the holder keeps the turn with a fresh full deadline, without a presence check', () => {
    const sim = running();
    sim.extend('A');
    sim.goOffline('A');
    sim.tick(7_000_000);
    expect(ok(sim.restart(), sim)).toEqual(['agent_turn r1 A rotation +180s', 'timer +180s']);
    expect(sim.round?.turn).toMatchObject({ agent: 'A', extensions: 1, deadline: iso(T0 + 7_000_000 + TIMEOUT) });
  });

  it('rounds stored by earlier versions (no pending_mentions, guard_count, end_reason) load normalised', () => {
    // As an early rooms.json held them: the bookkeeping fields had not been written yet.
    const stored = (round: object) => round as unknown as CurrentRound;
    const base = { kind: 'rotation', start_time: iso(T0), agent_queue: ['A', 'B', 'C', 'D'] };
    const sim = room();
    const turn = { agent: 'B', can_skip: true, reason: 'rotation', deadline: iso(T0), posted: 0 };
    sim.state = { ...sim.state, current_round: stored({ ...base, round_id: 'old', current_agent_index: 1, completed: false, turn }) };
    expect(ok(sim.restart(), sim)).toEqual(['agent_turn old B rotation +180s', 'timer +180s']);
    expect(sim.round).toMatchObject({ pending_mentions: [], guard_count: 0, turn: { agent: 'B' } });

    const ended = room();
    ended.state = { ...ended.state, current_round: stored({ ...base, round_id: 'old', current_agent_index: 4, completed: true, turn: null }) };
    expect(ok(ended.goOnline('A'), ended)).toEqual([]);
    expect(ended.round).toMatchObject({ completed: true, turn: null, end_reason: 'completed', pending_mentions: [], guard_count: 0 });

    // A v1 round marked for a follow-up by the old rule (≥ 1 answer): who answered is unknown,
    // so it is not followed up; a room stored without paused_mentions loads with none.
    const v1 = room();
    const v1Round = { ...base, round_id: 'old', current_agent_index: 4, completed: true, turn: null, pending_mentions: [], guard_count: 1 };
    v1.state = {
      current_round: stored({ ...v1Round, end_reason: 'completed', answers: 1, follow_up: true }),
      history_rounds: ['old'],
      processed_through_seq: 0,
    } as unknown as typeof v1.state;
    expect(ok(v1.goOnline('A'), v1)).toEqual([]);
    expect(v1.state).toMatchObject({ paused_mentions: [], current_round: { follow_up: false, answered_by: [] } });
    // A running v1 round collects answerers from now on.
    const v1run = room();
    const turnA = { agent: 'A', can_skip: true, reason: 'rotation', deadline: iso(T0), posted: 0 };
    v1run.state = { ...v1run.state, current_round: stored({ ...base, round_id: 'old', current_agent_index: 0, completed: false, turn: turnA, answers: 3 }) };
    ok(v1run.post('A'), v1run);
    expect(v1run.round).toMatchObject({ answers: 4, answered_by: ['A'] });
  });

  it('a paused or idle room does nothing on restart', () => {
    const sim = running();
    sim.pause();
    expect(ok(sim.restart(), sim)).toEqual([]);
    expect(ok(room().restart(), room())).toEqual([]);
  });
});

describe('6.1.11 start_round', () => {
  it('starts a round now in join order and resets the guard counter', () => {
    const sim = room();
    expect(ok(sim.startRound(), sim)).toEqual(['round_start r1 rotation [A,B,C,D]', 'agent_turn r1 A rotation +180s', 'timer +180s']);
    sim.post('A');
    sim.post('B');
    sim.post('C');
    sim.post('D');
    sim.skip('A');
    expect(sim.round?.guard_count).toBe(4);
    sim.skip('B');
    sim.skip('C');
    sim.skip('D');
    expect(sim.running).toBeNull();
    ok(sim.startRound(), sim);
    expect(sim.round?.guard_count).toBe(0);
  });

  it('fails with conflict while a round runs (the round in details), room_paused when paused, conflict without agents', () => {
    const sim = running();
    const r = sim.startRound();
    expect(r).toMatchObject({ ok: false, code: 'conflict', details: { current_round: { round_id: 'r1', turn: { agent: 'A' } } } });
    const paused = room();
    paused.pause();
    expect(paused.startRound()).toMatchObject({ ok: false, code: 'room_paused' });
    const empty = new Room({ people: ['U'] });
    expect(empty.startRound()).toMatchObject({ ok: false, code: 'conflict' });
  });

  it("an agent's start_round never resets the guard: conflict (reason guard) while tripped, else a round without a reset", () => {
    const sim = room({ agents: ['A', 'B'], maxAutoRounds: 1 }); // limit 2
    sim.post('U');
    sim.post('A');
    ok(sim.post('B'), sim);
    expect(sim.round).toMatchObject({ guard_tripped: true, guard_count: 2 });
    expectRefused(sim, { code: 'conflict', details: { reason: 'guard' } }, (s) => s.startRound('A'));
    // A person's start_round resets the counter and the tripped flag.
    expect(ok(sim.startRound('U'), sim)).toEqual(['round_start r2 rotation [A,B]', 'agent_turn r2 A rotation +180s', 'timer +180s']);
    expect(sim.round).toMatchObject({ guard_count: 0, guard_tripped: false });
    sim.post('A');
    sim.skip('B'); // one answerer: no follow-up
    expect(sim.running).toBeNull();
    // Not tripped: the agent's start_round starts a round, and the counter keeps counting.
    expect(ok(sim.startRound('A'), sim)).toEqual(['round_start r3 rotation [A,B]', 'agent_turn r3 A rotation +180s', 'timer +180s']);
    expect(sim.round).toMatchObject({ guard_count: 1 });
    expect(ok(sim.post('A'), sim)).toEqual([
      'system r3 已达到自动轮次上限（1 轮），等待用户发言或手动开始新一轮。',
      'round_end r3 guard',
      'timer off',
    ]);
  });

  it('conflict details say why: a running round, or no agents', () => {
    const sim = running();
    expect(sim.startRound()).toMatchObject({ ok: false, code: 'conflict', details: { reason: 'round_running' } });
    expect(new Room({ people: ['U'] }).startRound('U')).toMatchObject({ ok: false, code: 'conflict', details: { reason: 'no_agents' } });
  });

  it('with every agent offline the round starts and ends at once', () => {
    const sim = room({ agents: ['A'], offline: ['A'] });
    expect(ok(sim.startRound(), sim)).toEqual([
      'round_start r1 rotation [A]',
      'record r1 A offline （离线跳过）',
      'round_end r1 completed',
      'timer off',
    ]);
  });
});

describe('pass_turn and extend_turn', () => {
  it('pass_turn passes the current turn with a passed record; conflict when nobody holds one', () => {
    const sim = room();
    expect(sim.pass()).toMatchObject({ ok: false, code: 'conflict' });
    sim.post('U');
    expect(ok(sim.pass(), sim)).toEqual(['record r1 A passed （管理员跳过）', 'agent_turn r1 B rotation +180s', 'timer +180s']);
  });

  it('extend_turn restarts the deadline at most 3 times per turn, holder only', () => {
    const sim = running();
    for (let i = 1; i <= 3; i++) {
      sim.tick(10_000);
      expect(ok(sim.extend('A'), sim)).toEqual(['agent_turn r1 A rotation +180s', 'timer +180s']);
      expect(sim.round?.turn?.extensions).toBe(i);
    }
    expect(sim.extend('A')).toMatchObject({ ok: false, code: 'conflict' });
    expect(sim.extend('B')).toMatchObject({ ok: false, code: 'not_your_turn' });
    sim.post('A');
    expect(ok(sim.extend('B'), sim)).toEqual(['agent_turn r1 B rotation +180s', 'timer +180s']);
  });
});

describe('mode change', () => {
  it('ends the running round as superseded and starts nothing; earlier messages count as processed', () => {
    const sim = running();
    sim.post('U');
    expect(ok(sim.setMode('host'), sim)).toEqual(['round_end r1 superseded', 'timer off']);
    expect(sim.state.processed_through_seq).toBe(2);
    sim.post('U'); // host mode: people's messages start nothing
    expect(ok(sim.setMode('default'), sim)).toEqual([]);
    expect(ok(sim.post('U'), sim)).toEqual(['round_start r2 rotation [A,B,C,D]', 'agent_turn r2 A rotation +180s', 'timer +180s']);
  });
});

describe('purity', () => {
  it('never mutates its inputs and is deterministic', () => {
    const sim = running();
    sim.post('U', { mentions: ['C'] });
    const view = sim.view();
    const state = sim.state;
    const frozen = JSON.stringify({ view, state });
    const deepFreeze = (o: unknown): void => {
      if (o && typeof o === 'object') {
        Object.freeze(o);
        for (const v of Object.values(o)) deepFreeze(v);
      }
    };
    deepFreeze(view);
    deepFreeze(state);
    const ctx = () => ({ now: T0 + 5, online: new Set(['A', 'B', 'C', 'D']), newRoundId: () => 'x' });
    for (const action of [
      { type: 'message', sender: 'A', role: 'ai_agent', isAdmin: false, seq: 3, mentions: ['B'], endTurn: true },
      { type: 'timeout' },
      { type: 'member_left', name: 'A', role: 'ai_agent' },
      { type: 'mode_changed' },
    ] as const) {
      const r1 = JSON.stringify(applyActionDirect(view, state, action, ctx()));
      const r2 = JSON.stringify(applyActionDirect(view, state, action, ctx()));
      expect(r1).toBe(r2);
    }
    expect(JSON.stringify({ view, state })).toBe(frozen);
  });
});
