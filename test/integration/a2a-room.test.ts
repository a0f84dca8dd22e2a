// Every room is an A2A agent (SPEC §12), checked with the official SDK's client against the real
// server: the public card, a member's message posted as that member, the task completing with
// the round's agent answers as artifacts, streaming, GetTask, cancel, and refusals.
import { randomUUID } from 'node:crypto';
import { TaskState, type Task } from '@a2a-js/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatroomClient } from '../../src/client/index.js';
import { a2aClient as a2aClientOf, answeringAgent as answeringAgentOn, artifactTexts, bearer, cardUrlOf, sendRequest } from '../helpers/a2a.js';
import { registerAgent, registerUser, startTestServer, type TestServer } from '../helpers/server.js';

let server: TestServer;
const agents: ChatroomClient[] = [];

beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  for (const agent of agents) await agent.close();
  await server?.stop();
});

async function answeringAgent(name: string, roomId: string, options: { silent?: boolean } = {}): Promise<{ name: string; token: string }> {
  const agent = await answeringAgentOn(server.url, name, roomId, options);
  agents.push(agent.client);
  return agent;
}

let roomCounter = 0;
async function roomWithAgents(agentNames: string[], options: { silent?: boolean; turnTimeoutMs?: number } = {}) {
  roomCounter++;
  const person = await registerUser(server, `Ann${roomCounter}`);
  const { room } = await server.ok('create_room', { room_name: `A2A room ${roomCounter}`, room_description: 'Where the bots talk', language: 'en' }, person.token);
  await server.ok('set_announcement', { room_id: room.room_id, user_announcement: 'secret plans for members' }, person.token);
  if (options.turnTimeoutMs) await server.ok('update_room', { room_id: room.room_id, turn_timeout_ms: options.turnTimeoutMs }, person.token);
  const bots = [];
  for (const name of agentNames) bots.push(await answeringAgent(`${name}${roomCounter}`, room.room_id, options));
  return { person, roomId: room.room_id as string, bots };
}

const cardUrl = (roomId: string) => cardUrlOf(server.url, roomId);
const a2aClient = (roomId: string) => a2aClientOf(server.url, roomId);
const auth = bearer;
const request = sendRequest;

