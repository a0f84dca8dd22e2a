// SPEC §6.1.1–6.1.4 on the pure turn engine (rules 6.1.5+ in engine.turns.test.ts, §6.2 in
// engine.host.test.ts). Every test drives the room simulator and asserts the exact effects.
import { describe, expect, it } from 'vitest';
import { expectRefused, Room, T0, TIMEOUT, ok } from './engine-sim.js';

const room = (opts: ConstructorParameters<typeof Room>[0] = {}) => new Room({ agents: ['A', 'B', 'C'], people: ['U'], ...opts });
const iso = (ms: number) => new Date(ms).toISOString();

describe('6.1.1 Start', () => {
  it('a person message in an idle active room starts a round in join order and marks earlier messages processed', () => {
    const sim = room();
    expect(ok(sim.post('U'), sim)).toEqual([
      'round_start r1 rotation [A,B,C]',
      'agent_turn r1 A rotation +180s',
      'timer +180s',
    ]);
    expect(sim.state.processed_through_seq).toBe(1);
    expect(sim.round).toMatchObject({
      round_id: 'r1',
      kind: 'rotation',
      start_time: iso(T0),
      current_agent_index: 0,
      agent_queue: ['A', 'B', 'C'],
      completed: false,
      turn: { agent: 'A', can_skip: true, reason: 'rotation', deadline: iso(T0 + TIMEOUT), posted: 0 },
      pending_mentions: [],
      guard_count: 0,
    });
  });

  it('does not start while paused; resuming with an unanswered message starts it', () => {
    const sim = room();
    sim.pause();
    expect(ok(sim.post('U'), sim)).toEqual([]);
    expect(sim.state.processed_through_seq).toBe(0);
    expect(ok(sim.resume(), sim)).toEqual(['round_start r1 rotation [A,B,C]', 'agent_turn r1 A rotation +180s', 'timer +180s']);
  });

  it('does not start without agents; the first agent joining picks up the unanswered message', () => {
    const sim = new Room({ people: ['U'] });
    expect(ok(sim.post('U'), sim)).toEqual([]);
    expect(ok(sim.join('A', 'ai_agent'), sim)).toEqual(['round_start r1 rotation [A]', 'agent_turn r1 A rotation +180s', 'timer +180s']);
  });

  it('waits for an online agent; an agent coming online starts the round (offline ones are passed)', () => {
    const sim = room({ offline: ['A', 'B', 'C'] });
    expect(ok(sim.post('U'), sim)).toEqual([]);
    expect(sim.state.processed_through_seq).toBe(0);
    expect(ok(sim.goOnline('B'), sim)).toEqual([
      'round_start r1 rotation [A,B,C]',
      'record r1 A offline （离线跳过）',
      'agent_turn r1 B rotation +180s',
      'timer +180s',
    ]);
  });

  it('a round that ended with visible answers from two different agents is followed by another', () => {
    const sim = room();
    sim.post('U');
    sim.post('A');
    sim.post('B');
    expect(sim.round).toMatchObject({ answered_by: ['A', 'B'] });
    expect(ok(sim.skip('C'), sim)).toEqual([
      'record r1 C skip （跳过）',
      'round_end r1 completed',
      'timer off',
      'round_start r2 rotation [A,B,C]',
      'agent_turn r2 A rotation +180s',
      'timer +180s',
    ]);
    expect(sim.state.history_rounds).toEqual(['r1']);
    expect(sim.round).toMatchObject({ round_id: 'r2', guard_count: 2, answers: 0, answered_by: [] });
  });

  it('no follow-up when only one agent answered, however many agents the room has', () => {
    const sim = room();
    sim.post('U');
    sim.post('A');
    sim.skip('B');
    expect(ok(sim.skip('C'), sim)).toEqual(['record r1 C skip （跳过）', 'round_end r1 completed', 'timer off']);
    expect(sim.round).toMatchObject({ completed: true, follow_up: false, answers: 1, answered_by: ['A'] });
    // The same agent answering twice in one round (asked again by a mention) is still one agent.
    const twice = room();
    twice.post('U');
    twice.post('A');
    twice.post('U', { mentions: ['A', 'C'] });
    twice.skip('B');
    expect(ok(twice.post('A'), twice)).toEqual(['agent_turn r1 C mention no-skip +180s', 'timer +180s']);
    expect(twice.round).toMatchObject({ agent_queue: ['A', 'B', 'A', 'C'], answers: 2, answered_by: ['A'] });
  });

  it('a lone agent never talks to itself: a follow-up waits until two of the agents are online', () => {
    const sim = room();
    sim.post('U');
    sim.post('A');
    sim.post('B');
    sim.goOffline('A');
    sim.goOffline('B');
    expect(ok(sim.skip('C'), sim)).toEqual(['record r1 C skip （跳过）', 'round_end r1 completed', 'timer off']);
    expect(sim.round).toMatchObject({ completed: true, follow_up: true });
    // One more agent online makes two: the follow-up starts (offline A is passed).
    expect(ok(sim.goOnline('B'), sim)).toEqual([
      'round_start r2 rotation [A,B,C]',
      'record r2 A offline （离线跳过）',
      'agent_turn r2 B rotation +180s',
      'timer +180s',
    ]);
  });

  it('no follow-up with a single agent, nor after a round without visible answers', () => {
    const one = room({ agents: ['A'] });
    one.post('U');
    expect(ok(one.post('A'), one)).toEqual(['round_end r1 completed', 'timer off']);
    expect(one.round).toMatchObject({ completed: true, turn: null, follow_up: false, answers: 1 });

    const sim = room();
    sim.post('U');
    sim.skip('A');
    sim.skip('B');
    expect(ok(sim.skip('C'), sim)).toEqual(['record r1 C skip （跳过）', 'round_end r1 completed', 'timer off']);
  });

  it('the guard trips at max_auto_rounds × agents: the round ends, a system message (zh-CN), then the room waits', () => {
    const sim = room({ agents: ['A', 'B'], maxAutoRounds: 2 }); // limit 4
    sim.post('U');
    sim.post('A');
    sim.post('B'); // follow-up r2, guard_count carried over
    expect(sim.round).toMatchObject({ round_id: 'r2', guard_count: 2 });
    sim.post('A');
    expect(ok(sim.post('B'), sim)).toEqual([
      'system r2 已达到自动轮次上限（2 轮），等待用户发言或手动开始新一轮。',
      'round_end r2 guard',
      'timer off',
    ]);
    expect(sim.round).toMatchObject({ completed: true, guard_tripped: true, guard_count: 4, end_reason: 'guard' });
    // Agents cannot reopen the room; nothing starts on presence changes either.
    expect(sim.post('A')).toMatchObject({ ok: false, code: 'not_your_turn' });
    expect(ok(sim.goOnline('A'), sim)).toEqual([]);
    // A person's message resets the counter and is answered.
    expect(ok(sim.post('U'), sim)).toEqual(['round_start r3 rotation [A,B]', 'agent_turn r3 A rotation +180s', 'timer +180s']);
    expect(sim.round).toMatchObject({ guard_count: 0, guard_tripped: false });
  });

  it('records are written in the room language: English forms in an English room (SPEC v3 §6)', () => {
    const sim = room({ agents: ['A', 'B', 'C'], language: 'en' });
    sim.post('U');
    expect(ok(sim.skip('A', ' no idea '), sim)[0]).toBe('record r1 A skip (skipped: no idea)');
    expect(ok(sim.fire(), sim)[0]).toBe('record r1 B timeout (timed out)');
    expect(ok(sim.skip('C'), sim)[0]).toBe('record r1 C skip (skipped)');
  });

  it('the guard message is English in other room languages; start_round also resets the guard', () => {
    const sim = room({ agents: ['A'], maxAutoRounds: 1, language: 'en' });
    sim.post('U');
    expect(ok(sim.post('A'), sim)).toEqual([
      'system r1 Automatic round limit reached (1 round). Waiting for a person to post or for a new round to be started manually.',
      'round_end r1 guard',
      'timer off',
    ]);
    expect(ok(sim.startRound(), sim)).toEqual(['round_start r2 rotation [A]', 'agent_turn r2 A rotation +180s', 'timer +180s']);
    expect(sim.round).toMatchObject({ guard_count: 0, guard_tripped: false });
  });

  it('a person message resets the guard counter even during a round', () => {
    const sim = room();
    sim.post('U');
    sim.post('A');
    expect(sim.round?.guard_count).toBe(1);
    sim.post('U');
    expect(sim.round?.guard_count).toBe(0);
  });
});

