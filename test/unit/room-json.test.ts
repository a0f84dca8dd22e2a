// rooms.json's record writer (src/storage/room-json.ts) and the record copies (src/clone.ts):
// both must give exactly what JSON.stringify / a deep copy give, whatever the history.
import { describe, expect, it } from 'vitest';
import { cloneJson, cloneRoom } from '../../src/clone.js';
import { roomJsonWriter } from '../../src/storage/room-json.js';

interface TestRoom {
  room_id: string;
  members: { name: string; skip_list: string[] }[];
  current_round: { round_id: string; agent_queue: string[] } | null;
  history_rounds: string[];
}

const room = (history: string[], name = 'A'): TestRoom => ({
  room_id: 'r1',
  members: [{ name, skip_list: ['x'] }],
  current_round: { round_id: 'c', agent_queue: ['A', 'B'] },
  history_rounds: history,
});

describe('roomJsonWriter', () => {
  it('gives what JSON.stringify gives, parsed, for a growing history', () => {
    const toJson = roomJsonWriter<TestRoom>();
    let previous: TestRoom | undefined;
    let history: string[] = [];
    for (let i = 0; i < 50; i++) {
      // A new array every other step (a round ended), the same one in between (a hand-off).
      if (i % 2 === 0) history = [...history, `round-${i}`];
      const next = room(history, `agent-${i}`);
      expect(JSON.parse(toJson(next, previous))).toEqual(JSON.parse(JSON.stringify(next)));
      previous = next;
    }
  });

  it('serialises from scratch when the new history does not extend the old one', () => {
    const toJson = roomJsonWriter<TestRoom>();
    const before = room(['a', 'b', 'c']);
    toJson(before, undefined);
    for (const history of [['a', 'x', 'c', 'd'], ['a'], [], ['b', 'c']]) {
      const next = room(history);
      expect(JSON.parse(toJson(next, before))).toEqual(next);
    }
  });

  it('extends an empty history and keeps the JSON valid', () => {
    const toJson = roomJsonWriter<TestRoom>();
    const empty = room([]);
    expect(JSON.parse(toJson(empty, undefined))).toEqual(empty);
    const one = room(['r1']);
    expect(JSON.parse(toJson(one, empty))).toEqual(one);
    const three = room(['r1', 'r2', 'r3']);
    expect(JSON.parse(toJson(three, one))).toEqual(three);
  });

  it('falls back to JSON.stringify for a record without a list of round ids', () => {
    const toJson = roomJsonWriter<Record<string, unknown>>();
    for (const record of [{ room_id: 'r' }, { room_id: 'r', history_rounds: 'no' }, { history_rounds: [1, 2] }, {}]) {
      expect(toJson(record, undefined)).toBe(JSON.stringify(record));
    }
    expect(JSON.parse(toJson({ history_rounds: ['a'] }, undefined))).toEqual({ history_rounds: ['a'] });
  });
});

describe('cloneRoom / cloneJson', () => {
  it('copies deeply, keeps field order, and shares nothing with the original', () => {
    const original = room(['a', 'b']);
    const copy = cloneRoom(original);
    expect(copy).toEqual(original);
    expect(Object.keys(copy)).toEqual(Object.keys(original));
    copy.members[0]!.skip_list.push('y');
    copy.history_rounds.push('c');
    copy.current_round!.agent_queue.pop();
    expect(original).toEqual(room(['a', 'b']));
  });

  it('shares the history list when asked, and copies the rest', () => {
    const original = room(['a', 'b']);
    const draft = cloneRoom(original, { shareHistory: true });
    expect(draft.history_rounds).toBe(original.history_rounds);
    expect(draft.members).not.toBe(original.members);
    expect(draft).toEqual(original);
  });

  it('copies null, nested arrays and undefined fields as structuredClone does', () => {
    const value = { a: null, b: [[1, { c: 'd' }]], e: undefined, f: { g: true } };
    expect(cloneJson(value)).toStrictEqual(structuredClone(value));
    expect(cloneRoom({ ...value, history_rounds: [] })).toStrictEqual(structuredClone({ ...value, history_rounds: [] }));
  });
});
