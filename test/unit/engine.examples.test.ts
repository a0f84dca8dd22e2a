// The worked examples of docs/turns.md, replayed step by step on the pure engine.
import { describe, expect, it } from 'vitest';
import { ok, Room } from './engine-sim.js';

const turnOf = (effects: string[]) => effects.filter((e) => e.startsWith('agent_turn')).map((e) => e.split(' ').slice(2, 5).join(' '));

describe('docs/turns.md examples', () => {
  it('default mode: rotation, a mention that cannot skip, a timeout, follow-up and a person mid-round', () => {
    const sim = new Room({ agents: ['A', 'B', 'C'], people: ['U'] });
    expect(turnOf(ok(sim.post('U'), sim))).toEqual(['A rotation +180s']);
    expect(turnOf(ok(sim.post('A'), sim))).toEqual(['B rotation +180s']);
    expect(turnOf(ok(sim.post('B', { mentions: ['C'] }), sim))).toEqual(['C mention no-skip']);
    const refused = sim.skip('C');
    expect(refused.ok ? 'ok' : refused.code).toBe('cannot_skip');
    const timeout = ok(sim.fire(), sim);
    expect(timeout).toContain('record r1 C timeout （超时跳过）');
    expect(timeout).toContain('round_end r1 mention_chain');
    expect(timeout).toContain('round_start r2 rotation [A,B,C]');
    expect(turnOf(timeout)).toEqual(['A rotation +180s']);
    ok(sim.post('U', { mentions: ['B'] }), sim);
    expect(sim.running?.agent_queue).toEqual(['A', 'B', 'C']);
    expect(turnOf(ok(sim.post('A'), sim))).toEqual(['B mention no-skip']);
    const last = ok(sim.post('B'), sim);
    expect(last).toContain('round_end r2 mention_chain');
    expect(last).toContain('round_start r3 rotation [A,B,C]');
  });

  it('pause: mentions posted into a paused idle room start the round on resume, block first', () => {
    const sim = new Room({ agents: ['A', 'B', 'C'], people: ['U'] });
    ok(sim.pause(), sim);
    expect(ok(sim.post('U', { mentions: ['C'] }), sim)).toEqual([]);
    expect(ok(sim.post('U', { mentions: ['B', 'C'] }), sim)).toEqual([]);
    const resumed = ok(sim.resume(), sim);
    expect(resumed).toContain('round_start r1 rotation [C,B,A]');
    expect(turnOf(resumed)).toEqual(['C mention no-skip']);
    expect(turnOf(ok(sim.post('C'), sim))).toEqual(['B mention no-skip']);
    const last = ok(sim.post('B'), sim);
    expect(last).toContain('round_end r1 mention_chain');
    expect(last).toContain('round_start r2 rotation [A,B,C]');
    expect(turnOf(last)).toEqual(['A rotation +180s']);
  });

  it('host mode: mention rounds, the agent host gets the floor once, then the room waits', () => {
    const sim = new Room({ mode: 'host', agents: ['H', 'A', 'B'] });
    expect(sim.host).toBe('H');
    const start = ok(sim.post('H', { mentions: ['A', 'B'] }), sim);
    expect(start).toContain('round_start r1 host [A,B]');
    expect(turnOf(start)).toEqual(['A host no-skip']);
    expect(turnOf(ok(sim.post('A'), sim))).toEqual(['B host no-skip']);
    const floor = ok(sim.post('B'), sim);
    expect(floor).toContain('round_end r1 completed');
    expect(floor).toContain('round_start r2 host_floor [H]');
    expect(turnOf(floor)).toEqual(['H host +180s']);
    const again = ok(sim.post('H', { mentions: ['B'] }), sim);
    expect(again).toContain('round_start r3 host [B]');
    expect(turnOf(ok(sim.post('B', { endTurn: false }), sim))).toEqual(['B host no-skip']);
    const floor2 = ok(sim.post('B'), sim);
    expect(turnOf(floor2)).toEqual(['H host +180s']);
    const wait = ok(sim.skip('H'), sim);
    expect(wait.some((e) => e.startsWith('round_start'))).toBe(false);
    expect(sim.running).toBeNull();
  });
});
