// One IDE agent over MCP and one networked agent over WebSocket (raw frames of SPEC §8) take
// alternating turns in the same room for three rounds; in the fourth both pass and the room rests.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectMcp, type McpTestClient } from '../helpers/mcp.js';
import { registerAgent, registerUser, startTestServer, type TestServer } from '../helpers/server.js';
import { TestSocket, wsUrl } from '../helpers/ws.js';

let server: TestServer;
let mcpAgent: McpTestClient | undefined;
let socket: TestSocket | undefined;

beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await socket?.close();
  await mcpAgent?.close().catch(() => undefined);
  await server.stop();
});

describe('MCP agent and WebSocket agent in one room', () => {
  it('take alternating turns for three rounds', async () => {
    // The IDE agent registers over MCP (no header) and opens the room.
    mcpAgent = await connectMcp(server.url);
    await mcpAgent.ok('register_agent', { name: 'ide-agent' });
    const { room } = await mcpAgent.ok('create_room', { room_name: 'Duet' });
    const roomId: string = room.room_id;
    // Four rounds of two agents: past the default guard of 3 automatic rounds (SPEC v2 §4).
    await mcpAgent.ok('update_room', { room_id: roomId, max_auto_rounds: 4 });

    // The networked agent answers its turns over the socket: three answers, then a pass.
    const remote = await registerAgent(server, 'net-agent');
    const remoteAnswers: string[] = [];
    const roundStarts: string[] = [];
    const roundEnds: Array<{ round_id: string; reason: string }> = [];
    const failures: unknown[] = [];
    let remoteTurns = 0;
    const agent = await TestSocket.connect(wsUrl(server.url), remote.token);
    socket = agent;
    agent.onEvent((frame) => {
      if (frame.room_id !== roomId) return;
      if (frame.event === 'round_start') roundStarts.push(frame.data.round_id);
      if (frame.event === 'round_end') roundEnds.push({ round_id: frame.data.round_id, reason: frame.data.reason });
      if (frame.event === 'agent_turn' && frame.data.agent_name === 'net-agent') {
        remoteTurns += 1;
        const n = remoteTurns;
        const answer =
          n <= 3
            ? agent.ok('send_message', { room_id: roomId, text_content: `net-agent, round ${n}` }).then(() => remoteAnswers.push(`round ${n}`))
            : agent.ok('skip_response', { room_id: roomId });
        answer.catch((err: unknown) => failures.push(err));
      }
    });
    await agent.ok('join_room', { room_id: roomId });

    // A person opens the conversation.
    const person = await registerUser(server, 'alice');
    await server.ok('join_room', { room_id: roomId }, person.token);
    await server.ok('send_message', { room_id: roomId, text_content: 'Count the rounds with me, please.' }, person.token);

    // The IDE agent's loop: wait_for_turn → context → answer (rounds 1–3), pass in round 4.
    const seenRounds: string[] = [];
    for (let n = 1; n <= 4; n += 1) {
      const turn = await mcpAgent.ok('wait_for_turn', { room_id: roomId, timeout_s: 20 });
      expect(turn.your_turn, `turn ${n}`).toMatchObject({ room_id: roomId, can_skip: true });
      seenRounds.push(turn.your_turn.round_id);
      const texts = turn.context.messages.map((m: { text_content: string }) => m.text_content);
      if (n === 1) expect(texts).toContain('Count the rounds with me, please.');
      else expect(texts).toContain(`net-agent, round ${n - 1}`);
      if (n <= 3) await mcpAgent.ok('send_message', { room_id: roomId, text_content: `ide-agent, round ${n}` });
      else await mcpAgent.ok('skip_response', { room_id: roomId });
    }

    // Round 4 ends with no visible answer, so the room rests.
    await expect.poll(() => roundEnds.length, { timeout: 10_000 }).toBe(4);
    expect(failures).toEqual([]);
    expect(remoteAnswers).toEqual(['round 1', 'round 2', 'round 3']);
    expect(new Set(seenRounds).size).toBe(4);
    expect(roundStarts).toEqual(seenRounds);
    expect(roundEnds.map((e) => e.round_id)).toEqual(seenRounds);
    expect(roundEnds.every((e) => e.reason === 'completed')).toBe(true);

    const { messages } = await server.ok('get_messages', { room_id: roomId, limit: 200 }, person.token);
    const visible = messages.filter((m: { visible: boolean }) => m.visible);
    expect(visible.map((m: { sender: string; text_content: string }) => `${m.sender}: ${m.text_content}`)).toEqual([
      'alice: Count the rounds with me, please.',
      'ide-agent: ide-agent, round 1',
      'net-agent: net-agent, round 1',
      'ide-agent: ide-agent, round 2',
      'net-agent: net-agent, round 2',
      'ide-agent: ide-agent, round 3',
      'net-agent: net-agent, round 3',
    ]);
    for (let i = 0; i < 3; i += 1) {
      expect(visible[1 + 2 * i].round_id).toBe(seenRounds[i]);
      expect(visible[2 + 2 * i].round_id).toBe(seenRounds[i]);
    }
    const skips = messages.filter((m: { visible: boolean }) => !m.visible);
    expect(skips.map((m: { sender: string; skip_reason: string }) => `${m.sender}:${m.skip_reason}`)).toEqual([
      'ide-agent:skip',
      'net-agent:skip',
    ]);
    // Both stayed online throughout.
    const { room: after } = await server.ok('get_room', { room_id: roomId }, person.token);
    for (const name of ['ide-agent', 'net-agent']) {
      expect(after.members.find((m: { name: string }) => m.name === name).status).toBe('online');
    }
    expect(after.current_round?.completed ?? true).toBe(true);
  });
});
