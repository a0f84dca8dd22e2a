// The turn engine on the real server, over real HTTP, with a ~1 s turn timeout: default and host
// mode. A suite function, run by test/integration/turns.test.ts on the file store and by
// test/postgres/behaviour.test.ts on PostgreSQL (startTestServer takes the store it is given).
import { afterEach, describe, expect, it } from 'vitest';
import type { RoomEvent } from '../../src/events/bus.js';
import { ManualClock } from '../helpers/clock.js';
import { expectError, registerAgent, registerUser, roomWithAgents, startTestServer, type TestServer } from '../helpers/server.js';

let server: TestServer;

/** Records the bus's events and lets a test wait for one. */
function recorder(s: TestServer, roomId: string) {
  const events: RoomEvent[] = [];
  let consumed = 0;
  const waiters: { match: (e: RoomEvent) => boolean; resolve: (e: RoomEvent) => void }[] = [];
  s.app.bus.subscribe((e) => {
    if (e.room_id !== roomId) return;
    events.push(e);
    const waiter = waiters[0];
    if (waiter?.match(e)) {
      waiters.shift();
      consumed = events.length;
      waiter.resolve(e);
    }
  });
  return {
    events,
    /** The next matching event after the last one consumed (already seen or still to come). */
    next(match: (e: RoomEvent) => boolean, timeoutMs = 5000): Promise<RoomEvent> {
      const seen = events.slice(consumed).findIndex(match);
      if (seen !== -1) {
        consumed += seen + 1;
        return Promise.resolve(events[consumed - 1]!);
      }
      // A limit on the wait for the event (as TestSocket.waitFor has), not a wait of its own.
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`event did not arrive; got: ${events.map((e) => e.event + (e.event === 'agent_turn' ? ':' + e.data.agent_name : e.event === 'round_end' ? ':' + e.data.reason : '')).join(', ')}`)), timeoutMs);
        waiters.push({ match, resolve: (e) => (clearTimeout(timer), resolve(e)) });
      });
    },
    turns: () => events.filter((e) => e.event === 'agent_turn').map((e) => (e.data as { agent_name: string }).agent_name),
    names: () => events.map((e) => e.event),
  };
}

const isTurn = (name: string) => (e: RoomEvent) => e.event === 'agent_turn' && e.data.agent_name === name;
const isRoundEnd = (e: RoomEvent) => e.event === 'round_end';

async function setup(mode: 'default' | 'host' = 'default', agentNames = ['A', 'B', 'C']) {
  const { person: user, room, agents } = await roomWithAgents(server, 'U', { room_name: 'Turns', interaction_mode: mode }, agentNames);
  return { user, room, agents, rec: recorder(server, room.room_id) };
}

