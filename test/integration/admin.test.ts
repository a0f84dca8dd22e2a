// Room administration, turn control, deletion and paging over real HTTP.
import { afterEach, describe, expect, it } from 'vitest';
import type { RoomEvent } from '../../src/events/bus.js';
import { expectError, registerUser, roomWithAgents, startTestServer, type TestServer } from '../helpers/server.js';

let server: TestServer;
afterEach(async () => {
  await server?.stop();
});

function collect(s: TestServer, roomId: string) {
  const events: RoomEvent[] = [];
  s.app.bus.subscribe((e) => {
    if (e.room_id === roomId) events.push(e);
  });
  return events;
}

type EventOf<N extends RoomEvent['event']> = Extract<RoomEvent, { event: N }>;

/** Resolves with the next event of the room named `name` that passes `test`; call it before the action. */
function nextEvent<N extends RoomEvent['event']>(s: TestServer, roomId: string, name: N, test: (e: EventOf<N>) => boolean = () => true) {
  return new Promise<EventOf<N>>((resolve) => {
    const unsubscribe = s.app.bus.subscribe((e) => {
      if (e.room_id !== roomId || e.event !== name || !test(e as EventOf<N>)) return;
      unsubscribe();
      resolve(e as EventOf<N>);
    });
  });
}

async function adminRoom(names: string[], opts: Record<string, unknown> = {}) {
  const { person: owner, room, agents } = await roomWithAgents(server, 'Owner', { room_name: 'Admin', ...opts }, names);
  return { owner, room, agents, events: collect(server, room.room_id) };
}

describe('update_room', () => {
  it('changes settings for admins, sets and clears the password, and ends a round on mode change', async () => {
    server = await startTestServer({ turnTimeoutMs: 5000 });
    const { owner, room, agents, events } = await adminRoom(['A', 'B']);
    await expectError(server.call('update_room', { room_id: room.room_id, max_auto_rounds: 2 }, agents[0]!.token), 403, 'forbidden');
    await expectError(server.call('update_room', { room_id: room.room_id, turn_timeout_ms: 5 }, owner.token), 400, 'validation_error');
    const updated = await server.ok(
      'update_room',
      { room_id: room.room_id, room_description: '新描述', max_auto_rounds: 2, turn_timeout_ms: 2000, user_participation: false, password: 'pw1' },
      owner.token,
    );
    expect(updated.room).toMatchObject({ room_description: '新描述', user_participation: false, has_password: true });
    expect(updated.room.settings).toMatchObject({ max_auto_rounds: 2, turn_timeout_ms: 2000 });
    await expect.poll(() => events.some((e) => e.event === 'room_update')).toBe(true);

    // The room's own timeout applies to turns.
    const sentAt = Date.now();
    await server.ok('send_message', { room_id: room.room_id, text_content: 'go' }, owner.token);
    const { room: running } = await server.ok('get_room', { room_id: room.room_id }, owner.token);
    // The room's 2000 ms from the moment the turn was issued (between the send and this read).
    const deadline = Date.parse(running.current_round.turn.deadline);
    expect(deadline).toBeGreaterThanOrEqual(sentAt + 2000);
    expect(deadline).toBeLessThanOrEqual(Date.now() + 2000);

    const ended = nextEvent(server, room.room_id, 'round_end');
    await server.ok('update_room', { room_id: room.room_id, interaction_mode: 'host' }, owner.token);
    expect((await ended).data.reason).toBe('superseded');
    // The new mode applies from the next message: the host's mentions start a host round.
    const started = nextEvent(server, room.room_id, 'round_start');
    await server.ok('send_message', { room_id: room.room_id, text_content: '@B 请总结' }, owner.token);
    expect((await started).data).toMatchObject({ mode: 'host', kind: 'host', agent_queue: ['B'] });
    const { room: hosted } = await server.ok('get_room', { room_id: room.room_id }, owner.token);
    expect(hosted.current_round).toMatchObject({ kind: 'host', agent_queue: ['B'], completed: false, turn: { agent: 'B', can_skip: false } });
    const cleared = await server.ok('update_room', { room_id: room.room_id, password: null }, owner.token);
    expect(cleared.room.has_password).toBe(false);
  });
});

