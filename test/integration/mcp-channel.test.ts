// Pushed turns (Claude Code channels, SPEC §7.1) and room resources over MCP: the stdio proxy
// bound by CHATROOM_TOKEN declares `claude/channel` and passes on one
// `notifications/claude/channel` per @mention; `--no-channel` turns it off; a line that is not
// JSON is reported on stderr. Resources: each room of the caller, read and followed.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { PassThrough } from 'node:stream';
import { Client } from '@modelcontextprotocol/client';
import { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PACKAGE_ROOT } from '../../src/paths.js';
import { TEST_DIST } from '../global-setup.js';
import { connectMcp2, type Mcp2Client } from '../helpers/mcp2.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

let server: TestServer;
const closers: Array<() => Promise<unknown>> = [];
let counter = 0;
const unique = (prefix: string) => `${prefix}${++counter}${Date.now() % 100000}`;

beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await Promise.all(closers.map((close) => close().catch(() => undefined)));
  await server.stop();
});

const CLI = path.join(TEST_DIST, 'src', 'cli.js');

interface Pushed {
  method: string;
  params: { content: string; meta: Record<string, string> };
}

/** `agent-chatroom mcp --url …` as Claude Code starts it, with the official client 2.x on its stdio. */
async function stdioAgent(token: string, extraArgs: string[] = [], url = server.url) {
  const stderr = new PassThrough();
  let errText = '';
  stderr.on('data', (chunk: Buffer) => (errText += chunk.toString()));
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [CLI, 'mcp', '--url', url, ...extraArgs],
    cwd: PACKAGE_ROOT,
    env: { ...getDefaultEnvironment(), CHATROOM_TOKEN: token },
    stderr: 'pipe',
  });
  const pushed: Pushed[] = [];
  const client = new Client({ name: 'claude-code-like', version: '0.0.0' });
  client.fallbackNotificationHandler = async (notification) => {
    pushed.push(notification as unknown as Pushed);
  };
  await client.connect(transport);
  transport.stderr?.pipe(stderr);
  closers.push(() => client.close());
  return { client, transport, pushed, stderr: () => errText };
}

/** A room made by a person, with the agent as a member. */
async function roomWithAgent() {
  const agent = await server.ok<{ token: string }>('register_agent', { name: unique('chan') });
  const agentName = `chan${counter}`;
  const person = await server.ok<{ token: string; user: { name: string } }>('register_user', { name: unique('pers') });
  const { room } = await server.ok<{ room: { room_id: string } }>('create_room', { room_name: unique('Channel room ') }, person.token);
  await server.ok('join_room', { room_id: room.room_id }, agent.token);
  return { agentToken: agent.token, person, roomId: room.room_id, agentName };
}

async function nameOf(token: string): Promise<string> {
  const me = await server.ok<{ participant: { name: string } }>('login', { token });
  return me.participant.name;
}

