// The events of one commit as another node replays them (runtime/event-plan.ts): the same events
// in the same order, messages taken from the rows by seq with the processed flag the committing
// node showed; a plan that does not fit the rows is refused (the caller rebuilds from the diff).
import { describe, expect, it } from 'vitest';
import { encodeEventPlan, replayEventPlan, replayStoredPlans } from '../../src/runtime/event-plan.js';
import type { AccessEvent, RoomEvent } from '../../src/protocol/events.js';
import { presentMessage } from '../../src/rooms/present.js';
import { makeMessage, makeRoom } from './storage-helpers.js';

describe('event plans', () => {
  const room = { ...makeRoom('r1'), processed_through_seq: 2 };
  const first = makeMessage('r1', 1);
  const second = makeMessage('r1', 2);
  const edited = { ...makeMessage('r1', 1), text_content: 'edited' };
  const access: AccessEvent[] = [{ type: 'joined', room_id: 'r1', participant_id: 'p1' }];
  const events: RoomEvent[] = [
    { event: 'message_new', room_id: 'r1', data: { message: { ...presentMessage(first, room), processed: false } } },
    { event: 'round_end', room_id: 'r1', data: { round_id: 'x', reason: 'completed' } },
    { event: 'message_new', room_id: 'r1', data: { message: presentMessage(second, room) } },
    { event: 'message_update', room_id: 'r1', data: { message: presentMessage(edited, room) } },
  ];

  it('replays what was published, in order, with the processed flags as shown', () => {
    const plan = JSON.parse(encodeEventPlan(access, events));
    expect(replayEventPlan(plan, room, [first, second], [edited])).toEqual({ events, access, turnsIssued: [] });
  });

  it('refuses a plan that names a message it was not given, another room, or garbage', () => {
    const plan = JSON.parse(encodeEventPlan(access, events));
    expect(replayEventPlan(plan, room, [first], [edited])).toBeUndefined();
    expect(replayEventPlan(plan, { ...room, room_id: 'r2' }, [first, second], [edited])).toBeUndefined();
    expect(replayEventPlan({ not: 'a plan' }, room, [], [])).toBeUndefined();
    expect(replayEventPlan([['x', 1]], room, [], [])).toBeUndefined();
  });

  it('replays the plans a store kept, one entry per commit, only when every missed version has one', () => {
    const one = encodeEventPlan(access, events.slice(0, 2));
    const two = encodeEventPlan([], events.slice(2));
    const plans = [
      { version: 5, events: one },
      { version: 6, events: two },
    ];
    expect(replayStoredPlans(plans, 4, 6, room, [first, second], [edited])).toEqual([
      { events: events.slice(0, 2), access, turnsIssued: [] },
      { events: events.slice(2), access: [], turnsIssued: [] },
    ]);
    // A version missing (the store kept fewer), one without events (an older node's commit),
    // unreadable JSON, or nothing to replay: the caller falls back to the difference.
    expect(replayStoredPlans(plans.slice(1), 4, 6, room, [first, second], [edited])).toBeUndefined();
    expect(replayStoredPlans([plans[0]!, { version: 6, events: null }], 4, 6, room, [first, second], [edited])).toBeUndefined();
    expect(replayStoredPlans([plans[0]!, { version: 6, events: '[' }], 4, 6, room, [first, second], [edited])).toBeUndefined();
    expect(replayStoredPlans([plans[1]!, plans[0]!], 4, 6, room, [first, second], [edited])).toBeUndefined();
    expect(replayStoredPlans([], 6, 6, room, [], [])).toBeUndefined();
    expect(replayStoredPlans(undefined, 4, 6, room, [first, second], [edited])).toBeUndefined();
  });
});

