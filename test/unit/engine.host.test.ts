// SPEC §6.2 (host mode) on the pure turn engine.
import { describe, expect, it } from 'vitest';
import { expectRefused, Room, ok } from './engine-sim.js';

/** Agent host H (first to join), agents A and B, person U. */
const agentHost = (opts: ConstructorParameters<typeof Room>[0] = {}) =>
  new Room({ mode: 'host', agents: ['H', 'A', 'B'], people: ['U'], ...opts });
/** Person host P (first to join), agents A and B. */
const personHost = (opts: ConstructorParameters<typeof Room>[0] = {}) =>
  new Room({ mode: 'host', agents: ['A', 'B'], people: ['P'], peopleFirst: true, ...opts });

describe('6.2.1 Host', () => {
  it("only the host's mentions start rounds; when the host leaves the longest-standing member takes over", () => {
    const sim = agentHost();
    expect(sim.host).toBe('H');
    expect(ok(sim.post('U', { mentions: ['A'] }), sim)).toEqual([]);
    expect(sim.post('A', { mentions: ['B'] })).toMatchObject({ ok: false, code: 'not_your_turn' });
    sim.leave('H');
    expect(sim.host).toBe('A');
    expect(ok(sim.post('A', { mentions: ['B'] }), sim)).toEqual([
      'round_start r1 host [B]',
      'agent_turn r1 B host no-skip +180s',
      'timer +180s',
    ]);
  });
});

describe('6.2.2 Host rounds', () => {
  it('a host message mentioning agents starts a host round: mention order, can_skip false, ends when each finished', () => {
    const sim = agentHost();
    expect(ok(sim.post('H', { mentions: ['B', 'A'] }), sim)).toEqual([
      'round_start r1 host [B,A]',
      'agent_turn r1 B host no-skip +180s',
      'timer +180s',
    ]);
    expect(sim.state.processed_through_seq).toBe(1);
    expect(sim.skip('B')).toMatchObject({ ok: false, code: 'cannot_skip' });
    expect(ok(sim.post('B'), sim)).toEqual(['agent_turn r1 A host no-skip +180s', 'timer +180s']);
    expect(ok(sim.fire(), sim)).toEqual([
      'record r1 A timeout （超时跳过）',
      'round_end r1 completed',
      'timer off',
      // 6.2.3: the agent host gets the floor.
      'round_start r2 host_floor [H]',
      'agent_turn r2 H host +180s',
      'timer +180s',
    ]);
  });

  it('a new host message with mentions supersedes the running round', () => {
    const sim = agentHost();
    sim.post('H', { mentions: ['A', 'B'] });
    expect(ok(sim.post('H', { mentions: ['B'] }), sim)).toEqual([
      'round_end r1 superseded',
      'timer off',
      'round_start r2 host [B]',
      'agent_turn r2 B host no-skip +180s',
      'timer +180s',
    ]);
    expect(sim.state.history_rounds).toEqual(['r1']);
  });

  it("others' mentions do not change the queue; agents who join do not enter; leaving and offline agents are passed", () => {
    const sim = agentHost({ offline: ['B'] });
    sim.post('H', { mentions: ['A', 'B'] });
    sim.post('U', { mentions: ['H'] });
    sim.join('D', 'ai_agent');
    expect(ok(sim.post('A', { mentions: ['D'] }), sim)).toEqual([
      'record r1 B offline （离线跳过）',
      'round_end r1 completed',
      'timer off',
      'round_start r2 host_floor [H]',
      'agent_turn r2 H host +180s',
      'timer +180s',
    ]);
    const sim2 = agentHost();
    sim2.post('H', { mentions: ['A', 'B'] });
    expect(ok(sim2.leave('A'), sim2)).toEqual(['agent_turn r1 B host no-skip +180s', 'timer +180s']);
  });

  it('a person host waits for no one: no floor after its host round', () => {
    const sim = personHost();
    expect(ok(sim.post('P', { mentions: ['A'] }), sim)).toEqual(['round_start r1 host [A]', 'agent_turn r1 A host no-skip +180s', 'timer +180s']);
    expect(ok(sim.post('A'), sim)).toEqual(['round_end r1 completed', 'timer off']);
  });

  it('a host round started while paused issues its first turn on resume', () => {
    const sim = personHost();
    sim.pause();
    expect(ok(sim.post('P', { mentions: ['B', 'A'] }), sim)).toEqual(['round_start r1 host [B,A]']);
    expect(sim.holder).toBeNull();
    expect(sim.state.paused_mentions).toEqual([]); // the round holds them, nothing else to remember
    expect(ok(sim.resume(), sim)).toEqual(['agent_turn r1 B host no-skip +180s', 'timer +180s']);
  });

  it("a non-host person's mentions while paused are not remembered in host mode (they never start rounds)", () => {
    const sim = agentHost();
    sim.pause();
    expect(ok(sim.post('U', { mentions: ['A'] }), sim)).toEqual([]);
    expect(sim.state.paused_mentions).toEqual([]);
    expect(ok(sim.resume(), sim)).toEqual([]);
  });

  it('the 20th post of a host-round turn ends it as answered', () => {
    const sim = agentHost();
    sim.post('H', { mentions: ['A', 'B'] });
    for (let i = 1; i <= 19; i++) sim.post('A', { endTurn: false });
    expect(ok(sim.post('A', { endTurn: false }), sim)).toEqual(['agent_turn r1 B host no-skip +180s', 'timer +180s']);
    expect(sim.round).toMatchObject({ answered_by: ['A'] });
  });
});

