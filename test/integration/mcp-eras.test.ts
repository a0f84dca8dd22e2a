// Both MCP eras on /mcp (SPEC §7.1) with the official client 2.x: pinned to the stateless
// revision 2026-07-28, auto-negotiating, and legacy. Same tools, arguments and errors; identity by
// header or by the `token` argument (SPEC §3), which never reaches a log line.
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testConfig } from '../../src/config.js';
import { pino } from 'pino';
import { startServer, type RunningServer } from '../../src/server.js';
import { connectMcp2, MODERN_REVISION, type Era, type Mcp2Client } from '../helpers/mcp2.js';
import { tempDataDir } from '../helpers/server.js';

let server: RunningServer;
let dataDir: string;
const logLines: string[] = [];
const clients: Mcp2Client[] = [];
let counter = 0;
const unique = (prefix: string) => `${prefix}${++counter}${Date.now() % 100000}`;

beforeAll(async () => {
  dataDir = await tempDataDir();
  // The server logs at debug level into memory, to look for tokens in it.
  const logger = pino({ level: 'debug' }, { write: (line: string) => logLines.push(line) });
  server = await startServer(
    testConfig({ dataDir, logLevel: 'debug', rateLimitRegisterPerHour: 1_000_000, rateLimitLoginPerMinute: 1_000_000, rateLimitMcpInitPerMinute: 1_000_000 }),
    logger,
  );
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
  await server.close();
  await rm(dataDir, { recursive: true, force: true });
});

async function connect(era: Era, token?: string): Promise<Mcp2Client> {
  const client = await connectMcp2(server.url, era, token ? { token } : {});
  clients.push(client);
  return client;
}

