// Every subscriber on every node gets the same events (SPEC §11), not only the same messages: a
// node that did not commit a change replays the events the committing node published (carried
// in its notification, runtime/event-plan.ts) instead of rebuilding them from the state
// difference, which sent room_update once per refresh and could not see a round that began and
// ended inside one commit. Two nodes, commits on both, a person watching on each.
import { describe, expect, it } from 'vitest';
import { TestSocket, type AnyEventFrame } from '../helpers/ws.js';
import { ok, useClusterNodes, wsUrlOf } from './cluster-nodes.js';
import { pgTestsEnabled } from './pg-server.js';

const enabled = pgTestsEnabled();
const cluster = useClusterNodes();

describe.skipIf(!enabled)('the same events on every node', () => {
  it('a conversation with commits on both nodes: both watchers see the same event stream', async () => {
    const site = await cluster.newSite();
    const a = await cluster.node(site);
    const b = await cluster.node(site);
    const host = await ok(a.url, 'register_user', { name: 'HostA' });
    const guest = await ok(b.url, 'register_user', { name: 'GuestB' });
    const { room } = await ok(a.url, 'create_room', { room_name: 'Same events' }, host.token);
    await ok(b.url, 'join_room', { room_id: room.room_id }, guest.token);
    const agents = {
      Alpha: { node: a, token: (await ok(a.url, 'register_agent', { name: 'Alpha' })).token as string },
      Beta: { node: b, token: (await ok(b.url, 'register_agent', { name: 'Beta' })).token as string },
    };
    await ok(a.url, 'join_room', { room_id: room.room_id }, agents.Alpha.token);
    await ok(b.url, 'join_room', { room_id: room.room_id }, agents.Beta.token);
    const watchA = await TestSocket.connect(wsUrlOf(a), host.token);
    const watchB = await TestSocket.connect(wsUrlOf(b), guest.token);
    const fromA = watchA.mark();
    const fromB = watchB.mark();

    /**
     * Each agent answers its turns through its own node until the room is idle. The engine
     * starts a follow-up round in the same step as the answer that ends a round, so a room
     * whose round is over, read on the node that made the last write, has nothing more coming
     * (no silence is taken for the end). `last` is the node of the last write.
     */
    const answerTurns = async (last: typeof a): Promise<void> => {
      let node = last;
      for (let answered = 0; ; answered++) {
        const round = (await ok(node.url, 'get_room', { room_id: room.room_id }, host.token)).room.current_round;
        if (!round || round.completed) return;
        const name = round.turn.agent as 'Alpha' | 'Beta';
        const agent = agents[name];
        const text = `${name} answers ${answered}`;
        await ok(agent.node.url, 'send_message', { room_id: room.room_id, text_content: text }, agent.token);
        await watchA.waitForEvent('message_new', (d) => d.message.text_content === text);
        node = agent.node;
      }
    };

    await ok(a.url, 'send_message', { room_id: room.room_id, text_content: 'first question' }, host.token);
    await answerTurns(a);
    await ok(b.url, 'send_message', { room_id: room.room_id, text_content: '@Beta a question for you' }, guest.token);
    await answerTurns(b);
    await ok(b.url, 'update_room', { room_id: room.room_id, max_auto_rounds: 5 }, host.token);

    const stream = (socket: TestSocket, from: number) =>
      socket.since(from).filter((f) => f.type === 'event' && (f as AnyEventFrame).room_id === room.room_id).map((f) => {
        const e = f as AnyEventFrame;
        return `${e.event} ${JSON.stringify(e.data)}`;
      });
    // The last change is B's update_room: once both watchers have its room_update, both streams
    // are complete (A's length read any earlier may still lack the events that reach A last,
    // through B's notification).
    const lastChange = (d: any) => d.room?.settings?.max_auto_rounds === 5;
    await watchA.waitForEventFrom(fromA, 'room_update', lastChange);
    await watchB.waitForEventFrom(fromB, 'room_update', lastChange);
    await watchA.barrier();
    await watchB.barrier();
    expect(stream(watchB, fromB)).toEqual(stream(watchA, fromA));
    expect(stream(watchA, fromA).filter((e) => e.startsWith('room_update')).length).toBeGreaterThan(0);
    await watchA.close();
    await watchB.close();
  });

  it('a node that missed several commits replays their events as kept by the store, not a difference', async () => {
    const site = await cluster.newSite();
    const a = await cluster.node(site);
    const b = await cluster.node(site);
    const host = await ok(a.url, 'register_user', { name: 'Asker' });
    const guest = await ok(b.url, 'register_user', { name: 'Follower' });
    const alpha = await ok(a.url, 'register_agent', { name: 'Alpha' });
    const { room } = await ok(a.url, 'create_room', { room_name: 'Missed commits' }, host.token);
    await ok(b.url, 'join_room', { room_id: room.room_id }, guest.token);
    await ok(a.url, 'join_room', { room_id: room.room_id }, alpha.token);
    const watchA = await TestSocket.connect(wsUrlOf(a), host.token);
    const watchB = await TestSocket.connect(wsUrlOf(b), guest.token);
    const fromA = watchA.mark();
    const fromB = watchB.mark();

    // B takes no notification for a while: every commit below happens behind its back.
    const rooms = b.app.rooms;
    const remoteChange = rooms.remoteChange.bind(rooms);
    rooms.remoteChange = () => undefined;
    for (const question of ['first question', '@Alpha a second one']) {
      const cursor = watchA.mark();
      await ok(a.url, 'send_message', { room_id: room.room_id, text_content: question }, host.token);
      await watchA.waitForEventFrom(cursor, 'agent_turn');
      await ok(a.url, 'send_message', { room_id: room.room_id, text_content: `answer to ${question}` }, alpha.token);
      await watchA.waitForEventFrom(cursor, 'round_end');
    }
    await ok(a.url, 'update_room', { room_id: room.room_id, max_auto_rounds: 4 }, host.token);
    // Back: B reads what it missed, several versions at once.
    rooms.remoteChange = remoteChange;
    rooms.refreshAll();

    const stream = (socket: TestSocket, from: number) =>
      socket.since(from).filter((f) => f.type === 'event' && (f as AnyEventFrame).room_id === room.room_id).map((f) => {
        const e = f as AnyEventFrame;
        return `${e.event} ${JSON.stringify(e.data)}`;
      });
    expect(stream(watchA, fromA).filter((e) => e.startsWith('agent_turn')).length).toBe(2);
    await expect.poll(() => stream(watchB, fromB).length, { timeout: 5000 }).toBeGreaterThanOrEqual(stream(watchA, fromA).length);
    expect(stream(watchB, fromB)).toEqual(stream(watchA, fromA));
    await watchA.close();
    await watchB.close();
  });
});