describe('6.1.2 Queue', () => {
  it('an agent joining during a round is appended; one leaving is removed from the part not yet asked', () => {
    const sim = room();
    sim.post('U');
    sim.post('A');
    expect(ok(sim.join('D', 'ai_agent'), sim)).toEqual([]);
    expect(sim.round?.agent_queue).toEqual(['A', 'B', 'C', 'D']);
    expect(ok(sim.leave('C'), sim)).toEqual([]);
    expect(sim.round?.agent_queue).toEqual(['A', 'B', 'D']);
    // History entries never move: A (already asked) leaving keeps its entry.
    sim.leave('A');
    expect(sim.round).toMatchObject({ agent_queue: ['A', 'B', 'D'], current_agent_index: 1 });
  });

  it('the holder leaving passes the turn on with no record', () => {
    const sim = room();
    sim.post('U');
    expect(ok(sim.leave('A'), sim)).toEqual(['agent_turn r1 B rotation +180s', 'timer +180s']);
    expect(sim.round).toMatchObject({ current_agent_index: 1, agent_queue: ['A', 'B', 'C'] });
  });

  it('the last agent leaving ends the round with room_empty', () => {
    const sim = room({ agents: ['A', 'B'] });
    sim.post('U');
    sim.leave('B');
    expect(ok(sim.leave('A'), sim)).toEqual(['round_end r1 room_empty', 'timer off']);
    expect(sim.state.history_rounds).toEqual(['r1']);
  });

  it('people joining or leaving change nothing', () => {
    const sim = room();
    sim.post('U');
    expect(ok(sim.join('V', 'user'), sim)).toEqual([]);
    expect(ok(sim.leave('V'), sim)).toEqual([]);
    expect(sim.holder).toBe('A');
  });
});

