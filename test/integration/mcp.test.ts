// MCP over Streamable HTTP (and the stdio proxy) with the SDK's own Client against the real server.
import http from 'node:http';
import type { CallToolResult, Progress } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectMcp, connectStdioMcp, resultText, type McpTestClient } from '../helpers/mcp.js';
import { registerAgent, registerUser, startTestServer, type TestServer } from '../helpers/server.js';
import { TestSocket, wsUrl } from '../helpers/ws.js';

let server: TestServer;
const clients: McpTestClient[] = [];
let counter = 0;
const unique = (prefix: string) => `${prefix}${++counter}`;

beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
  await server.stop();
});

async function mcp(token?: string): Promise<McpTestClient> {
  const client = await connectMcp(server.url, { token: token ?? null });
  clients.push(client);
  return client;
}

/** An MCP agent (registered over MCP, no header) in a fresh room with a person who can post. */
async function agentInRoom() {
  const agent = await mcp();
  const name = unique('mcpbot');
  const registered = await agent.ok('register_agent', { name });
  const { room } = await agent.ok('create_room', { room_name: unique('Room ') });
  const person = await registerUser(server, unique('person'));
  await server.ok('join_room', { room_id: room.room_id }, person.token);
  return { agent, name, token: registered.token as string, roomId: room.room_id as string, person };
}

function turnListeners(): number {
  return server.app.rooms.turnListenerCount;
}

function rawRequest(headers: Record<string, string>, body: unknown): Promise<{ status: number; body: string }> {
  const url = new URL('/mcp', server.url);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          ...headers,
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

const initializeBody = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '0' } },
};

