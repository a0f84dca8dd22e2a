// Which round a posted message started, and which answers belong to it (SPEC §12: round =
// task, answer = artifact), from the room's events as the bus delivers them.
import { describe, expect, it } from 'vitest';
import { InProcessBus, type RoomEvent } from '../../src/events/bus.js';
import { RoundFollower, type RoundStep } from '../../src/gateways/a2a/round-follower.js';
import type { Message, RoomRecord } from '../../src/types.js';

const ROOM = 'room-1';
let seq = 0;

function message(sender: string, role: 'user' | 'ai_agent', roundId: string | null, text = `${sender} says hi`, visible = true): Message {
  seq++;
  return {
    message_id: `m-${seq}`,
    room_id: ROOM,
    seq,
    timestamp: new Date(0).toISOString(),
    sender,
    sender_id: `id-${sender}`,
    role,
    text_content: text,
    text_content_i18n: null,
    source_language: 'en',
    file_url: '',
    file_type: '',
    mentions: [],
    visible,
    processed: false,
    response_to: null,
    display_timezone: 'UTC',
    round_id: roundId,
    skip_reason: visible ? null : 'skip',
    deleted: false,
  };
}

const newMessage = (m: Message): RoomEvent => ({ event: 'message_new', room_id: ROOM, data: { message: m } });
const start = (id: string): RoomEvent => ({ event: 'round_start', room_id: ROOM, data: { round_id: id, agent_queue: ['A', 'B'], mode: 'default', kind: 'rotation' } });
const end = (id: string): RoomEvent => ({ event: 'round_end', room_id: ROOM, data: { round_id: id, reason: 'completed' } });

function roomState(overrides: Partial<RoomRecord>): RoomRecord {
  return { system_status: 'active', interaction_mode: 'default', current_round: null, members: [], processed_through_seq: 0, ...overrides } as RoomRecord;
}

async function collect(follower: RoundFollower): Promise<RoundStep[]> {
  const steps: RoundStep[] = [];
  for await (const step of follower.steps()) steps.push(step);
  return steps;
}

const brief = (steps: RoundStep[]) =>
  steps.map((s) => (s.kind === 'answer' ? `answer ${s.answer.sender}: ${s.answer.text}` : s.kind === 'round' || s.kind === 'end' ? `${s.kind} ${s.round_id}` : s.kind));

describe('RoundFollower', () => {
  it('follows the round the message started: its visible agent answers, then its end', async () => {
    const bus = new InProcessBus();
    const follower = new RoundFollower({ bus, roomId: ROOM, roomNow: async () => roomState({}) });
    const mine = message('Ann', 'user', null, 'question');
    bus.publish(newMessage(mine));
    bus.publish(start('R1'));
    follower.posted(mine);
    const done = collect(follower);
    bus.publish(newMessage(message('A', 'ai_agent', 'R1', 'first answer')));
    bus.publish(newMessage(message('B', 'ai_agent', 'R1', '(skipped)', false)));
    bus.publish({ ...newMessage(message('A', 'ai_agent', 'R9')), room_id: 'other-room' });
    bus.publish(newMessage(message('Bob', 'user', 'R1', 'a person meanwhile')));
    bus.publish(newMessage(message('B', 'ai_agent', 'R1', 'second answer')));
    bus.publish(end('R1'));
    expect(brief(await done)).toEqual(['round R1', 'answer A: first answer', 'answer B: second answer', 'end R1']);
  });

  it('a message posted during a running round waits for the next round and ignores the running one', async () => {
    const bus = new InProcessBus();
    const running = roomState({ current_round: { round_id: 'R0', completed: false } as RoomRecord['current_round'] });
    const follower = new RoundFollower({ bus, roomId: ROOM, roomNow: async () => running });
    bus.publish(start('R0'));
    const mine = message('Ann', 'user', 'R0', 'late question');
    bus.publish(newMessage(mine));
    follower.posted(mine);
    const done = collect(follower);
    bus.publish(newMessage(message('B', 'ai_agent', 'R0', 'answer of the old round')));
    bus.publish(end('R0'));
    bus.publish(start('R1'));
    bus.publish(newMessage(message('A', 'ai_agent', 'R1', 'answer to the late question')));
    bus.publish(end('R1'));
    expect(brief(await done)).toEqual(['round R1', 'answer A: answer to the late question', 'end R1']);
  });

  it('ends with no_round when the room is left idle (no agents) or the post starts nothing in host mode', async () => {
    const bus = new InProcessBus();
    const idle = new RoundFollower({ bus, roomId: ROOM, roomNow: async () => roomState({}) });
    const mine = message('Ann', 'user', null);
    bus.publish(newMessage(mine));
    idle.posted(mine);
    expect(brief(await collect(idle))).toEqual(['no_round']);

    const host = new RoundFollower({
      bus,
      roomId: ROOM,
      roomNow: async () => roomState({ interaction_mode: 'host', current_round: { round_id: 'H1', completed: false } as RoomRecord['current_round'] }),
    });
    const guest = message('Guest', 'user', 'H1');
    bus.publish(newMessage(guest));
    host.posted(guest);
    expect(brief(await collect(host))).toEqual(['no_round']);
  });

  it("waits while the room's agents are all offline: the round starts when one comes online", async () => {
    const bus = new InProcessBus();
    const offline = roomState({ members: [{ name: 'A', role: 'ai_agent' }] as RoomRecord['members'] });
    const follower = new RoundFollower({ bus, roomId: ROOM, roomNow: async () => offline });
    const mine = message('Ann', 'user', null, 'hello?');
    bus.publish(newMessage(mine));
    follower.posted(mine);
    const done = collect(follower);
    await new Promise((resolve) => setImmediate(resolve));
    bus.publish(start('R2'));
    bus.publish(newMessage(message('A', 'ai_agent', 'R2', 'back now')));
    bus.publish(end('R2'));
    expect(brief(await done)).toEqual(['round R2', 'answer A: back now', 'end R2']);
  });

  it('keeps waiting in a paused room until stopped (cancel), and never touches the room', async () => {
    const bus = new InProcessBus();
    let stops = 0;
    const follower = new RoundFollower({ bus, roomId: ROOM, roomNow: async () => roomState({ system_status: 'paused' }), onStop: () => stops++ });
    const mine = message('Ann', 'user', null);
    bus.publish(newMessage(mine));
    follower.posted(mine);
    const done = collect(follower);
    await new Promise((resolve) => setImmediate(resolve));
    follower.stop();
    expect(brief(await done)).toEqual(['stopped']);
    expect(stops).toBe(1);
  });

  it("an agent's post belongs to the round it answered in", async () => {
    const bus = new InProcessBus();
    const follower = new RoundFollower({ bus, roomId: ROOM, roomNow: async () => roomState({}) });
    const mine = message('A', 'ai_agent', 'R5', 'my own answer');
    bus.publish(newMessage(mine));
    follower.posted(mine);
    const done = collect(follower);
    bus.publish(newMessage(message('B', 'ai_agent', 'R5', 'reply to A')));
    bus.publish(end('R5'));
    expect(brief(await done)).toEqual(['round R5', 'answer B: reply to A', 'end R5']);
  });
});