export function turnEngineSuites(): void {
  describe('turn engine', () => {
    afterEach(async () => {
      await server?.stop();
    });

    describe('default mode on the real server', () => {
      it('runs a full round: answer, skip, timeout, then the next round', async () => {
        // A manual clock: C's silence times out when the test moves time past its deadline.
        const clock = new ManualClock(Date.now());
        server = await startTestServer({ turnTimeoutMs: 1000 }, { now: clock.now, timers: clock });
        const { user, room, agents, rec } = await setup();
        const [a, b] = agents;
        const firstTurn = rec.next(isTurn('A'));
        await server.ok('send_message', { room_id: room.room_id, text_content: '大家好，讨论一下' }, user.token);
        const turnA = (await firstTurn) as Extract<RoomEvent, { event: 'agent_turn' }>;
        expect(turnA.data).toMatchObject({ agent_name: 'A', agent_id: a!.id, can_skip: true, reason: 'rotation', timeout_ms: 1000 });
        expect(Date.parse(turnA.data.deadline)).toBe(clock.now() + 1000);

        await expectError(server.call('send_message', { room_id: room.room_id, text_content: 'me first' }, b!.token), 409, 'not_your_turn');
        const turnB = rec.next(isTurn('B'));
        await server.ok('send_message', { room_id: room.room_id, text_content: 'A here' }, a!.token);
        await turnB;
        const turnC = rec.next(isTurn('C'));
        expect(await server.ok('skip_response', { room_id: room.room_id }, b!.token)).toEqual({ skipped: true });
        const cTurn = (await turnC) as Extract<RoomEvent, { event: 'agent_turn' }>;
        // C stays silent: the timeout passes its turn and the round ends. Only A answered, so no
        // follow-up round starts (v2: answers from two different agents are needed); the next
        // person's message starts the next round with A again.
        expect(Date.parse(cTurn.data.deadline)).toBe(clock.now() + 1000);
        clock.advance(999);
        expect((await server.ok('get_room', { room_id: room.room_id }, user.token)).room.current_round.turn.agent).toBe('C');
        clock.advance(1);
        const end = (await rec.next(isRoundEnd)) as Extract<RoomEvent, { event: 'round_end' }>;
        expect(end.data.reason).toBe('completed');
        const { room: ended } = await server.ok('get_room', { room_id: room.room_id }, user.token);
        expect(ended.current_round).toMatchObject({ round_id: end.data.round_id, completed: true, turn: null });
        const nextA = rec.next(isTurn('A'));
        await server.ok('send_message', { room_id: room.room_id, text_content: '继续' }, user.token);
        await nextA;

        const { messages } = await server.ok('get_messages', { room_id: room.room_id, after_seq: 0 }, user.token);
        expect(messages.map((m: any) => [m.sender, m.visible, m.skip_reason, m.text_content])).toEqual([
          ['U', true, null, '大家好，讨论一下'],
          ['A', true, null, 'A here'],
          ['B', false, 'skip', '（跳过）'],
          ['C', false, 'timeout', '（超时跳过）'],
          ['U', true, null, '继续'],
        ]);
        expect(messages.every((m: any) => m.round_id === end.data.round_id || m.sender === 'U')).toBe(true);
        expect(messages[0].processed).toBe(true);
        const { room: stored } = await server.ok('get_room', { room_id: room.room_id }, user.token);
        expect(stored.history_rounds).toContain(end.data.round_id);
        expect(stored.current_round.turn.agent).toBe('A');
      });

      it('moves mentioned agents next, refuses their skip, and ends the round with the chain', async () => {
        server = await startTestServer({ turnTimeoutMs: 5000 });
        const { user, room, agents, rec } = await setup();
        const [a, , c] = agents;
        for (const agent of agents) await server.ok('get_context', { room_id: room.room_id }, agent.token); // online
        const first = rec.next(isTurn('A'));
        await server.ok('send_message', { room_id: room.room_id, text_content: 'start' }, user.token);
        await first;
        // A mentions C while answering: C goes right after A and may not skip.
        const turnC = rec.next(isTurn('C'));
        const sent = await server.ok('send_message', { room_id: room.room_id, text_content: '@C 你怎么看？' }, a!.token);
        expect(sent.message.mentions).toEqual(['C']);
        const cTurn = (await turnC) as Extract<RoomEvent, { event: 'agent_turn' }>;
        expect(cTurn.data).toMatchObject({ can_skip: false, reason: 'mention' });
        const ctx = await server.ok('get_context', { room_id: room.room_id }, c!.token);
        expect(ctx.your_turn).toMatchObject({ can_skip: false, deadline: cTurn.data.deadline });
        await expectError(server.call('skip_response', { room_id: room.room_id }, c!.token), 409, 'cannot_skip');
        const end = rec.next(isRoundEnd);
        await server.ok('send_message', { room_id: room.room_id, text_content: '我同意' }, c!.token);
        expect(((await end) as Extract<RoomEvent, { event: 'round_end' }>).data.reason).toBe('mention_chain');
        expect(rec.turns()).not.toContain('B');
      });

      it('keeps the turn with end_turn: false and pauses/resumes with a fresh deadline', async () => {
        server = await startTestServer({ turnTimeoutMs: 5000 });
        const { user, room, agents, rec } = await setup('default', ['A', 'B']);
        const [a] = agents;
        for (const agent of agents) await server.ok('get_context', { room_id: room.room_id }, agent.token);
        const first = rec.next(isTurn('A'));
        await server.ok('send_message', { room_id: room.room_id, text_content: 'go' }, user.token);
        await first;
        const again = rec.next(isTurn('A'));
        await server.ok('send_message', { room_id: room.room_id, text_content: 'step 1', end_turn: false }, a!.token);
        await again; // re-sent with a new deadline, A keeps the turn

        await server.ok('set_room_status', { room_id: room.room_id, system_status: 'paused' }, user.token);
        await expectError(server.call('send_message', { room_id: room.room_id, text_content: 'x' }, a!.token), 409, 'room_paused');
        expect((await server.ok('get_context', { room_id: room.room_id }, a!.token)).your_turn).toBeNull();
        // People may still post while paused.
        await server.ok('send_message', { room_id: room.room_id, text_content: 'while paused' }, user.token);

        const resumed = rec.next(isTurn('A'));
        const before = Date.now();
        await server.ok('set_room_status', { room_id: room.room_id, system_status: 'active' }, user.token);
        const turn = (await resumed) as Extract<RoomEvent, { event: 'agent_turn' }>;
        expect(Date.parse(turn.data.deadline)).toBeGreaterThanOrEqual(before + 5000 - 50);
        // After a visible post, skip ends the turn without a record.
        const toB = rec.next(isTurn('B'));
        await server.ok('skip_response', { room_id: room.room_id }, a!.token);
        await toB;
        const { messages } = await server.ok('get_messages', { room_id: room.room_id, after_seq: 0 }, user.token);
        expect(messages.filter((m: any) => !m.visible)).toHaveLength(0);
      });

      it('trips the loop guard with a visible system message and waits for a person', async () => {
        server = await startTestServer({ turnTimeoutMs: 5000 });
        const { user, room, agents, rec } = await setup('default', ['A', 'B']);
        const [a, b] = agents;
        await server.ok('update_room', { room_id: room.room_id, max_auto_rounds: 1 }, user.token);
        for (const agent of agents) await server.ok('get_context', { room_id: room.room_id }, agent.token);
        const first = rec.next(isTurn('A'));
        await server.ok('send_message', { room_id: room.room_id, text_content: 'go' }, user.token);
        await first;
        await server.ok('send_message', { room_id: room.room_id, text_content: 'a1' }, a!.token);
        const end = rec.next(isRoundEnd);
        await server.ok('send_message', { room_id: room.room_id, text_content: 'b1' }, b!.token);
        expect(((await end) as Extract<RoomEvent, { event: 'round_end' }>).data.reason).toBe('guard');
        const { messages } = await server.ok('get_messages', { room_id: room.room_id, after_seq: 0 }, user.token);
        const last = messages.at(-1);
        expect(last).toMatchObject({ role: 'system', visible: true });
        expect(last.text_content).toContain('自动轮次上限');
        // No new round until a person posts; agents are refused meanwhile.
        await expectError(server.call('send_message', { room_id: room.room_id, text_content: 'more' }, a!.token), 409, 'not_your_turn');
        const again = rec.next(isTurn('A'));
        await server.ok('send_message', { room_id: room.room_id, text_content: 'continue' }, user.token);
        await again;
      });

      it('wait_for_turn long-polls over REST and returns null after its timeout', async () => {
        server = await startTestServer({ turnTimeoutMs: 5000 });
        const { user, room, agents } = await setup('default', ['A']);
        const [a] = agents;
        const empty = await server.ok('wait_for_turn', { room_id: room.room_id, timeout_s: 1 }, a!.token);
        expect(empty.your_turn).toBeNull();
        const waiting = server.ok('wait_for_turn', { room_id: room.room_id, timeout_s: 20 }, a!.token);
        await expect.poll(() => server.app.rooms.turnListenerCount).toBe(1);
        await server.ok('send_message', { room_id: room.room_id, text_content: '轮到你了' }, user.token);
        const got = await waiting; // answered by the turn: one that ran its 20 s would carry your_turn null
        expect(got.your_turn).toMatchObject({ room_id: room.room_id, can_skip: true });
        expect(got.context.messages.map((m: any) => m.text_content)).toEqual(['轮到你了']);
      });

      it('runs no timer while paused: past the deadline nothing times out; resuming restarts the clock', async () => {
        // The server runs on a manual clock: time passes only when the test advances it.
        const clock = new ManualClock(Date.now());
        server = await startTestServer({ turnTimeoutMs: 1000 }, { now: clock.now, timers: clock });
        const { user, room, agents, rec } = await setup('default', ['A', 'B']);
        for (const agent of agents) await server.ok('get_context', { room_id: room.room_id }, agent.token);
        const first = rec.next(isTurn('A'));
        await server.ok('send_message', { room_id: room.room_id, text_content: 'go' }, user.token);
        await first;
        await server.ok('set_room_status', { room_id: room.room_id, system_status: 'paused' }, user.token);
        // Well past the 1 s deadline: no timer is armed while paused, so nothing can fire.
        clock.advance(1800);
        const paused = await server.ok('get_messages', { room_id: room.room_id, after_seq: 0 }, user.token);
        expect(paused.messages.filter((m: any) => !m.visible)).toEqual([]);
        const { room: stored } = await server.ok('get_room', { room_id: room.room_id }, user.token);
        expect(stored.current_round.turn).toMatchObject({ agent: 'A', deadline: null });

        // Resumed, A gets a fresh full deadline; its silence times out once that has passed.
        const resumed = rec.next(isTurn('A'));
        await server.ok('set_room_status', { room_id: room.room_id, system_status: 'active' }, user.token);
        const turn = (await resumed) as Extract<RoomEvent, { event: 'agent_turn' }>;
        expect(Date.parse(turn.data.deadline)).toBe(clock.now() + 1000);
        const toB = rec.next(isTurn('B'));
        clock.advance(999);
        const early = await server.ok('get_room', { room_id: room.room_id }, user.token);
        expect(early.room.current_round.turn.agent).toBe('A');
        clock.advance(1);
        await toB;
        const { messages } = await server.ok('get_messages', { room_id: room.room_id, after_seq: 0 }, user.token);
        expect(messages.filter((m: any) => !m.visible).map((m: any) => [m.sender, m.skip_reason])).toEqual([['A', 'timeout']]);
      });

      it('wait_for_turn without room_id returns a turn in any of the caller\'s rooms', async () => {
        server = await startTestServer({ turnTimeoutMs: 5000 });
        const { user, agents } = await setup('default', ['A']);
        const [a] = agents;
        const { room: second } = await server.ok('create_room', { room_name: 'Second' }, user.token);
        await server.ok('join_room', { room_id: second.room_id }, a!.token);
        const waiting = server.ok('wait_for_turn', { timeout_s: 20 }, a!.token);
        await server.ok('send_message', { room_id: second.room_id, text_content: '这边' }, user.token);
        const got = await waiting;
        expect(got.your_turn).toMatchObject({ room_id: second.room_id, reason: 'rotation' });
        expect(got.context.messages.map((m: any) => m.text_content)).toEqual(['这边']);
      });

      it('wait_for_turn without room_id also returns a turn in a room the caller joined during the wait', async () => {
        server = await startTestServer({ turnTimeoutMs: 5000 });
        const { user, agents } = await setup('default', ['A']);
        const [a] = agents;
        const { room: later } = await server.ok('create_room', { room_name: 'Joined later' }, user.token);
        const waiting = server.ok('wait_for_turn', { timeout_s: 20 }, a!.token);
        await expect.poll(() => server.app.rooms.turnListenerCount).toBeGreaterThan(0);
        await server.ok('join_room', { room_id: later.room_id }, a!.token);
        await server.ok('send_message', { room_id: later.room_id, text_content: '新房间' }, user.token);
        // The turn comes while the wait runs (the 5 s turn would be over by the wait's 20 s end).
        const got = await waiting;
        expect(got.your_turn).toMatchObject({ room_id: later.room_id });
        expect(got.context.messages.map((m: any) => m.text_content)).toEqual(['新房间']);
      });

      it('passes an offline agent with an invisible record in its own name', async () => {
        server = await startTestServer({ turnTimeoutMs: 5000 }, { presenceWindowMs: 500 });
        const { user, room, agents, rec } = await setup('default', ['A', 'B']);
        const [a, b] = agents;
        await rec.next((e) => e.event === 'member_status_change' && e.data.member.name === 'A' && e.data.member.status === 'offline');
        await server.ok('get_context', { room_id: room.room_id }, b!.token); // B is back online, A is not
        const turnB = rec.next(isTurn('B'));
        await server.ok('send_message', { room_id: room.room_id, text_content: 'anyone?' }, user.token);
        await turnB;
        const { messages } = await server.ok('get_messages', { room_id: room.room_id, after_seq: 0 }, user.token);
        expect(messages.filter((m: any) => !m.visible)).toMatchObject([
          { sender: 'A', sender_id: a!.id, role: 'ai_agent', skip_reason: 'offline', text_content: '（离线跳过）' },
        ]);
      });

      it('lets start_round start rounds for admins only, with conflict while one runs', async () => {
        server = await startTestServer({ turnTimeoutMs: 5000 });
        const { user, room, agents } = await setup('default', ['A', 'B']);
        await expectError(server.call('start_round', { room_id: room.room_id }, agents[0]!.token), 403, 'forbidden');
        const { round } = await server.ok('start_round', { room_id: room.room_id }, user.token);
        expect(round.agent_queue).toEqual(['A', 'B']);
        await expectError(server.call('start_round', { room_id: room.room_id }, user.token), 409, 'conflict');
      });
    });

    describe('host mode on the real server', () => {
      it("runs the host's mention round in mention order; others may not post out of turn", async () => {
        server = await startTestServer({ turnTimeoutMs: 5000 });
        const { user, room, agents, rec } = await setup('host', ['A', 'B']);
        const [a, b] = agents;
        for (const agent of agents) await server.ok('get_context', { room_id: room.room_id }, agent.token);
        await expectError(server.call('send_message', { room_id: room.room_id, text_content: 'hi' }, a!.token), 409, 'not_your_turn');
        const start = rec.next((e) => e.event === 'round_start');
        await server.ok('send_message', { room_id: room.room_id, text_content: '@B 先说，然后 @A' }, user.token);
        const started = (await start) as Extract<RoomEvent, { event: 'round_start' }>;
        expect(started.data.agent_queue).toEqual(['B', 'A']);
        expect(started.data.mode).toBe('host');
        const bTurn = (await rec.next(isTurn('B'))) as Extract<RoomEvent, { event: 'agent_turn' }>;
        expect(bTurn.data).toMatchObject({ can_skip: false, reason: 'host' });
        await expectError(server.call('skip_response', { room_id: room.room_id }, b!.token), 409, 'cannot_skip');
        const toA = rec.next(isTurn('A'));
        await server.ok('send_message', { room_id: room.room_id, text_content: 'B says' }, b!.token);
        await toA;
        // A new host message supersedes the running round.
        const superseded = rec.next(isRoundEnd);
        await server.ok('send_message', { room_id: room.room_id, text_content: '@B 再说一次' }, user.token);
        expect(((await superseded) as Extract<RoomEvent, { event: 'round_end' }>).data.reason).toBe('superseded');
        await rec.next(isTurn('B'));
      });
    });
  });
}