describe('MCP tools', () => {
  it('lists every registry tool with its input schema, and instructions', async () => {
    const client = await mcp();
    const { tools } = await client.client.listTools();
    const names = tools.map((t) => t.name).sort();
    const registry = server.app.registry.list().map((t) => t.name).sort();
    expect(names).toEqual(registry);
    for (const name of ['register_agent', 'login', 'wait_for_turn', 'send_message', 'skip_response', 'get_context']) {
      expect(names).toContain(name);
    }
    const send = tools.find((t) => t.name === 'send_message')!;
    expect(send.inputSchema.type).toBe('object');
    expect(send.inputSchema.required).toEqual(expect.arrayContaining(['room_id', 'text_content']));
    expect(Object.keys(send.inputSchema.properties ?? {})).toContain('end_turn');
    // Limits are shown as the contract states them (JSON Schema counts code points, as we do).
    const register = tools.find((t) => t.name === 'register_agent')!;
    expect(register.inputSchema.properties?.name).toMatchObject({ type: 'string', maxLength: 32 });
    expect(new RegExp((register.inputSchema.properties?.name as { pattern: string }).pattern, 'u').test('Qwen_2.5')).toBe(true);
    expect(register.inputSchema.properties?.introduce).toMatchObject({ type: 'string', maxLength: 500 });
    const instructions = client.client.getInstructions() ?? '';
    expect(instructions).toMatch(/wait_for_turn/);
    expect(instructions).toMatch(/can_skip: false/);
    expect(instructions).toMatch(/end_turn: false/);
    expect(instructions).toMatch(/never instructions/i);
  });

  it('registers over MCP, waits for a person, answers the turn', async () => {
    const { agent, name, roomId, person } = await agentInRoom();
    const listening = turnListeners();
    const waiting = agent.ok('wait_for_turn', { room_id: roomId, timeout_s: 20 });
    await expect.poll(turnListeners).toBe(listening + 1);
    const posted = await server.ok('send_message', { room_id: roomId, text_content: 'Hello agents, what is 2+2?' }, person.token);
    const turn = await waiting; // a wait that ran to its timeout_s would answer your_turn: null
    expect(turn.your_turn).toMatchObject({ room_id: roomId, can_skip: true });
    expect(turn.context.messages.map((m: { text_content: string }) => m.text_content)).toContain('Hello agents, what is 2+2?');

    const answer = await agent.ok('send_message', { room_id: roomId, text_content: '4', response_to: posted.message.message_id });
    expect(answer.message).toMatchObject({ sender: name, role: 'ai_agent', text_content: '4', room_id: roomId });
    const context = await agent.ok('get_context', { room_id: roomId });
    expect(context.your_turn).toBeNull();
  });

  it('attaches a file as docs/mcp.md says: upload with the session token, then send_message', async () => {
    const { agent, token, roomId } = await agentInRoom();
    const form = new FormData();
    form.append('file', new Blob(['notes from the agent\n']), 'notes.txt');
    const res = await fetch(`${server.url}/api/v1/rooms/${roomId}/uploads`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}` },
      body: form,
    });
    expect(res.status).toBe(200);
    const { data: file } = (await res.json()) as { data: { file_url: string; file_type: string } };
    const sent = await agent.ok('send_message', {
      room_id: roomId,
      text_content: 'My notes are attached.',
      file_url: file.file_url,
      file_type: file.file_type,
    });
    expect(sent.message).toMatchObject({ file_url: file.file_url, file_type: file.file_type });
    const download = await fetch(new URL(file.file_url, server.url), { headers: { authorization: `Bearer ${token}` } });
    expect(await download.text()).toBe('notes from the agent\n');
  });

  it('returns data as JSON text and structuredContent', async () => {
    const client = await mcp();
    const result = (await client.call('register_agent', { name: unique('jsonbot') })) as CallToolResult;
    expect(result.isError).toBeFalsy();
    expect(JSON.parse(resultText(result))).toEqual(result.structuredContent);
    expect(result.structuredContent).toMatchObject({ agent_id: expect.any(String), token: expect.any(String) });
  });

  it('refuses skip_response with cannot_skip when the agent was mentioned', async () => {
    const { agent, name, roomId, person } = await agentInRoom();
    await server.ok('send_message', { room_id: roomId, text_content: `@${name} please answer this one` }, person.token);
    const turn = await agent.ok('wait_for_turn', { room_id: roomId, timeout_s: 10 });
    expect(turn.your_turn).toMatchObject({ can_skip: false });
    const error = await agent.err('skip_response', { room_id: roomId });
    expect(error.code).toBe('cannot_skip');
    // The turn stays with the agent, and answering works.
    const again = await agent.ok('wait_for_turn', { room_id: roomId, timeout_s: 1 });
    expect(again.your_turn).toMatchObject({ can_skip: false });
    await agent.ok('send_message', { room_id: roomId, text_content: 'Here is my answer.' });
  });

  it('returns your_turn: null with a hint after timeout_s', async () => {
    const { agent, roomId } = await agentInRoom();
    const started = Date.now();
    const result = await agent.ok('wait_for_turn', { room_id: roomId, timeout_s: 1 });
    expect(result.your_turn).toBeNull();
    expect(result.hint).toMatch(/again/i);
    // Not before the 1 s asked for (a wait that ignored timeout_s would outlast this test's timeout).
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
  });

  it('stops waiting when the client cancels', async () => {
    const { agent, roomId } = await agentInRoom();
    const before = turnListeners();
    const controller = new AbortController();
    const waiting = agent.call('wait_for_turn', { room_id: roomId, timeout_s: 40 }, { signal: controller.signal });
    await expect.poll(turnListeners).toBe(before + 1);
    controller.abort('test cancels');
    await expect(waiting).rejects.toThrow();
    // The server side resolved: its listener is gone long before the wait's 40 s (this test times
    // out at 30 s), and the session answers the next call.
    await expect.poll(turnListeners).toBe(before);
    const { rooms } = await agent.ok('list_rooms', {});
    expect(rooms.map((r: { room_id: string }) => r.room_id)).toContain(roomId);
  });

  it('stops waiting when the HTTP connection goes away', async () => {
    const { token, roomId } = await agentInRoom();
    const before = turnListeners();
    const client = await connectMcp(server.url, { token });
    const waiting = client.call('wait_for_turn', { room_id: roomId, timeout_s: 40 }).catch(() => 'closed');
    await expect.poll(turnListeners).toBe(before + 1);
    // Drop the connection without a cancellation notice (a client that gave up).
    await client.transport.close();
    await expect.poll(turnListeners, { timeout: 3_000 }).toBe(before);
    await waiting;
  });

  it('sends progress notifications while waiting', async () => {
    const { agent, roomId } = await agentInRoom();
    const progress: Progress[] = [];
    const result = await agent.ok(
      'wait_for_turn',
      { room_id: roomId, timeout_s: 6 },
      { onprogress: (p) => progress.push(p), timeout: 30_000 },
    );
    expect(result.your_turn).toBeNull();
    expect(progress.length).toBeGreaterThanOrEqual(1);
    expect(progress[0]!.total).toBe(6);
    expect(progress[0]!.progress).toBeGreaterThan(0);
  }, 20_000);

  it('answers a bad argument with validation_error and keeps the session', async () => {
    const { agent, roomId } = await agentInRoom();
    const error = await agent.err('send_message', { room_id: roomId, text_content: 42 });
    expect(error.code).toBe('validation_error');
    const unknownField = await agent.err('wait_for_turn', { room_id: roomId, timeout_s: 1, bogus: true });
    expect(unknownField.code).toBe('validation_error');
    const tooLong = await agent.err('wait_for_turn', { timeout_s: 51 });
    expect(tooLong.code).toBe('validation_error');
    const unknown = await agent.err('no_such_tool', {});
    expect(unknown.code).toBe('unknown_tool');
    const result = await agent.call('list_rooms', {});
    expect(result.isError).toBeFalsy();
    expect(resultText(result)).toContain(roomId);
  });

  it('gives errors as results with the code in text and structuredContent', async () => {
    const { agent, roomId } = await agentInRoom();
    const result = await agent.call('send_message', { room_id: roomId, text_content: 'out of turn?' });
    // An idle room accepts an agent's message (SPEC §6.1.4); a second one is out of turn.
    expect(result.isError).toBeFalsy();
    const second = await agent.call('skip_response', { room_id: roomId });
    expect(second.isError).toBe(true);
    const structured = second.structuredContent as { ok: boolean; error: { code: string; message: string } };
    expect(structured).toMatchObject({ ok: false, error: { code: 'not_your_turn', message: expect.any(String) } });
    expect(JSON.parse(resultText(second))).toEqual(structured);
    // The session lives on.
    expect((await agent.ok('get_context', { room_id: roomId })).your_turn).toBeNull();
  });

  it('defaults timeout_s to 25 and accepts at most 50', async () => {
    const { agent, roomId } = await agentInRoom();
    const { tools } = await agent.client.listTools();
    const wait = tools.find((t) => t.name === 'wait_for_turn')!;
    // DEFAULT_LANGUAGE is zh-CN here: the description is the Chinese one (SPEC §7).
    expect(wait.description).toMatch(/默认 25，最大 50/);
    expect(wait.inputSchema.properties?.timeout_s).toMatchObject({ type: 'number', minimum: 0, maximum: 50 });

    // Without timeout_s the server waits 25 s: the first progress notification (after 5 s) says so.
    const idle = turnListeners();
    const controller = new AbortController();
    let firstProgress!: (p: Progress) => void;
    const progressed = new Promise<Progress>((resolve) => (firstProgress = resolve));
    const waiting = agent.call('wait_for_turn', { room_id: roomId }, { signal: controller.signal, onprogress: (p) => firstProgress(p) });
    expect(await progressed).toMatchObject({ total: 25 });
    controller.abort('seen the default');
    await expect(waiting).rejects.toThrow();
    await expect.poll(turnListeners, { timeout: 3_000 }).toBe(idle);

    // 50 is accepted (the wait starts on the server), 51 is refused.
    const atMax = new AbortController();
    const longest = agent.call('wait_for_turn', { room_id: roomId, timeout_s: 50 }, { signal: atMax.signal });
    await expect.poll(turnListeners).toBe(idle + 1);
    atMax.abort('accepted');
    await expect(longest).rejects.toThrow();
    expect((await agent.err('wait_for_turn', { room_id: roomId, timeout_s: 51 })).code).toBe('validation_error');
  }, 20_000);
});

describe('MCP presence', () => {
  it('keeps a waiting agent online past the presence window; one that stops calling goes offline', async () => {
    const windowMs = 1500;
    const own = await startTestServer({}, { presenceWindowMs: windowMs });
    const sessions: McpTestClient[] = [];
    let watcher: TestSocket | undefined;
    try {
      const person = await registerUser(own, unique('watcher'));
      const { room } = await own.ok<{ room: { room_id: string } }>('create_room', { room_name: unique('Presence room ') }, person.token);
      watcher = await TestSocket.connect(wsUrl(own.url), person.token);
      const join = async (name: string) => {
        const session = await connectMcp(own.url);
        sessions.push(session);
        await session.ok('register_agent', { name });
        await session.ok('join_room', { room_id: room.room_id });
        return session;
      };
      const waiterName = unique('waiter');
      const quitterName = unique('quitter');
      const waiter = await join(waiterName);
      await join(quitterName);
      const wentOffline = (name: string) => (data: any) => data.member.name === name && data.member.status === 'offline';

      // Three waits in a row, each longer than the window.
      for (let i = 0; i < 3; i++) {
        expect((await waiter.ok('wait_for_turn', { room_id: room.room_id, timeout_s: 2 })).your_turn).toBeNull();
      }
      const statuses = watcher.events(room.room_id).filter((f) => f.event === 'member_status_change');
      expect(statuses.filter((f) => wentOffline(waiterName)(f.data))).toEqual([]);
      // The control: the agent that made no call since joining went offline meanwhile.
      expect(statuses.some((f) => wentOffline(quitterName)(f.data))).toBe(true);
      const { room: seen } = await own.ok<{ room: { members: Array<{ name: string; status: string }> } }>(
        'get_room',
        { room_id: room.room_id },
        person.token,
      );
      const statusOf = (name: string) => seen.members.find((m) => m.name === name)?.status;
      expect([statusOf(waiterName), statusOf(quitterName)]).toEqual(['online', 'offline']);
      // Once it stops waiting, the window runs again: the wait held presence, it did not pin it.
      await watcher.waitForEvent('member_status_change', wentOffline(waiterName), windowMs + 3_000);
    } finally {
      await watcher?.close();
      await Promise.all(sessions.map((s) => s.close().catch(() => undefined)));
      await own.stop();
    }
  }, 15_000);
});

describe('MCP identity', () => {
  it('needs an identity before other tools', async () => {
    const client = await mcp();
    const error = await client.err('list_rooms', {});
    expect(error.code).toBe('unauthorized');
    expect(error.message).toMatch(/register_agent|login/);
  });

  it('works with a token in the Authorization header', async () => {
    const agent = await registerAgent(server, unique('headerbot'));
    const client = await mcp(agent.token);
    const { room } = await client.ok('create_room', { room_name: unique('Header room ') });
    expect(room.members.map((m: { name: string }) => m.name)).toEqual([agent.name]);
  });

  it('binds a session to the participant of login {token}', async () => {
    const agent = await registerAgent(server, unique('loginbot'));
    const client = await mcp();
    const login = await client.ok('login', { token: agent.token });
    expect(login.participant).toMatchObject({ name: agent.name, kind: 'agent' });
    const { room } = await client.ok('create_room', { room_name: unique('Login room ') });
    expect(room.created_by).toBe(agent.name);
    expect(room.members[0].name).toBe(agent.name);
  });

  it('keeps a bound session to its participant', async () => {
    const other = await registerAgent(server, unique('otherbot'));
    const client = await mcp();
    const me = await client.ok('register_agent', { name: unique('boundbot') });

    expect((await client.err('register_agent', { name: unique('secondbot') })).code).toBe('forbidden');
    expect((await client.err('login', { token: other.token })).code).toBe('forbidden');
    client.setHeaderToken(other.token);
    expect((await client.err('list_rooms', {})).code).toBe('forbidden');
    client.setHeaderToken('not-a-real-token');
    expect((await client.err('list_rooms', {})).code).toBe('unauthorized');
    // Its own token in the header, or none: acts as itself.
    client.setHeaderToken(me.token);
    const { room } = await client.ok('create_room', { room_name: unique('Bound room ') });
    expect(room.members[0].name).toBe(me.agent.name);
    client.setHeaderToken(null);
    expect((await client.ok('login', { token: me.token })).participant.name).toBe(me.agent.name);
    expect((await client.ok('get_room', { room_id: room.room_id })).room.room_id).toBe(room.room_id);
  });

  it('a header-bound session cannot switch participant', async () => {
    const a = await registerAgent(server, unique('hdrA'));
    const b = await registerAgent(server, unique('hdrB'));
    const client = await mcp(a.token);
    await client.ok('list_rooms', {});
    client.setHeaderToken(b.token);
    const error = await client.err('list_rooms', {});
    expect(error.code).toBe('forbidden');
    expect(error.message).toContain(a.name);
  });

  it('follows rotate_token inside the session, and stops when the token is rotated elsewhere', async () => {
    const client = await mcp();
    const me = await client.ok('register_agent', { name: unique('rotbot') });
    const rotated = await client.ok('rotate_token', {});
    expect(rotated.token).not.toBe(me.token);
    await client.ok('list_rooms', {});
    // Rotated by another client: the session's token stops working.
    const elsewhere = await server.ok('rotate_token', {}, rotated.token);
    expect((await client.err('list_rooms', {})).code).toBe('unauthorized');
    await client.ok('login', { token: elsewhere.token });
    await client.ok('list_rooms', {});
  });
});

describe('MCP member isolation', () => {
  // SPEC §8: a room's messages, state and turns are for its members only (not_a_member, 403);
  // the same rule the REST and WebSocket tests pin, here through the MCP tools.
  it('a non-member MCP caller reads nothing of another room: messages, state, stats, context, turns or export', async () => {
    const { agent, roomId, person } = await agentInRoom();
    const secret = await server.ok('send_message', { room_id: roomId, text_content: 'members only: the launch code is 0000' }, person.token);
    await agent.ok('send_message', { room_id: roomId, text_content: 'agent answer, members only' });
    const outsider = await mcp();
    await outsider.ok('register_agent', { name: unique('outsiderbot') });
    const refused: Array<[string, Record<string, unknown>]> = [
      ['get_room', { room_id: roomId }],
      ['get_room_stats', { room_id: roomId }],
      ['get_messages', { room_id: roomId }],
      ['get_messages', { room_id: roomId, after_seq: 0, limit: 200 }],
      ['get_context', { room_id: roomId }],
      ['search_messages', { room_id: roomId, query: 'launch code' }],
      ['wait_for_turn', { room_id: roomId, timeout_s: 1 }],
      ['export_chat_history', { room_id: roomId, format: 'json' }],
      ['send_message', { room_id: roomId, text_content: 'let me in' }],
    ];
    for (const [tool, args] of refused) {
      const error = await outsider.err(tool, args);
      expect({ tool, code: error.code }).toEqual({ tool, code: 'not_a_member' });
      expect(JSON.stringify(error)).not.toContain('launch code');
    }
    // A message id of the room is no way in either: as if it did not exist (SPEC §8, as over REST).
    expect(await outsider.err('get_full_message', { message_id: secret.message.message_id })).toMatchObject({ code: 'message_not_found' });
    // The room list shows the summary only: no members, messages or round.
    const { rooms } = await outsider.ok('list_rooms', {});
    const summary = rooms.find((r: { room_id: string }) => r.room_id === roomId);
    expect(Object.keys(summary).sort()).toEqual(['archived', 'has_password', 'interaction_mode', 'member_count', 'room_description', 'room_id', 'room_name']);
    // Nothing the outsider tried reached the room.
    const { messages } = await agent.ok('get_messages', { room_id: roomId });
    expect(messages.map((m: { text_content: string }) => m.text_content)).toEqual(['members only: the launch code is 0000', 'agent answer, members only']);
  });
});

describe('MCP HTTP endpoint', () => {
  it('refuses a Host that is not allowed, naming the setting', async () => {
    const res = await rawRequest({ host: 'evil.example:80' }, initializeBody);
    expect(res.status).toBe(403);
    expect(res.body).toContain('ALLOWED_HOSTS');
  });

  it('refuses an Origin that is not allowed, naming the setting', async () => {
    const res = await rawRequest({ origin: 'http://evil.example' }, initializeBody);
    expect(res.status).toBe(403);
    expect(res.body).toContain('ALLOWED_ORIGINS');
    const ok = await rawRequest({ origin: `http://127.0.0.1:${server.port}` }, initializeBody);
    expect(ok.status).toBe(200);
  });

  it('answers an unknown session with 404 and malformed JSON with a parse error', async () => {
    const unknown = await rawRequest({ 'mcp-session-id': 'nope' }, { jsonrpc: '2.0', id: 2, method: 'tools/list' });
    expect(unknown.status).toBe(404);
    const noSession = await rawRequest({}, { jsonrpc: '2.0', id: 2, method: 'tools/list' });
    expect(noSession.status).toBe(400);
    const res = await fetch(new URL('/mcp', server.url), {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: '{"jsonrpc": ',
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { code: number } }).error.code).toBe(-32700);
  });

  it('ends pending waits and sessions when the server shuts down', async () => {
    const own = await startTestServer();
    try {
      const client = await connectMcp(own.url);
      await client.ok('register_agent', { name: unique('shutdownbot') });
      const { room } = await client.ok('create_room', { room_name: unique('Shutdown room ') });
      const waiting = client.call('wait_for_turn', { room_id: room.room_id, timeout_s: 40 });
      await expect.poll(() => own.app.rooms.turnListenerCount).toBe(1);
      // Closing does not wait for the 40 s wait to run out (this test times out at 30 s).
      await own.close();
      // The pending wait is answered (no turn) before the session closes.
      const answer = await waiting;
      expect(answer.isError).toBeFalsy();
      expect((answer.structuredContent as { your_turn: unknown }).your_turn).toBeNull();
      await client.client.close().catch(() => undefined);
    } finally {
      await own.stop();
    }
  });

  it('closes a session on DELETE', async () => {
    const client = await connectMcp(server.url);
    const sessionId = client.transport.sessionId!;
    expect(sessionId).toBeTruthy();
    await client.close();
    const res = await rawRequest({ 'mcp-session-id': sessionId }, { jsonrpc: '2.0', id: 3, method: 'tools/list' });
    expect(res.status).toBe(404);
  });
});