describe('6.2.3 Host floor', () => {
  const floor = () => {
    const sim = agentHost();
    sim.post('H', { mentions: ['A'] });
    sim.post('A');
    expect(sim.round).toMatchObject({ round_id: 'r2', kind: 'host_floor', agent_queue: ['H'] });
    expect(sim.round?.turn).toMatchObject({ agent: 'H', reason: 'host', can_skip: true });
    return sim;
  };

  it('when the floor round ends without a new host round the room waits; the floor is not given again', () => {
    const sim = floor();
    expect(ok(sim.skip('H'), sim)).toEqual(['record r2 H skip （跳过）', 'round_end r2 completed', 'timer off']);
    expect(ok(sim.post('U'), sim)).toEqual([]);
    expect(ok(sim.post('H'), sim)).toEqual([]);
  });

  it('the host answering the floor with mentions supersedes the floor round and starts a host round', () => {
    const sim = floor();
    expect(ok(sim.post('H', { mentions: ['B'] }), sim)).toEqual([
      'round_end r2 superseded',
      'timer off',
      'round_start r3 host [B]',
      'agent_turn r3 B host no-skip +180s',
      'timer +180s',
    ]);
  });

  it('with end_turn:false the host keeps its floor unless it mentions agents (then the floor is superseded)', () => {
    const sim = floor();
    expect(ok(sim.post('H', { endTurn: false }), sim)).toEqual(['agent_turn r2 H host +180s', 'timer +180s']);
    expect(ok(sim.post('H', { endTurn: false, mentions: ['A'] }), sim)).toEqual([
      'round_end r2 superseded',
      'timer off',
      'round_start r3 host [A]',
      'agent_turn r3 A host no-skip +180s',
      'timer +180s',
    ]);
  });

  it('a host round ending while paused gives the floor on resume', () => {
    const sim = agentHost();
    sim.post('H', { mentions: ['A'] });
    sim.pause();
    expect(ok(sim.pass(), sim)).toEqual(['record r1 A passed （管理员跳过）', 'round_end r1 completed', 'timer off']);
    expect(ok(sim.resume(), sim)).toEqual(['round_start r2 host_floor [H]', 'agent_turn r2 H host +180s', 'timer +180s']);
  });

  it('start_round gives the floor to an agent host and fails with conflict for a person host', () => {
    const sim = agentHost();
    expect(ok(sim.startRound(), sim)).toEqual(['round_start r1 host_floor [H]', 'agent_turn r1 H host +180s', 'timer +180s']);
    expect(sim.startRound()).toMatchObject({ ok: false, code: 'conflict' });
    expect(personHost().startRound('P')).toMatchObject({ ok: false, code: 'conflict', details: { reason: 'person_host' } });
  });

  it("in host mode too, only a person's start_round resets a tripped guard; the agent host's gets conflict (guard)", () => {
    const sim = agentHost({ agents: ['H', 'A'], maxAutoRounds: 1 }); // limit 2
    sim.post('H', { mentions: ['A'] }); // 1 (counted in the round it starts)
    sim.post('A'); // 2: trips
    expect(sim.round).toMatchObject({ guard_tripped: true });
    expect(sim.startRound('H')).toMatchObject({ ok: false, code: 'conflict', details: { reason: 'guard' } });
    expect(ok(sim.startRound('U'), sim)).toEqual(['round_start r2 host_floor [H]', 'agent_turn r2 H host +180s', 'timer +180s']);
    expect(sim.round).toMatchObject({ guard_count: 0, guard_tripped: false });
  });
});