describe('admin error codes', () => {
  it('update_room, remove_member and delete_message name the missing room, membership or message; archived rooms refuse updates', async () => {
    server = await startTestServer();
    const { owner, room } = await adminRoom(['A']);
    const outsider = await registerUser(server, 'Outsider');
    await expectError(server.call('update_room', { room_id: 'missing-room', max_auto_rounds: 2 }, owner.token), 404, 'room_not_found');
    await expectError(server.call('update_room', { room_id: room.room_id, max_auto_rounds: 2 }, outsider.token), 403, 'not_a_member');
    await expectError(server.call('remove_member', { room_id: room.room_id, name: 'A' }, outsider.token), 403, 'not_a_member');
    const { message } = await server.ok('send_message', { room_id: room.room_id, text_content: 'mine' }, owner.token);
    await expectError(server.call('delete_message', { message_id: message.message_id }, outsider.token), 404, 'message_not_found');
    await expectError(server.call('delete_message', { message_id: '00000000-0000-4000-8000-000000000000' }, owner.token), 404, 'message_not_found');
    await server.ok('archive_room', { room_id: room.room_id }, owner.token);
    await expectError(server.call('update_room', { room_id: room.room_id, room_description: 'late' }, owner.token), 403, 'forbidden');
    const { room: after } = await server.ok('get_room', { room_id: room.room_id }, owner.token);
    expect(after.room_description).toBe('');
  });
});

describe('a host who is not the creator (SPEC §3)', () => {
  it('inherits the host flag with a room_update, then pauses, announces and starts rounds', async () => {
    server = await startTestServer({ turnTimeoutMs: 5000 });
    const { owner, room, agents } = await adminRoom(['Heir', 'Other'], { interaction_mode: 'host' });
    const heir = agents[0]!;
    const other = agents[1]!;
    const hostChange = nextEvent(server, room.room_id, 'room_update', (e) => e.data.room.members.some((m) => m.name === 'Heir' && m.is_host));
    await server.ok('leave_room', { room_id: room.room_id }, owner.token);
    expect((await hostChange).data.room.members.map((m) => [m.name, m.is_host])).toEqual([
      ['Heir', true],
      ['Other', false],
    ]);

    await expectError(server.call('set_room_status', { room_id: room.room_id, system_status: 'paused' }, other.token), 403, 'forbidden');
    const paused = await server.ok('set_room_status', { room_id: room.room_id, system_status: 'paused' }, heir.token);
    expect(paused.room.system_status).toBe('paused');
    const announced = await server.ok('set_announcement', { room_id: room.room_id, user_announcement: '轮流发言' }, heir.token);
    expect(announced.room.announcement).toMatchObject({ user_announcement: '轮流发言', announcement_publisher: 'Heir' });
    await server.ok('set_room_status', { room_id: room.room_id, system_status: 'active' }, heir.token);
    // In host mode start_round gives an agent host the floor.
    const { round } = await server.ok('start_round', { room_id: room.room_id }, heir.token);
    expect(round).toMatchObject({ kind: 'host_floor', agent_queue: ['Heir'], turn: { agent: 'Heir', reason: 'host' } });
  });
});

describe('remove_member', () => {
  it('removes a member; if it held the turn, the turn moves on', async () => {
    server = await startTestServer({ turnTimeoutMs: 5000 });
    const { owner, room, agents, events } = await adminRoom(['A', 'B']);
    await server.ok('send_message', { room_id: room.room_id, text_content: 'go' }, owner.token);
    await expectError(server.call('remove_member', { room_id: room.room_id, name: 'B' }, agents[0]!.token), 403, 'forbidden');
    await expectError(server.call('remove_member', { room_id: room.room_id, name: 'Nobody' }, owner.token), 404, 'not_found');
    const { room: after } = await server.ok('remove_member', { room_id: room.room_id, name: 'a' }, owner.token);
    expect(after.members.map((m: { name: string }) => m.name)).toEqual(['Owner', 'B']);
    expect(after.current_round.turn.agent).toBe('B');
    await expect.poll(() => events.some((e) => e.event === 'member_leave' && e.data.member.name === 'A')).toBe(true);
    await expectError(server.call('get_room', { room_id: room.room_id }, agents[0]!.token), 403, 'not_a_member');
    const { messages } = await server.ok('get_messages', { room_id: room.room_id, after_seq: 0 }, owner.token);
    expect(messages.filter((m: { visible: boolean }) => !m.visible)).toHaveLength(0);
  });
});