describe('MCP: DELETE during a running wait_for_turn', () => {
  it('answers the wait (your_turn null) instead of leaving the request hanging', async () => {
    const client = await connectMcp(server.url);
    try {
      await client.ok('register_agent', { name: unique('deleted') });
      const waiting = client.client.callTool({ name: 'wait_for_turn', arguments: { timeout_s: 40 } }, undefined, { timeout: 60_000 });
      const listeners = server.app.rooms.turnListenerCount;
      await expect.poll(() => server.app.rooms.turnListenerCount).toBeGreaterThan(listeners);
      const sessionId = client.transport.sessionId!;
      const deleted = await fetch(new URL('/mcp', server.url), { method: 'DELETE', headers: { 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-03-26' } });
      expect(deleted.status).toBe(200);
      // Answered at once, not when its 40 s run out (this test times out at 30 s), and answered
      // as a wait without a turn: not an error, with your_turn present and null.
      const answer = (await waiting) as { isError?: boolean; structuredContent?: { your_turn?: unknown } };
      expect(answer.isError).toBeFalsy();
      expect(answer.structuredContent).toHaveProperty('your_turn', null);
    } finally {
      await client.close();
    }
  });
});

describe('MCP stdio proxy (`agent-chatroom mcp --url`, the compiled CLI)', () => {
  it('lists tools, calls them, forwards progress and cancellation', async () => {
    const stdio = await connectStdioMcp(server.url);
    try {
      expect(stdio.client.getInstructions()).toMatch(/wait_for_turn/);
      const { tools } = await stdio.client.listTools();
      expect(tools.map((t) => t.name).sort()).toEqual(server.app.registry.list().map((t) => t.name).sort());
      await stdio.ok('register_agent', { name: unique('stdiobot') });
      const { room } = await stdio.ok('create_room', { room_name: unique('Stdio room ') });
      expect(room.room_id).toBeTruthy();
      expect((await stdio.err('get_room', {})).code).toBe('validation_error');

      const progress: Progress[] = [];
      const waited = await stdio.ok('wait_for_turn', { room_id: room.room_id, timeout_s: 6 }, { onprogress: (p) => progress.push(p) });
      expect(waited.your_turn).toBeNull();
      expect(progress.length).toBeGreaterThanOrEqual(1);
      expect(progress[0]!.total).toBe(6);

      const before = turnListeners();
      const controller = new AbortController();
      const waiting = stdio.call('wait_for_turn', { room_id: room.room_id, timeout_s: 40 }, { signal: controller.signal });
      await expect.poll(turnListeners).toBe(before + 1);
      controller.abort('cancelled by the test');
      await expect(waiting).rejects.toThrow();
      await expect.poll(turnListeners, { timeout: 5_000 }).toBe(before);
    } finally {
      await stdio.close();
    }
  }, 60_000);

  it('waits for a person, answers the turn, and cannot skip when mentioned', async () => {
    const stdio = await connectStdioMcp(server.url);
    try {
      const name = unique('stdioturn');
      await stdio.ok('register_agent', { name });
      const { room } = await stdio.ok('create_room', { room_name: unique('Stdio turn room ') });
      const roomId = room.room_id as string;
      const person = await registerUser(server, unique('stdioperson'));
      await server.ok('join_room', { room_id: roomId }, person.token);

      // wait_for_turn blocks (its listener is registered on the server) until the person posts.
      const before = turnListeners();
      const waiting = stdio.ok('wait_for_turn', { room_id: roomId, timeout_s: 20 });
      await expect.poll(turnListeners).toBe(before + 1);
      const posted = await server.ok<{ message: { message_id: string } }>(
        'send_message',
        { room_id: roomId, text_content: 'Stdio agent, what is 3+4?' },
        person.token,
      );
      const turn = await waiting;
      expect(turn.your_turn).toMatchObject({ room_id: roomId, can_skip: true });
      expect(turn.context.messages.map((m: { text_content: string }) => m.text_content)).toContain('Stdio agent, what is 3+4?');
      const answer = await stdio.ok('send_message', { room_id: roomId, text_content: '7', response_to: posted.message.message_id });
      expect(answer.message).toMatchObject({ sender: name, role: 'ai_agent', text_content: '7', response_to: posted.message.message_id });
      expect((await stdio.ok('get_context', { room_id: roomId })).your_turn).toBeNull();

      // Mentioned: the turn cannot be skipped, it stays with the agent until it answers.
      await server.ok('send_message', { room_id: roomId, text_content: `@${name} you must answer this` }, person.token);
      const mentioned = await stdio.ok('wait_for_turn', { room_id: roomId, timeout_s: 10 });
      expect(mentioned.your_turn).toMatchObject({ can_skip: false, reason: 'mention' });
      expect((await stdio.err('skip_response', { room_id: roomId })).code).toBe('cannot_skip');
      expect((await stdio.ok('get_context', { room_id: roomId })).your_turn).toMatchObject({ can_skip: false });
      await stdio.ok('send_message', { room_id: roomId, text_content: 'Answered, as asked.' });
      expect((await stdio.ok('get_context', { room_id: roomId })).your_turn).toBeNull();
    } finally {
      await stdio.close();
    }
  }, 60_000);

  it('keeps a stdio session bound to one agent (registered, or from --token)', async () => {
    const other = await registerAgent(server, unique('stdioother'));
    const registered = await connectStdioMcp(server.url);
    const withToken = await connectStdioMcp(server.url, ['--token', other.token]);
    try {
      const me = await registered.ok('register_agent', { name: unique('stdiobound') });
      expect((await registered.err('register_agent', { name: unique('stdiosecond') })).code).toBe('forbidden');
      const refused = await registered.err('login', { token: other.token });
      expect(refused.code).toBe('forbidden');
      expect(refused.message).toContain(other.name);
      const { room } = await registered.ok('create_room', { room_name: unique('Stdio bound room ') });
      expect(room.members.map((m: { name: string }) => m.name)).toEqual([me.agent.name]);

      // Started with --token: it is that agent from the first call and cannot become another.
      expect((await withToken.ok('list_rooms', {})).rooms).toBeDefined();
      expect((await withToken.err('login', { token: me.token })).code).toBe('forbidden');
      expect((await withToken.err('register_agent', { name: unique('stdiothird') })).code).toBe('forbidden');
      const { room: theirs } = await withToken.ok('create_room', { room_name: unique('Stdio token room ') });
      expect(theirs.members.map((m: { name: string }) => m.name)).toEqual([other.name]);
    } finally {
      await Promise.all([registered.close(), withToken.close()]);
    }
  }, 60_000);

  it('reopens a lost upstream session as the same agent', async () => {
    const first = await startTestServer();
    const { dataDir, port } = { dataDir: first.dataDir, port: first.port };
    let second: TestServer | undefined;
    const stdio = await connectStdioMcp(first.url);
    try {
      const name = unique('phoenix');
      await stdio.ok('register_agent', { name });
      const { room } = await stdio.ok('create_room', { room_name: unique('Phoenix room ') });
      // Restart the server on the same port and data: the old MCP session is gone (404).
      await first.close();
      second = await startTestServer({ dataDir, port });
      const again = await stdio.ok('get_room', { room_id: room.room_id });
      expect(again.room.members.map((m: { name: string }) => m.name)).toEqual([name]);
    } finally {
      await stdio.close();
      await second?.stop();
      await first.stop();
    }
  }, 60_000);

  it('reports an unreachable server as an error result', async () => {
    const stdio = await connectStdioMcp('http://127.0.0.1:9');
    try {
      const error = await stdio.err('list_rooms', {});
      expect(error.code).toBe('internal_error');
      expect(error.message).toMatch(/Cannot reach the chatroom server at http:\/\/127\.0\.0\.1:9\/mcp/);
    } finally {
      await stdio.close();
    }
  }, 30_000);
});
