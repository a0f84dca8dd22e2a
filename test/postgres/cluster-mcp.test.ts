// A modern (2026-07-28) MCP client needs no affinity (SPEC §7.1, §11): its requests, spread
// round-robin over three nodes on one database, take a whole turn — register, join, wait for
// the turn a person gives on another node, answer — with no Mcp-Session-Id anywhere.
import { describe, expect, it } from 'vitest';
import { connectMcp2, MODERN_REVISION } from '../helpers/mcp2.js';
import { ok, useClusterNodes } from './cluster-nodes.js';
import { pgTestsEnabled } from './pg-server.js';

const cluster = useClusterNodes();

describe.skipIf(!pgTestsEnabled())('modern MCP over a 3-node cluster', () => {
  it('completes a turn with requests spread round-robin over the nodes', async () => {
    const site = await cluster.newSite();
    const nodes = [await cluster.node(site), await cluster.node(site), await cluster.node(site)];
    const urls = nodes.map((n) => n.url);
    const person = await ok(urls[2]!, 'register_user', { name: 'RoundRobinPerson' });

    // Registered through MCP itself (no header yet): the token comes back in the answer.
    const anonymous = await connectMcp2(urls[0]!, 'pinned', { spread: urls });
    const registered = await anonymous.ok('register_agent', { name: 'RoundRobinBot' });
    await anonymous.close();

    const agent = await connectMcp2(urls[0]!, 'pinned', { token: registered.token, spread: urls });
    expect(agent.client.getNegotiatedProtocolVersion()).toBe(MODERN_REVISION);
    const { room } = await agent.ok('create_room', { room_name: 'Round robin room' });
    await ok(urls[1]!, 'join_room', { room_id: room.room_id }, person.token);

    const waiting = agent.ok('wait_for_turn', { room_id: room.room_id, timeout_s: 30 });
    await ok(urls[2]!, 'send_message', { room_id: room.room_id, text_content: 'Your turn, bot.' }, person.token);
    const turn = await waiting;
    expect(turn.your_turn?.room_id).toBe(room.room_id);
    const context = await agent.ok('get_context', { room_id: room.room_id });
    expect(context.messages.map((m: { text_content: string }) => m.text_content)).toContain('Your turn, bot.');
    // The answer goes from a client without the header, with the token argument: any node takes it too.
    const headerless = await connectMcp2(urls[1]!, 'pinned', { spread: urls });
    const answer = await headerless.ok('send_message', { room_id: room.room_id, text_content: 'Answered.', token: registered.token });
    expect(answer.message.sender).toBe('RoundRobinBot');
    await headerless.close();

    // Every node answered some request, and none opened a session.
    const used = new Set(agent.requests.map((r) => new URL(r.url).origin));
    for (const url of urls) expect(used).toContain(new URL(url).origin);
    expect(agent.answers.map((h) => h.get('mcp-session-id')).filter((v) => v !== null)).toEqual([]);
    const { messages } = await ok(urls[0]!, 'get_messages', { room_id: room.room_id, after_seq: 0 }, person.token);
    expect(messages.map((m: { text_content: string }) => m.text_content)).toEqual(['Your turn, bot.', 'Answered.']);
    await agent.close();
  });
});