describe('archive_room', () => {
  it('makes the room read-only and hides it from the list unless asked', async () => {
    server = await startTestServer();
    const { owner, room, agents } = await adminRoom(['A']);
    await server.ok('send_message', { room_id: room.room_id, text_content: 'before' }, owner.token);
    await expectError(server.call('archive_room', { room_id: room.room_id }, agents[0]!.token), 403, 'forbidden');
    const { room: archived } = await server.ok('archive_room', { room_id: room.room_id }, owner.token);
    expect(archived).toMatchObject({ archived: true, system_status: 'paused' });
    await expectError(server.call('send_message', { room_id: room.room_id, text_content: 'after' }, owner.token), 403, 'forbidden');
    const visible = await server.ok('list_rooms', {}, owner.token);
    expect(visible.rooms.map((r: { room_id: string }) => r.room_id)).not.toContain(room.room_id);
    const all = await server.ok('list_rooms', { include_archived: true }, owner.token);
    expect(all.rooms.map((r: { room_id: string }) => r.room_id)).toContain(room.room_id);
    const { messages } = await server.ok('get_messages', { room_id: room.room_id }, owner.token);
    expect(messages.map((m: { text_content: string }) => m.text_content)).toEqual(['before']);
  });
});

describe('pass_turn and extend_turn', () => {
  it('passes a silent agent with a passed record; extends at most three times, each with a later deadline re-sent in agent_turn', async () => {
    // A clock the test moves, so that each extension's deadline is measurably later.
    let clock = Date.now();
    server = await startTestServer({ turnTimeoutMs: 5000 }, { now: () => clock });
    const { owner, room, agents } = await adminRoom(['A', 'B']);
    await expectError(server.call('pass_turn', { room_id: room.room_id }, owner.token), 409, 'conflict');
    await server.ok('send_message', { room_id: room.room_id, text_content: 'go' }, owner.token);
    await expectError(server.call('pass_turn', { room_id: room.room_id }, agents[1]!.token), 403, 'forbidden');
    const passed = await server.ok('pass_turn', { room_id: room.room_id }, owner.token);
    expect(passed.passed).toBe('A');
    const { messages } = await server.ok('get_messages', { room_id: room.room_id, after_seq: 0 }, owner.token);
    expect(messages.at(-1)).toMatchObject({ sender: 'A', visible: false, skip_reason: 'passed' });

    const b = agents[1]!;
    await expectError(server.call('extend_turn', { room_id: room.room_id }, agents[0]!.token), 409, 'not_your_turn');
    let deadline = (await server.ok('get_context', { room_id: room.room_id }, b.token)).your_turn.deadline as string;
    for (let i = 0; i < 3; i++) {
      clock += 1000;
      const resent = nextEvent(server, room.room_id, 'agent_turn', (e) => e.data.agent_name === 'B');
      const extended = await server.ok('extend_turn', { room_id: room.room_id }, b.token);
      expect(extended.extensions).toBe(i + 1);
      expect(Date.parse(extended.your_turn.deadline)).toBe(clock + 5000);
      expect(Date.parse(extended.your_turn.deadline)).toBeGreaterThan(Date.parse(deadline));
      expect((await resent).data.deadline).toBe(extended.your_turn.deadline);
      deadline = extended.your_turn.deadline;
    }
    await expectError(server.call('extend_turn', { room_id: room.room_id }, b.token), 409, 'conflict');
  });

  it('refuses extend_turn while paused; pass_turn still works and the next turn waits for resume', async () => {
    server = await startTestServer({ turnTimeoutMs: 5000 });
    const { owner, room, agents, events } = await adminRoom(['A', 'B']);
    await server.ok('send_message', { room_id: room.room_id, text_content: 'go' }, owner.token);
    await server.ok('set_room_status', { room_id: room.room_id, system_status: 'paused' }, owner.token);
    await expectError(server.call('extend_turn', { room_id: room.room_id }, agents[0]!.token), 409, 'room_paused');
    // pass_turn is how an admin clears a silent agent; a pause must not block it (docs/turns.md).
    const turnsBefore = events.filter((e) => e.event === 'agent_turn').length;
    const passed = await server.ok('pass_turn', { room_id: room.room_id }, owner.token);
    expect(passed.passed).toBe('A');
    expect(passed.current_round.turn).toBeNull();
    expect(events.filter((e) => e.event === 'agent_turn')).toHaveLength(turnsBefore);
    const resumed = nextEvent(server, room.room_id, 'agent_turn');
    await server.ok('set_room_status', { room_id: room.room_id, system_status: 'active' }, owner.token);
    expect((await resumed).data.agent_name).toBe('B');
  });
});