describe('6.1.3 Turn', () => {
  it('agent_turn carries round, agent, can_skip, reason, deadline = now + timeout and timeout_ms; the timer is armed', () => {
    const sim = room({ turnTimeoutMs: 60_000 });
    sim.tick(5_000);
    const r = sim.post('U');
    expect(r.ok && r.effects).toEqual([
      { type: 'round_start', round_id: 'r1', agent_queue: ['A', 'B', 'C'], kind: 'rotation', mode: 'default' },
      {
        type: 'agent_turn',
        round_id: 'r1',
        agent_name: 'A',
        can_skip: true,
        reason: 'rotation',
        deadline: iso(T0 + 65_000),
        timeout_ms: 60_000,
        agent_queue: ['A', 'B', 'C'],
        current_agent_index: 0,
        pending_mentions: [],
      },
      { type: 'timer', deadline: iso(T0 + 65_000) },
    ]);
  });

  it('every agent_turn, re-issues included, carries copies of the queue, the index and the pending chain as they are then', () => {
    const sim = room({ agents: ['A', 'B', 'C', 'D'] });
    const turns = () =>
      sim.last.flatMap((e) =>
        e.type === 'agent_turn' ? [{ agent: e.agent_name, queue: e.agent_queue, index: e.current_agent_index, pending: e.pending_mentions }] : [],
      );
    sim.post('U');
    expect(turns()).toEqual([{ agent: 'A', queue: ['A', 'B', 'C', 'D'], index: 0, pending: [] }]);
    sim.post('U', { mentions: ['C'] }); // the queue changes without a new turn
    const now = { agent: 'A', queue: ['A', 'C', 'B', 'D'], index: 0, pending: ['C'] };
    ok(sim.post('A', { endTurn: false }), sim);
    expect(turns()).toEqual([now]);
    ok(sim.extend('A'), sim);
    expect(turns()).toEqual([now]);
    sim.pause();
    ok(sim.resume(), sim);
    expect(turns()).toEqual([now]);
    ok(sim.restart(), sim);
    expect(turns()).toEqual([now]);
    ok(sim.post('A'), sim);
    expect(turns()).toEqual([{ agent: 'C', queue: ['A', 'C', 'B', 'D'], index: 1, pending: ['C'] }]);
    // Copies: changing the round later does not change an effect already emitted.
    const emitted = sim.last.find((e) => e.type === 'agent_turn');
    sim.post('U', { mentions: ['D'] });
    expect(emitted).toMatchObject({ agent_queue: ['A', 'C', 'B', 'D'], pending_mentions: ['C'] });
    expect(sim.round).toMatchObject({ agent_queue: ['A', 'C', 'D', 'B'], pending_mentions: ['C', 'D'] });
  });

  it('offline agents are passed at once with an invisible offline record until an online agent gets the turn', () => {
    const sim = room({ offline: ['B', 'C'], agents: ['A', 'B', 'C', 'D'] });
    sim.post('U');
    expect(ok(sim.post('A'), sim)).toEqual([
      'record r1 B offline （离线跳过）',
      'record r1 C offline （离线跳过）',
      'agent_turn r1 D rotation +180s',
      'timer +180s',
    ]);
    expect(sim.round?.current_agent_index).toBe(3);
  });

  it('when every remaining agent is offline the round ends', () => {
    const sim = room({ offline: ['B', 'C'] });
    sim.post('U');
    expect(ok(sim.skip('A'), sim)).toEqual([
      'record r1 A skip （跳过）',
      'record r1 B offline （离线跳过）',
      'record r1 C offline （离线跳过）',
      'round_end r1 completed',
      'timer off',
    ]);
  });

  it('presence is checked only when a turn is issued', () => {
    const sim = room();
    sim.post('U');
    sim.goOffline('A');
    expect(sim.holder).toBe('A');
    expect(ok(sim.fire(), sim)).toEqual(['record r1 A timeout （超时跳过）', 'agent_turn r1 B rotation +180s', 'timer +180s']);
  });
});