describe('6.2.4 Who may post', () => {
  it('non-host agents may post only while holding the turn', () => {
    const sim = agentHost();
    expect(sim.post('A')).toMatchObject({ ok: false, code: 'not_your_turn' });
    sim.post('H', { mentions: ['A', 'B'] });
    expect(sim.post('B')).toMatchObject({ ok: false, code: 'not_your_turn' });
    expect(ok(sim.post('A', { endTurn: false }), sim)).toEqual(['agent_turn r1 A host no-skip +180s', 'timer +180s']);
    expect(ok(sim.post('A'), sim)).toEqual(['agent_turn r1 B host no-skip +180s', 'timer +180s']);
  });

  it('the host and admins always may post; people post freely; none of these posts start rounds', () => {
    const sim = agentHost();
    sim.post('H', { mentions: ['A'] });
    expect(ok(sim.post('H'), sim)).toEqual([]);
    const admin = sim.apply({ type: 'message', sender: 'B', role: 'ai_agent', isAdmin: true, seq: 3, mentions: ['A'], endTurn: true });
    expect(admin).toMatchObject({ ok: true, effects: [] });
    expect(ok(sim.post('U'), sim)).toEqual([]);
    expect(sim.holder).toBe('A');
    // Unanswered people's messages start nothing in host mode.
    const idle = personHost();
    expect(ok(idle.post('P'), idle)).toEqual([]);
    expect(ok(idle.goOnline('A'), idle)).toEqual([]);
    expect(idle.round).toBeNull();
  });

  it('an agent host posting in a paused room gets room_paused, with or without mentions; people still post', () => {
    const sim = agentHost();
    sim.post('H', { mentions: ['A'] });
    sim.pause();
    expectRefused(sim, 'room_paused', (s) => s.post('H'), (s) => s.post('H', { mentions: ['B'] }));
    expect(ok(sim.post('U'), sim)).toEqual([]);
  });

  it("the guard counts in host mode, the host's first message too; once tripped the agent host's mentions start nothing until a person posts", () => {
    const sim = agentHost({ agents: ['H', 'A'], maxAutoRounds: 1 }); // limit 2
    // No round had run yet: the host's message is counted in the round it starts.
    expect(ok(sim.post('H', { mentions: ['A'] }), sim)).toEqual([
      'round_start r1 host [A]',
      'agent_turn r1 A host no-skip +180s',
      'timer +180s',
    ]);
    expect(sim.round).toMatchObject({ guard_count: 1 });
    expect(ok(sim.post('A'), sim)).toEqual([
      'system r1 已达到自动轮次上限（1 轮），等待用户发言或手动开始新一轮。',
      'round_end r1 guard',
      'timer off',
    ]);
    // Tripped: no floor for the host, and its mentions start nothing.
    expect(ok(sim.post('H', { mentions: ['A'] }), sim)).toEqual([]);
    expect(sim.round).toMatchObject({ guard_tripped: true, guard_count: 3 });
    expect(ok(sim.post('U'), sim)).toEqual([]);
    expect(ok(sim.post('H', { mentions: ['A'] }), sim)).toEqual([
      'round_start r2 host [A]',
      'agent_turn r2 A host no-skip +180s',
      'timer +180s',
    ]);
    // After the person's message the count starts again from the host's message, as at first.
    expect(sim.round).toMatchObject({ guard_count: 1, guard_tripped: false });
  });

  it('the same count whether or not a round ran before: the host, then one answer, trips a limit of 2', () => {
    for (const ranBefore of [false, true]) {
      const sim = agentHost({ agents: ['H', 'A'], maxAutoRounds: 1 });
      if (ranBefore) {
        sim.post('H', { mentions: ['A'] });
        sim.post('A'); // trips
        sim.post('U'); // a person resets the guard
      }
      sim.post('H', { mentions: ['A'] });
      sim.post('A');
      expect(sim.round, `ran before: ${ranBefore}`).toMatchObject({ guard_tripped: true, end_reason: 'guard' });
    }
  });
});