describe('delete_message', () => {
  it('lets the sender or an admin retract; keeps the seq; broadcasts message_update', async () => {
    server = await startTestServer();
    const { owner, room } = await adminRoom([]);
    const guest = await registerUser(server, 'Guest');
    await server.ok('join_room', { room_id: room.room_id }, guest.token);
    const events = collect(server, room.room_id);
    const mine = (await server.ok('send_message', { room_id: room.room_id, text_content: 'oops' }, guest.token)).message;
    const theirs = (await server.ok('send_message', { room_id: room.room_id, text_content: 'admin text' }, owner.token)).message;
    await expectError(server.call('delete_message', { message_id: theirs.message_id }, guest.token), 403, 'forbidden');
    const deleted = await server.ok('delete_message', { message_id: mine.message_id }, guest.token);
    expect(deleted.message).toMatchObject({ deleted: true, text_content: '', seq: mine.seq });
    await server.ok('delete_message', { message_id: theirs.message_id }, owner.token);
    const byAdmin = await server.ok('send_message', { room_id: room.room_id, text_content: 'guest again' }, guest.token);
    await server.ok('delete_message', { message_id: byAdmin.message.message_id }, owner.token);
    await expect.poll(() => events.filter((e) => e.event === 'message_update').length).toBe(3);
    const { messages } = await server.ok('get_messages', { room_id: room.room_id, after_seq: 0 }, owner.token);
    expect(messages.map((m: { seq: number; deleted: boolean }) => [m.seq, m.deleted])).toEqual([
      [1, true],
      [2, true],
      [3, true],
    ]);
    const search = await server.ok('search_messages', { room_id: room.room_id, query: 'oops' }, owner.token);
    expect(search.messages).toHaveLength(0);
  });
});

describe('get_messages paging', () => {
  it('walks a 1,000-message room both ways without a gap or a repeat', async () => {
    server = await startTestServer();
    const { owner, room } = await adminRoom([]);
    await Promise.all(
      Array.from({ length: 1000 }, (_, i) => server.ok('send_message', { room_id: room.room_id, text_content: `m${i}` }, owner.token)),
    );
    const forward: number[] = [];
    let after = 0;
    for (;;) {
      const { messages } = await server.ok('get_messages', { room_id: room.room_id, after_seq: after, limit: 200 }, owner.token);
      if (messages.length === 0) break;
      forward.push(...messages.map((m: { seq: number }) => m.seq));
      after = messages.at(-1).seq;
    }
    expect(forward).toEqual(Array.from({ length: 1000 }, (_, i) => i + 1));

    const backward: number[] = [];
    let before: number | undefined;
    for (;;) {
      const { messages } = await server.ok(
        'get_messages',
        { room_id: room.room_id, limit: 150, ...(before !== undefined ? { before_seq: before } : {}) },
        owner.token,
      );
      if (messages.length === 0) break;
      backward.unshift(...messages.map((m: { seq: number }) => m.seq));
      before = messages[0].seq;
    }
    expect(backward).toEqual(forward);
    await expectError(server.call('get_messages', { room_id: room.room_id, limit: 201 }, owner.token), 400, 'validation_error');
    // get_context and search_messages have no bound in the contract: more than 200 reads as 200.
    const outsider = (await server.ok('register_agent', { name: 'LimitReader' })).token;
    await server.ok('join_room', { room_id: room.room_id }, outsider);
    const context = await server.ok('get_context', { room_id: room.room_id, limit: 1000 }, outsider);
    expect(context.messages.map((m: { text_content: string }) => m.text_content)).toHaveLength(200);
    const found = await server.ok('search_messages', { room_id: room.room_id, query: 'm', limit: 5000 }, owner.token);
    expect(found.messages).toHaveLength(200);
    await expectError(server.call('get_context', { room_id: room.room_id, limit: 0 }, owner.token), 400, 'validation_error');
  });
});