const rest = async (tool: string, args: unknown, token?: string) => {
  const res = await fetch(`${server.url}/api/v1/tools/${tool}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(args),
  });
  const body = (await res.json()) as { ok: boolean; data: any };
  if (!body.ok) throw new Error(`${tool}: ${JSON.stringify(body)}`);
  return body.data;
};

async function registerAgent(name: string) {
  const data = await rest('register_agent', { name });
  return { token: data.token as string, name };
}

async function registerUser(name: string) {
  const data = await rest('register_user', { name });
  return { token: data.token as string, name };
}

const sessionHeaders = (client: Mcp2Client) => client.answers.map((h) => h.get('mcp-session-id')).filter((v) => v !== null);

describe.each<Era>(['pinned', 'auto', 'legacy'])('MCP client 2.x, %s', (era) => {
  it('lists the same tools, with the optional token argument on tools that need a caller', async () => {
    const client = await connect(era);
    const { tools } = await client.client.listTools();
    const names = tools.map((t) => t.name);
    for (const name of ['register_agent', 'login', 'create_room', 'send_message', 'wait_for_turn', 'get_context']) expect(names).toContain(name);
    const send = tools.find((t) => t.name === 'send_message')!;
    expect(send.inputSchema.properties).toHaveProperty('token');
    expect(send.inputSchema.properties).toHaveProperty('room_id');
    expect(send.description).toMatch(/token/);
    // register_agent needs no caller: no token argument added.
    expect(tools.find((t) => t.name === 'register_agent')!.inputSchema.properties).not.toHaveProperty('token');
    expect(client.client.getNegotiatedProtocolVersion()).toBe(era === 'legacy' ? '2025-11-25' : MODERN_REVISION);
    if (era === 'legacy') expect(sessionHeaders(client).length).toBeGreaterThan(0);
    else expect(sessionHeaders(client)).toEqual([]);
  });

  it('calls a tool with the Authorization header', async () => {
    const agent = await registerAgent(unique('hdr'));
    const client = await connect(era, agent.token);
    const { room } = await client.ok('create_room', { room_name: unique('Header room ') });
    expect(room.created_by).toBe(agent.name);
    const context = await client.ok('get_context', { room_id: room.room_id });
    expect(context.room).toBeTruthy();
    if (era !== 'legacy') expect(sessionHeaders(client)).toEqual([]);
  });

  it('calls a tool with the token argument, and never logs the token', async () => {
    const agent = await registerAgent(unique('arg'));
    const client = await connect(era);
    const { room } = await client.ok('create_room', { room_name: unique('Argument room '), token: agent.token });
    expect(room.created_by).toBe(agent.name);
    const sent = await client.ok('send_message', { room_id: room.room_id, text_content: 'hello from the token argument', token: agent.token });
    expect(sent.message.sender).toBe(agent.name);
    // A wrong token argument is unauthorized, and its text does not echo the token.
    const wrong = `${agent.token.slice(0, -4)}zzzz`;
    const refused = await client.err('get_context', { room_id: room.room_id, token: wrong });
    expect(refused.code).toBe('unauthorized');
    expect(refused.message).not.toContain(wrong);
    // The calls were logged (at debug), without the token.
    expect(logLines.join('\n')).toContain('send_message');
    expect(logLines.join('\n')).not.toContain(agent.token);
    expect(logLines.join('\n')).not.toContain(wrong);
    if (era !== 'legacy') expect(sessionHeaders(client)).toEqual([]);
  });

  it('answers a call without any identity with unauthorized', async () => {
    const client = await connect(era);
    expect((await client.err('list_rooms')).code).toBe('unauthorized');
    expect((await client.err('send_message', { room_id: 'nope', text_content: 'x' })).code).toBe('unauthorized');
  });

  it('gives the same validation_error for a bad argument', async () => {
    const agent = await registerAgent(unique('val'));
    const client = await connect(era, agent.token);
    expect((await client.err('create_room', { room_name: '' })).code).toBe('validation_error');
  });
});

describe('modern era (2026-07-28)', () => {
  it('negotiates 2026-07-28 when pinned, and a turn completes with the header', async () => {
    const agent = await registerAgent(unique('turn'));
    const person = await registerUser(unique('person'));
    const client = await connect('pinned', agent.token);
    expect(client.client.getNegotiatedProtocolVersion()).toBe(MODERN_REVISION);
    const { room } = await client.ok('create_room', { room_name: unique('Turn room ') });
    await rest('join_room', { room_id: room.room_id }, person.token);
    const waiting = client.ok('wait_for_turn', { room_id: room.room_id, timeout_s: 20 });
    await rest('send_message', { room_id: room.room_id, text_content: 'Hi agent, your turn' }, person.token);
    const turn = await waiting;
    expect(turn.your_turn).not.toBeNull();
    expect(turn.your_turn.room_id).toBe(room.room_id);
    const answer = await client.ok('send_message', { room_id: room.room_id, text_content: 'Done.' });
    expect(answer.message.sender).toBe(agent.name);
    expect(sessionHeaders(client)).toEqual([]);
  });

  it('answers server/discover with the versions it speaks, both eras', async () => {
    const res = await fetch(`${server.url}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': MODERN_REVISION, 'mcp-method': 'server/discover' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'server/discover',
        params: { _meta: { 'io.modelcontextprotocol/protocolVersion': MODERN_REVISION, 'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '0' }, 'io.modelcontextprotocol/clientCapabilities': {} } },
      }),
    });
    expect(res.headers.get('mcp-session-id')).toBeNull();
    const body = (await res.json()) as { result: { supportedVersions: string[] } };
    if (!body.result) throw new Error(JSON.stringify(body));
    expect(body.result.supportedVersions).toContain('2026-07-28');
    expect(body.result.supportedVersions).toContain('2025-11-25');
  });

  it('lets an allowed browser origin send the per-request headers of the modern era', async () => {
    const origin = server.url.replace('localhost', '127.0.0.1');
    const res = await fetch(`${server.url}/mcp`, {
      method: 'OPTIONS',
      headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'mcp-method, mcp-protocol-version' },
    });
    expect(res.status).toBe(204);
    const allowed = (res.headers.get('access-control-allow-headers') ?? '').split(',').map((h) => h.trim());
    expect(allowed).toEqual(expect.arrayContaining(['mcp-method', 'mcp-name', 'mcp-protocol-version', 'authorization']));
  });

  it('refuses a protocol version it does not speak, listing its own', async () => {
    const res = await fetch(`${server.url}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2099-01-01', 'mcp-method': 'tools/list' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 7,
        method: 'tools/list',
        params: { _meta: { 'io.modelcontextprotocol/protocolVersion': '2099-01-01', 'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '0' }, 'io.modelcontextprotocol/clientCapabilities': {} } },
      }),
    });
    const body = (await res.json()) as { error: { code: number; data: { supported: string[] } } };
    expect(body.error.code).toBe(-32022);
    expect(body.error.data.supported).toContain('2026-07-28');
  });
});
