// Read-your-writes whichever node a client talks to (SPEC §11: every guarantee unchanged). On one
// server a join that returned success is followed by a get_room that succeeds, and a person's
// message that gave an agent the turn is followed by a get_context that shows it. With several
// nodes behind a round-robin balancer the read may go to a node whose copy of the room is a
// notification behind: the node checks the room's committed version first and catches up. The
// test makes B miss the notifications (its listening connection is cut just before each write),
// so without that check every read below would be stale.
import { describe, expect, it } from 'vitest';
import { restCall } from '../helpers/process.js';
import { cutFeeds, ok, useClusterNodes } from './cluster-nodes.js';
import { pgTestsEnabled } from './pg-server.js';

const enabled = pgTestsEnabled();
const cluster = useClusterNodes();

describe.skipIf(!enabled)('reads on another node right after a write', () => {
  it('a join on node A, then get_room on node B; a turn given on A, then get_context on B', async () => {
    const site = await cluster.newSite();
    const a = await cluster.node(site);
    const b = await cluster.node(site);
    const person = await ok(a.url, 'register_user', { name: 'Host' });
    const { room } = await ok(a.url, 'create_room', { room_name: 'Fresh reads' }, person.token);
    // B holds the room (it follows its changes through notifications from now on).
    await ok(b.url, 'get_room', { room_id: room.room_id }, person.token);

    const refused: string[] = [];
    for (let i = 0; i < 5; i++) {
      const agent = await ok(a.url, 'register_agent', { name: `Reader${i}` });
      await cutFeeds(site.databaseUrl);
      await ok(a.url, 'join_room', { room_id: room.room_id }, agent.token);
      const read = await restCall(b.url, 'get_room', { room_id: room.room_id }, agent.token);
      if (read.status !== 200) refused.push(`Reader${i}: ${read.body.error.code}`);
    }
    expect(refused).toEqual([]);

    // A room of one person and one agent: each question gives the agent the turn (on A).
    const turns = (await ok(a.url, 'create_room', { room_name: 'Fresh turns' }, person.token)).room;
    const agent = await ok(a.url, 'register_agent', { name: 'Answerer' });
    await ok(a.url, 'join_room', { room_id: turns.room_id }, agent.token);
    await ok(b.url, 'get_room', { room_id: turns.room_id }, agent.token);
    const missing: number[] = [];
    for (let i = 0; i < 5; i++) {
      await cutFeeds(site.databaseUrl);
      await ok(a.url, 'send_message', { room_id: turns.room_id, text_content: `question ${i}` }, person.token);
      const context = await ok(b.url, 'get_context', { room_id: turns.room_id }, agent.token);
      if (context.your_turn === null) missing.push(i);
      await ok(a.url, 'send_message', { room_id: turns.room_id, text_content: `answer ${i}` }, agent.token);
    }
    expect(missing).toEqual([]);
  });

  it('a command on node B right after the turn was given through node A is not refused as not_your_turn', async () => {
    const site = await cluster.newSite();
    const a = await cluster.node(site);
    const b = await cluster.node(site);
    const person = await ok(a.url, 'register_user', { name: 'Asker' });
    const { room } = await ok(a.url, 'create_room', { room_name: 'Fresh writes' }, person.token);
    const first = await ok(a.url, 'register_agent', { name: 'First' });
    const second = await ok(a.url, 'register_agent', { name: 'Second' });
    await ok(a.url, 'join_room', { room_id: room.room_id }, first.token);
    await ok(a.url, 'join_room', { room_id: room.room_id }, second.token);
    await ok(b.url, 'get_room', { room_id: room.room_id }, second.token); // B holds the room
    for (let i = 0; i < 3; i++) {
      await ok(a.url, 'send_message', { room_id: room.room_id, text_content: `ask ${i}` }, person.token); // First's turn
      await expect.poll(async () => (await ok(b.url, 'get_context', { room_id: room.room_id }, first.token)).your_turn !== null).toBe(true);
      await cutFeeds(site.databaseUrl); // B misses the notification of the next turn
      await ok(a.url, 'send_message', { room_id: room.room_id, text_content: `first ${i}` }, first.token); // Second's turn, on A
      const answer = await restCall(b.url, 'send_message', { room_id: room.room_id, text_content: `second ${i}` }, second.token);
      expect(answer.body.error?.code ?? 'ok', `second ${i}`).toBe('ok');
    }
  });

  it('get_full_message and wait_for_turn without room_id on node B right after a join and a turn through node A', async () => {
    const site = await cluster.newSite();
    const a = await cluster.node(site);
    const b = await cluster.node(site);
    const person = await ok(a.url, 'register_user', { name: 'Poster' });
    const { room } = await ok(a.url, 'create_room', { room_name: 'Fresh lookups' }, person.token);
    const { message } = await ok(a.url, 'send_message', { room_id: room.room_id, text_content: 'the plan' }, person.token);
    await ok(b.url, 'get_room', { room_id: room.room_id }, person.token); // B holds the room

    // A member since a join through A: the message is theirs to read on B.
    const hidden: string[] = [];
    for (let i = 0; i < 5; i++) {
      const agent = await ok(a.url, 'register_agent', { name: `Looker${i}` });
      await cutFeeds(site.databaseUrl);
      await ok(a.url, 'join_room', { room_id: room.room_id }, agent.token);
      const read = await restCall(b.url, 'get_full_message', { message_id: message.message_id }, agent.token);
      if (read.status !== 200) hidden.push(`Looker${i}: ${read.body.error.code}`);
    }
    expect(hidden).toEqual([]);

    // A turn given through A is found by a wait on B that names no room (and does not wait).
    const { room: duet } = await ok(a.url, 'create_room', { room_name: 'Fresh waits' }, person.token);
    const agent = await ok(a.url, 'register_agent', { name: 'Waiter' });
    await ok(a.url, 'join_room', { room_id: duet.room_id }, agent.token);
    await ok(b.url, 'get_room', { room_id: duet.room_id }, agent.token);
    const missed: number[] = [];
    for (let i = 0; i < 5; i++) {
      await cutFeeds(site.databaseUrl);
      await ok(a.url, 'send_message', { room_id: duet.room_id, text_content: `question ${i}` }, person.token);
      const waited = await ok(b.url, 'wait_for_turn', { timeout_s: 0 }, agent.token);
      if (waited.your_turn?.room_id !== duet.room_id) missed.push(i);
      await ok(a.url, 'send_message', { room_id: duet.room_id, text_content: `answer ${i}` }, agent.token);
    }
    expect(missed).toEqual([]);
  });
});