/** A raw JSON-RPC POST to a room's interface. */
async function rawRpc(roomId: string, body: string, token?: string) {
  const res = await fetch(`${server.url}/a2a/rooms/${roomId}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'a2a-version': '1.0', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body,
  });
  return { status: res.status, body: (await res.json()) as any };
}

describe('a room as an A2A agent', () => {
  it('serves the public card without a token: name, description, agents as skills, JSON-RPC interface, bearer auth', async () => {
    const { roomId, person } = await roomWithAgents(['Card']);
    const res = await fetch(cardUrl(roomId));
    expect(res.status).toBe(200);
    const text = await res.text();
    const card = JSON.parse(text);
    expect(card.name).toBe(`A2A room ${roomCounter}`);
    expect(card.description).toBe('Where the bots talk');
    expect(card.supportedInterfaces).toEqual([expect.objectContaining({ url: `${server.url}/a2a/rooms/${roomId}`, protocolBinding: 'JSONRPC' })]);
    expect(card.skills.map((s: any) => s.name)).toEqual([`Card${roomCounter}`]);
    expect(card.skills[0].tags).toEqual(['echo', 'testing']);
    expect(JSON.stringify(card.securitySchemes)).toMatch(/Bearer/);
    expect(card.capabilities.streaming).toBe(true);
    // Members-only details stay out: people's names, the announcement.
    expect(text).not.toContain(person.name);
    expect(text).not.toContain('secret plans');

    const client = await a2aClient(roomId);
    const read = await client.getAgentCard();
    expect(read.name).toBe(`A2A room ${roomCounter}`);
    expect(read.skills.map((s) => s.name)).toEqual([`Card${roomCounter}`]);

    const missing = await fetch(cardUrl('no-such-room'));
    expect(missing.status).toBe(404);
  });

  it("posts a member's message as that member; the task completes with the round's agent answers as artifacts", async () => {
    const { roomId, person, bots } = await roomWithAgents(['Alpha', 'Beta']);
    const client = await a2aClient(roomId);
    const result = (await client.sendMessage(request('what is two plus two?'), auth(person.token))) as Task;
    expect(result.id).toBeTruthy();
    expect(result.contextId).toBe(roomId);
    expect(result.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(artifactTexts(result)).toEqual([
      { name: bots[0]!.name, text: `${bots[0]!.name} heard: what is two plus two?` },
      { name: bots[1]!.name, text: `${bots[1]!.name} heard: what is two plus two?` },
    ]);
    const { messages } = await server.ok('get_messages', { room_id: roomId, limit: 50 }, person.token);
    const posted = messages.find((m: any) => m.text_content === 'what is two plus two?');
    expect(posted).toMatchObject({ sender: person.name, role: 'user' });

    // GetTask answers the same task while the server runs; another member cannot read it.
    const again = await client.getTask({ tenant: '', id: result.id }, auth(person.token));
    expect(again.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(artifactTexts(again)).toEqual(artifactTexts(result));
    await expect(client.getTask({ tenant: '', id: result.id }, auth(bots[0]!.token))).rejects.toThrow(/not found/i);
  });

  it("in host mode the host's message with a mention starts the round its task follows", async () => {
    roomCounter++;
    const host = await registerUser(server, `Host${roomCounter}`);
    const { room } = await server.ok('create_room', { room_name: `Host room ${roomCounter}`, interaction_mode: 'host', language: 'en' }, host.token);
    const first = await answeringAgent(`Theta${roomCounter}`, room.room_id);
    await answeringAgent(`Iota${roomCounter}`, room.room_id);
    const client = await a2aClient(room.room_id);
    const task = (await client.sendMessage(request(`@${first.name} only you, please`), auth(host.token))) as Task;
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(artifactTexts(task)).toEqual([{ name: first.name, text: `${first.name} heard: @${first.name} only you, please` }]);
  });

  it('streams one artifact per answer, in the order they were posted, then the completed status', async () => {
    const { roomId, person, bots } = await roomWithAgents(['Gamma', 'Delta']);
    const client = await a2aClient(roomId);
    const names: string[] = [];
    const states: TaskState[] = [];
    for await (const event of client.sendMessageStream(request('stream please'), auth(person.token))) {
      const payload = event.payload;
      if (payload?.$case === 'artifactUpdate') names.push(payload.value.artifact!.name);
      if (payload?.$case === 'statusUpdate') states.push(payload.value.status!.state);
      if (payload?.$case === 'task') states.push(payload.value.status!.state);
    }
    expect(names).toEqual([bots[0]!.name, bots[1]!.name]);
    expect(states[states.length - 1]).toBe(TaskState.TASK_STATE_COMPLETED);
  });

  it('a message into a room without agents is posted and its task completes at once with no artifacts (plain JSON-RPC)', async () => {
    const person = await registerUser(server, `Solo${++roomCounter}`);
    const { room } = await server.ok('create_room', { room_name: `Empty ${roomCounter}` }, person.token);
    const body = JSON.stringify({ jsonrpc: '2.0', id: 'a', method: 'SendMessage', params: { message: { messageId: 'm-1', role: 'ROLE_USER', parts: [{ text: 'anyone here?' }] } } });
    const answer = await rawRpc(room.room_id, body, person.token);
    expect(answer.status).toBe(200);
    expect(answer.body.id).toBe('a');
    expect(answer.body.result.task).toMatchObject({ contextId: room.room_id, status: { state: 'TASK_STATE_COMPLETED' } });
    expect(answer.body.result.task.artifacts ?? []).toEqual([]);
    const { messages } = await server.ok('get_messages', { room_id: room.room_id, limit: 10 }, person.token);
    expect(messages.map((m: any) => [m.sender, m.text_content])).toContainEqual([person.name, 'anyone here?']);
  });

  it('refuses a non-member and an unknown token with the A2A authentication/authorization errors', async () => {
    const { roomId } = await roomWithAgents(['Eps']);
    const stranger = await registerUser(server, `Stranger${roomCounter}`);
    const client = await a2aClient(roomId);
    await expect(client.sendMessage(request('let me in'), auth(stranger.token))).rejects.toThrow();

    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message: { messageId: 'm1', role: 'ROLE_USER', parts: [{ text: 'hi' }] } } });
    const nonMember = await rawRpc(roomId, body, stranger.token);
    expect(nonMember.status).toBe(403);
    expect(nonMember.body.error.data[0].metadata.code).toBe('not_a_member');
    expect(JSON.stringify(nonMember.body)).not.toContain('Eps');
    const unknown = await rawRpc(roomId, body, 'not-a-token');
    expect(unknown.status).toBe(401);
    const none = await rawRpc(roomId, body);
    expect(none.status).toBe(401);
    // Nothing was posted by the stranger.
    const ann = await registerUser(server, `Checker${roomCounter}`);
    await server.ok('join_room', { room_id: roomId }, ann.token);
    const { messages } = await server.ok('get_messages', { room_id: roomId, limit: 50 }, ann.token);
    expect(messages.some((m: any) => m.text_content === 'hi' || m.text_content === 'let me in')).toBe(false);
  });

  it("applies the room's rules: an agent's message into a paused room is room_paused, in the error data", async () => {
    const { roomId, person } = await roomWithAgents(['Zeta']);
    const agent = await registerAgent(server, `Quiet${roomCounter}`);
    await server.ok('join_room', { room_id: roomId }, agent.token);
    await server.ok('set_room_status', { room_id: roomId, system_status: 'paused' }, person.token);
    const body = JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'SendMessage', params: { message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text: 'out of turn' }] } } });
    const answer = await rawRpc(roomId, body, agent.token);
    expect(answer.status).toBe(200);
    expect(answer.body.id).toBe(7);
    expect(answer.body.error.data[0].metadata.code).toBe('room_paused');
  });

  it('answers a malformed request with a JSON-RPC error, never a 500', async () => {
    const { roomId, person } = await roomWithAgents(['Eta']);
    const broken = await rawRpc(roomId, '{"jsonrpc": "2.0", "id": 1, "method": ', person.token);
    expect(broken.status).toBeLessThan(500);
    expect(broken.body.error.code).toBe(-32700);
    const unknownMethod = await rawRpc(roomId, JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'NoSuchMethod', params: {} }), person.token);
    expect(unknownMethod.status).toBeLessThan(500);
    expect(unknownMethod.body.error.code).toBe(-32601);
    const noMessage = await rawRpc(roomId, JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'SendMessage', params: {} }), person.token);
    expect(noMessage.status).toBeLessThan(500);
    expect(noMessage.body.error).toBeDefined();
    // Over MAX_MESSAGE_CHARS (32,000): the room's payload_too_large, as a JSON-RPC error.
    const long = JSON.stringify({ jsonrpc: '2.0', id: 4, method: 'SendMessage', params: { message: { messageId: 'm-long', role: 'ROLE_USER', parts: [{ text: 'a'.repeat(40_000) }] } } });
    const tooLong = await rawRpc(roomId, long, person.token);
    expect(tooLong.status).toBe(200);
    expect(tooLong.body.error.data[0].metadata.code).toBe('payload_too_large');
    // Over the body limit (1 MiB here): 413 with a JSON-RPC error.
    const huge = await rawRpc(roomId, JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'SendMessage', params: { pad: 'b'.repeat(1_200_000) } }), person.token);
    expect(huge.status).toBe(413);
    expect(huge.body.error.data[0].metadata.code).toBe('payload_too_large');
    // A room takes text: a file part is ContentTypeNotSupported (-32005), nothing posted.
    const file = JSON.stringify({ jsonrpc: '2.0', id: 6, method: 'SendMessage', params: { message: { messageId: 'm-file', role: 'ROLE_USER', parts: [{ url: 'https://example.com/a.png', mediaType: 'image/png' }] } } });
    const filePart = await rawRpc(roomId, file, person.token);
    expect(filePart.status).toBe(200);
    expect(filePart.body.error.code).toBe(-32005);
    const notRpc = await rawRpc(roomId, JSON.stringify([1, 2, 3]), person.token);
    expect(notRpc.status).toBeLessThan(500);
    expect(notRpc.body.error).toBeDefined();
  });

  it('cancelling a task stops the waiting, never the room', async () => {
    const { roomId, person } = await roomWithAgents(['Silent'], { silent: true, turnTimeoutMs: 60_000 });
    const client = await a2aClient(roomId);
    const started = (await client.sendMessage(request('anyone?', true), auth(person.token))) as Task;
    expect(started.status?.state).toBe(TaskState.TASK_STATE_WORKING);
    await expect.poll(async () => (await server.ok('get_room', { room_id: roomId }, person.token)).room.current_round?.completed).toBe(false);
    const canceled = await client.cancelTask({ tenant: '', id: started.id, metadata: {} }, auth(person.token));
    expect(canceled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    const { room } = await server.ok('get_room', { room_id: roomId }, person.token);
    expect(room.system_status).toBe('active');
    expect(room.current_round).toMatchObject({ completed: false });
    const read = await client.getTask({ tenant: '', id: started.id }, auth(person.token));
    expect(read.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
  });
});