describe('6.1.4 Answer', () => {
  it("the holder's message answers the turn and the index advances", () => {
    const sim = room();
    sim.post('U');
    expect(ok(sim.post('A'), sim)).toEqual(['agent_turn r1 B rotation +180s', 'timer +180s']);
    expect(sim.round).toMatchObject({ current_agent_index: 1, answers: 1, guard_count: 1 });
  });

  it('end_turn:false keeps the turn, counts the post and restarts the deadline', () => {
    const sim = room();
    sim.post('U');
    sim.tick(100_000);
    expect(ok(sim.post('A', { endTurn: false }), sim)).toEqual(['agent_turn r1 A rotation +180s', 'timer +180s']);
    expect(sim.round?.turn).toMatchObject({ agent: 'A', posted: 1, deadline: iso(T0 + 100_000 + TIMEOUT) });
    sim.post('A', { endTurn: false });
    expect(sim.round?.turn?.posted).toBe(2);
    expect(sim.round?.guard_count).toBe(0); // counted once, when the turn ends
  });

  it('the 20th post of one turn ends it as answered whatever end_turn says', () => {
    const sim = room();
    sim.post('U');
    for (let i = 1; i <= 19; i++) {
      expect(ok(sim.post('A', { endTurn: false }), sim)).toEqual(['agent_turn r1 A rotation +180s', 'timer +180s']);
    }
    expect(sim.round?.turn).toMatchObject({ agent: 'A', posted: 19 });
    expect(ok(sim.post('A', { endTurn: false }), sim)).toEqual(['agent_turn r1 B rotation +180s', 'timer +180s']);
    expect(sim.round).toMatchObject({ current_agent_index: 1, answers: 1, guard_count: 1, answered_by: ['A'] });
    // The next holder starts counting from zero.
    ok(sim.post('B', { endTurn: false }), sim);
    expect(sim.round?.turn).toMatchObject({ agent: 'B', posted: 1 });
  });

  it('the 20th post may also close a mention chain (the turn ends as answered)', () => {
    const sim = room();
    sim.post('U');
    sim.post('A', { mentions: ['C'] });
    for (let i = 1; i <= 19; i++) sim.post('C', { endTurn: false });
    expect(ok(sim.post('C', { endTurn: false }), sim)).toEqual([
      'round_end r1 mention_chain',
      'timer off',
      // A and C answered in r1: a follow-up.
      'round_start r2 rotation [A,B,C]',
      'agent_turn r2 A rotation +180s',
      'timer +180s',
    ]);
  });

  it('after a visible post, skip ends the turn without a record and counts as answered', () => {
    const sim = room();
    sim.post('U');
    sim.post('A', { endTurn: false });
    expect(ok(sim.skip('A'), sim)).toEqual(['agent_turn r1 B rotation +180s', 'timer +180s']);
    expect(sim.round).toMatchObject({ answers: 1, guard_count: 1 });
  });

  it('after a visible post, a timeout ends the turn as answered (no record)', () => {
    const sim = room({ agents: ['A', 'B'] });
    sim.post('U');
    sim.post('A');
    sim.post('B', { endTurn: false });
    expect(ok(sim.fire(), sim)).toEqual([
      'round_end r1 completed',
      'timer off',
      'round_start r2 rotation [A,B]',
      'agent_turn r2 A rotation +180s',
      'timer +180s',
    ]);
  });

  it('skip_response without a post writes an invisible skip record and advances', () => {
    const sim = room();
    sim.post('U');
    expect(ok(sim.skip('A'), sim)).toEqual(['record r1 A skip （跳过）', 'agent_turn r1 B rotation +180s', 'timer +180s']);
    expect(sim.round?.answers).toBe(0);
  });

  it("skip_response's reason goes into the record's text; a blank reason is no reason", () => {
    const sim = room();
    sim.post('U');
    expect(ok(sim.skip('A', '模型调用失败: 429 rate limited'), sim)[0]).toBe('record r1 A skip （跳过：模型调用失败: 429 rate limited）');
    expect(ok(sim.skip('B', '  '), sim)[0]).toBe('record r1 B skip （跳过）');
    expect(ok(sim.skip('C', ' nothing to add\n'), sim)[0]).toBe('record r1 C skip （跳过：nothing to add）');
  });

  it('a skip with a reason after a visible post still ends the turn without a record', () => {
    const sim = room();
    sim.post('U');
    sim.post('A', { endTurn: false });
    expect(ok(sim.skip('A', 'done'), sim)).toEqual(['agent_turn r1 B rotation +180s', 'timer +180s']);
  });

  it('an agent that does not hold the turn gets not_your_turn (message, skip, extend) and nothing changes', () => {
    const sim = room();
    sim.post('U');
    expectRefused(sim, 'not_your_turn', (s) => s.post('B'), (s) => s.skip('B'), (s) => s.extend('B'));
  });

  it('an agent that is a room admin (creator and host) still waits for its turn in default mode', () => {
    const sim = room();
    expect([sim.creator, sim.host]).toEqual(['A', 'A']);
    sim.post('U');
    sim.post('A');
    expectRefused(sim, 'not_your_turn', (s) => s.post('A'));
    expect(sim.holder).toBe('B');
  });

  it('in an idle room an agent message starts a round in which it has answered (rotated queue, index 1)', () => {
    const sim = room();
    expect(ok(sim.post('B'), sim)).toEqual(['round_start r1 rotation [B,C,A]', 'agent_turn r1 C rotation +180s', 'timer +180s']);
    expect(sim.round).toMatchObject({ current_agent_index: 1, answers: 1, guard_count: 1 });
    expect(sim.state.processed_through_seq).toBe(1);
  });

  it('people may post at any time; their message does not interrupt the round but is answered by the next one', () => {
    const sim = room({ agents: ['A', 'B'] });
    sim.post('U');
    expect(ok(sim.post('U'), sim)).toEqual([]);
    expect(sim.holder).toBe('A');
    sim.skip('A');
    expect(ok(sim.skip('B'), sim)).toEqual([
      'record r1 B skip （跳过）',
      'round_end r1 completed',
      'timer off',
      'round_start r2 rotation [A,B]',
      'agent_turn r2 A rotation +180s',
      'timer +180s',
    ]);
    expect(sim.state.processed_through_seq).toBe(4); // two messages + two skip records
  });

  it('system messages change nothing', () => {
    const sim = room();
    const r = sim.apply({ type: 'message', sender: 'system', role: 'system', isAdmin: false, seq: 1, mentions: ['A'], endTurn: true });
    expect(r).toMatchObject({ ok: true, effects: [] });
  });
});