describe('Claude Code channel on the stdio proxy', () => {
  it('declares claude/channel and pushes one notification per @mention, with the room in meta', async () => {
    const { agentToken, person, roomId } = await roomWithAgent();
    const name = await nameOf(agentToken);
    const agent = await stdioAgent(agentToken);
    expect(agent.client.getServerCapabilities()?.experimental).toHaveProperty(['claude/channel']);
    // A call through the proxy: its upstream session is open and bound by CHATROOM_TOKEN.
    await agent.client.callTool({ name: 'get_context', arguments: { room_id: roomId } });
    await server.ok('send_message', { room_id: roomId, text_content: `@${name} what do you think?` }, person.token);
    await expect.poll(() => agent.pushed.filter((p) => p.method === 'notifications/claude/channel').length, { timeout: 5000 }).toBe(1);
    const push = agent.pushed.find((p) => p.method === 'notifications/claude/channel')!;
    expect(push.params.meta.room_id).toBe(roomId);
    expect(['turn', 'mention']).toContain(push.params.meta.kind);
    expect(Object.values(push.params.meta).every((v) => typeof v === 'string')).toBe(true);
    expect(push.params.content).toContain('what do you think?');
    expect(push.params.content).toContain('send_message');
    // The agent answers with the usual tool; the turn is over and nothing more was pushed.
    const answer = await agent.client.callTool({ name: 'send_message', arguments: { room_id: roomId, text_content: 'I agree.' } });
    expect(answer.isError).toBeFalsy();
    expect(agent.pushed.filter((p) => p.method === 'notifications/claude/channel')).toHaveLength(1);
  });

  it('speaks plain JSON lines: initialize answer with claude/channel, then the push line', async () => {
    const { agentToken, person, roomId } = await roomWithAgent();
    const name = await nameOf(agentToken);
    const child = spawn(process.execPath, [CLI, 'mcp', '--url', server.url], {
      cwd: PACKAGE_ROOT,
      env: { ...process.env, CHATROOM_TOKEN: agentToken },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    closers.push(async () => child.kill());
    const lines: Array<{ id?: number; method?: string; result?: any; params?: any }> = [];
    createInterface({ input: child.stdout! }).on('line', (line) => lines.push(JSON.parse(line)));
    child.stdin!.write(
      `${JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '0' } } })}\n`,
    );
    await expect.poll(() => lines.find((l) => l.id === 1), { timeout: 10_000 }).toBeTruthy();
    expect(lines.find((l) => l.id === 1)!.result.capabilities.experimental).toHaveProperty(['claude/channel']);
    // No `notifications/initialized` sent: pushes still come. A call makes sure the proxy is connected upstream.
    child.stdin!.write(`${JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'get_context', arguments: { room_id: roomId } } })}\n`);
    await expect.poll(() => lines.find((l) => l.id === 2), { timeout: 10_000 }).toBeTruthy();
    await server.ok('send_message', { room_id: roomId, text_content: `@${name} ping` }, person.token);
    await expect.poll(() => lines.filter((l) => l.method === 'notifications/claude/channel').length, { timeout: 5000 }).toBe(1);
    expect(lines.find((l) => l.method === 'notifications/claude/channel')!.params.meta.room_id).toBe(roomId);
  });

  it('pushes a turn with can_skip and deadline when a person speaks without a mention', async () => {
    const { agentToken, person, roomId } = await roomWithAgent();
    const agent = await stdioAgent(agentToken);
    await agent.client.callTool({ name: 'get_context', arguments: { room_id: roomId } });
    await server.ok('send_message', { room_id: roomId, text_content: 'Anyone there?' }, person.token);
    await expect.poll(() => agent.pushed.length, { timeout: 5000 }).toBeGreaterThan(0);
    const push = agent.pushed[0]!;
    expect(push.params.meta).toMatchObject({ room_id: roomId, kind: 'turn', can_skip: 'true' });
    expect(typeof push.params.meta.deadline).toBe('string');
    expect(Number.isNaN(Date.parse(push.params.meta.deadline!))).toBe(false);
  });

  it('--no-channel declares nothing and pushes nothing', async () => {
    const { agentToken, person, roomId } = await roomWithAgent();
    const name = await nameOf(agentToken);
    const agent = await stdioAgent(agentToken, ['--no-channel']);
    expect(agent.client.getServerCapabilities()?.experimental?.['claude/channel']).toBeUndefined();
    await agent.client.callTool({ name: 'get_context', arguments: { room_id: roomId } });
    await server.ok('send_message', { room_id: roomId, text_content: `@${name} hello` }, person.token);
    // The turn arrived (seen through the tools), yet no push.
    const turn = await agent.client.callTool({ name: 'wait_for_turn', arguments: { room_id: roomId, timeout_s: 10 } });
    expect((turn.structuredContent as { your_turn: unknown }).your_turn).not.toBeNull();
    expect(agent.pushed.filter((p) => p.method === 'notifications/claude/channel')).toEqual([]);
  });

  it('drops a push to a client that went away; the turn ends as usual', async () => {
    const { agentToken, person, roomId } = await roomWithAgent();
    const name = await nameOf(agentToken);
    await server.ok('update_room', { room_id: roomId, turn_timeout_ms: 1500 }, person.token);
    const agent = await stdioAgent(agentToken);
    await agent.client.callTool({ name: 'get_context', arguments: { room_id: roomId } });
    // The proxy dies without closing its upstream session: the session stays, its stream is gone.
    const child = (agent.transport as unknown as { _process: import('node:child_process').ChildProcess })._process;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
    await server.ok('send_message', { room_id: roomId, text_content: `@${name} are you there?` }, person.token);
    // Nobody listens: the turn is not held forever, the engine ends it with its usual record.
    await expect
      .poll(
        async () => {
          const { messages } = await server.ok<{ messages: Array<{ sender: string; skip_reason: string | null }> }>(
            'get_messages',
            { room_id: roomId, after_seq: 0 },
            person.token,
          );
          return messages.filter((m) => m.sender === name).map((m) => m.skip_reason);
        },
        { timeout: 15_000, interval: 250 },
      )
      .toEqual([expect.stringMatching(/^(timeout|offline)$/)]);
    expect(agent.pushed).toEqual([]);
  });

  it('keeps an agent that listens for pushes online past the presence window, as a WebSocket does', async () => {
    const own = await startTestServer({}, { presenceWindowMs: 1500 });
    closers.push(() => own.stop());
    const person = await own.ok<{ token: string }>('register_user', { name: unique('watch') });
    const { room } = await own.ok<{ room: { room_id: string } }>('create_room', { room_name: unique('Presence room ') }, person.token);
    const listenerName = unique('listener');
    const quietName = unique('quiet');
    const listener = await own.ok<{ token: string }>('register_agent', { name: listenerName });
    const quiet = await own.ok<{ token: string }>('register_agent', { name: quietName });
    await own.ok('join_room', { room_id: room.room_id }, listener.token);
    await own.ok('join_room', { room_id: room.room_id }, quiet.token);
    await stdioAgent(listener.token, [], own.url);
    await stdioAgent(quiet.token, ['--no-channel'], own.url);
    const statusOf = async (name: string) => {
      const { room: seen } = await own.ok<{ room: { members: Array<{ name: string; status: string }> } }>('get_room', { room_id: room.room_id }, person.token);
      return seen.members.find((m) => m.name === name)?.status;
    };
    // The agent without a channel made no call since joining: the window runs out for it, and
    // nothing brings it back; the listening one is online.
    await expect.poll(async () => [await statusOf(listenerName), await statusOf(quietName)], { timeout: 15_000, interval: 250 }).toEqual(['online', 'offline']);
    // A whole window later (a control that joins now goes offline), the listener is still online.
    const controlName = unique('control');
    const control = await own.ok<{ token: string }>('register_agent', { name: controlName });
    await own.ok('join_room', { room_id: room.room_id }, control.token);
    await expect.poll(() => statusOf(controlName), { timeout: 15_000, interval: 250 }).toBe('offline');
    expect(await statusOf(listenerName)).toBe('online');
    expect(await statusOf(quietName)).toBe('offline');
  });

  it('reports a line that is not JSON on stderr and keeps serving', async () => {
    const { agentToken } = await roomWithAgent();
    const agent = await stdioAgent(agentToken);
    const stdin = (agent.transport as unknown as { _process: import('node:child_process').ChildProcess })._process.stdin!;
    stdin.write('this is not json\n');
    await expect.poll(() => agent.stderr(), { timeout: 5000 }).toContain('not JSON');
    const { tools } = await agent.client.listTools();
    expect(tools.length).toBeGreaterThan(0);
  });
});

describe('rooms as resources', () => {
  async function member(era: 'pinned' | 'legacy', token: string): Promise<Mcp2Client> {
    const client = await connectMcp2(server.url, era, { token });
    closers.push(() => client.close());
    return client;
  }

  it.each(['pinned', 'legacy'] as const)('lists, reads and follows the rooms of the caller (%s)', async (era) => {
    const { agentToken, person, roomId } = await roomWithAgent();
    const other = await server.ok<{ token: string }>('register_agent', { name: unique('outsider') });
    await server.ok('send_message', { room_id: roomId, text_content: 'first words' }, person.token);
    const client = await member(era, agentToken);
    const { resources } = await client.client.listResources();
    const uris = resources.map((r) => r.uri);
    expect(uris).toContain(`chatroom://rooms/${roomId}`);
    expect(uris).toContain(`chatroom://rooms/${roomId}/messages`);
    const read = await client.client.readResource({ uri: `chatroom://rooms/${roomId}/messages` });
    const body = JSON.parse((read.contents[0] as { text: string }).text) as { messages: Array<{ text_content: string }> };
    expect(body.messages.map((m) => m.text_content)).toContain('first words');
    const state = await client.client.readResource({ uri: `chatroom://rooms/${roomId}` });
    expect(JSON.parse((state.contents[0] as { text: string }).text).room.room_id).toBe(roomId);
    // A non-member reads nothing.
    const outsider = await member(era, other.token);
    expect((await outsider.client.listResources()).resources.map((r) => r.uri)).not.toContain(`chatroom://rooms/${roomId}`);
    await expect(outsider.client.readResource({ uri: `chatroom://rooms/${roomId}` })).rejects.toThrow();

    // A new message notifies the follower.
    const updated: string[] = [];
    client.client.setNotificationHandler('notifications/resources/updated', (n) => {
      updated.push(n.params.uri);
    });
    const followed = `chatroom://rooms/${roomId}/messages`;
    if (era === 'legacy') {
      await client.client.subscribeResource({ uri: followed });
    } else {
      const subscription = await client.client.listen({ resourceSubscriptions: [followed] });
      expect(subscription.honoredFilter.resourceSubscriptions).toEqual([followed]);
      closers.push(() => subscription.close());
      // A non-member cannot follow the room.
      await expect(outsider.client.listen({ resourceSubscriptions: [followed] })).rejects.toThrow();
    }
    await server.ok('send_message', { room_id: roomId, text_content: 'second words' }, person.token);
    await expect.poll(() => updated, { timeout: 5000 }).toContain(`chatroom://rooms/${roomId}/messages`);
  });
});
