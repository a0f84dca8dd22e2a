// The typed client (src/client) against the real server: calls, events, resume after lost
// connections and a server restart, and turns that never outlive their deadline.
import { afterEach, describe, expect, it } from 'vitest';
import { ChatroomClient, ChatroomError, type TurnInfo } from '../../src/client/index.js';
import { backoffDelay } from '../../src/client/backoff.js';
import { rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { WebSocketServer } from 'ws';
import { registerAgent, registerUser, roomWithAgents, startTestServer, tempDataDir, type TestServer } from '../helpers/server.js';
import { startProxy, type CuttableProxy } from '../helpers/ws-proxy.js';
import { eventually } from '../helpers/ws.js';

const cleanups: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function server(overrides: Parameters<typeof startTestServer>[0] = {}): Promise<TestServer> {
  const s = await startTestServer(overrides);
  cleanups.push(() => s.stop());
  return s;
}

function client(url: string, token: string, extra: Partial<ConstructorParameters<typeof ChatroomClient>[0]> = {}): ChatroomClient {
  const c = new ChatroomClient({ url, token, backoff: { initialMs: 50, maxMs: 500 }, ...extra });
  cleanups.push(() => c.close());
  return c;
}

/** A DATA_DIR that outlives one server (stop() keeps directories it was given). */
async function sharedDataDir(): Promise<string> {
  const dir = await tempDataDir();
  cleanups.unshift(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/** Records the seqs a client delivered for a room. */
function recordSeqs(c: ChatroomClient, roomId: string): number[] {
  const seqs: number[] = [];
  c.on('message_new', (data, meta) => {
    if (meta.room_id === roomId) seqs.push(data.message.seq);
  });
  return seqs;
}

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

describe('ChatroomClient', () => {
  it('connects, calls tools, throws errors with the server code, and delivers events', async () => {
    const s = await server();
    const registered = await ChatroomClient.register(s.url, 'Typed', { introduce: 'a typed client' });
    expect(registered.token).toMatch(/^act_/);
    const c = client(s.url, registered.token);
    const me = await c.connect();
    expect(me).toMatchObject({ kind: 'agent', name: 'Typed', id: registered.agent_id });
    const { room } = await c.call<{ room: { room_id: string } }>('create_room', { room_name: 'Typed room' });
    await eventually(() => c.lastSeq(room.room_id) === 0, 2000, 'the new room to be subscribed');
    const seqs = recordSeqs(c, room.room_id);
    const err = await c.call('get_room', { room_id: 'no-such-room-20250101000000-abcdefgh' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ChatroomError);
    expect((err as ChatroomError).code).toBe('room_not_found');
    expect(await c.call('no_such_tool').catch((e: ChatroomError) => e.code)).toBe('unknown_tool');
    const { token } = await registerUser(s, 'Person');
    await s.ok('join_room', { room_id: room.room_id }, token);
    await s.ok('send_message', { room_id: room.room_id, text_content: 'hi typed' }, token);
    await eventually(() => seqs.length === 1);
    expect(c.lastSeq(room.room_id)).toBe(1);
  });

  it('backs off exponentially with jitter, up to a cap', () => {
    const opts = { initialMs: 100, maxMs: 1000, factor: 2, jitter: 0.5 };
    expect([0, 1, 2, 3, 4, 5].map((n) => backoffDelay(n, opts, () => 1))).toEqual([100, 200, 400, 800, 1000, 1000]);
    expect(backoffDelay(2, opts, () => 0)).toBe(200);
  });

  it('refuses a bad token without reconnecting', async () => {
    const s = await server();
    const c = client(s.url, 'act_wrong');
    await expect(c.connect()).rejects.toMatchObject({ code: 'unauthorized' });
    expect(c.status).toBe('closed');
  });

  it('resumes every room after lost connections: no gap, no duplicate delivered', async () => {
    const s = await server();
    const proxy: CuttableProxy = await startProxy(s.port);
    cleanups.push(() => proxy.close());
    const { person, room, agents: [agent] } = await roomWithAgents(s, 'Writer', 'Flowing room', ['Reader']);
    const c = client(proxy.url, agent.token);
    const seqs = recordSeqs(c, room.room_id);
    let reconnects = 0;
    c.onStatus((status) => {
      if (status === 'reconnecting') reconnects++;
    });
    await c.connect();
    let sent = 0;
    let flowing = true;
    const writer = (async () => {
      while (flowing) {
        await s.ok('send_message', { room_id: room.room_id, text_content: `n${++sent}` }, person.token);
      }
    })();
    for (let cut = 0; cut < 4; cut++) {
      await eventually(() => seqs.length >= (cut + 1) * 15, 10_000, 'messages before the cut');
      proxy.cut();
      // The cut reaches the client asynchronously: wait for it to notice, then to come back.
      await eventually(() => reconnects > cut, 10_000, 'the client noticing the cut');
      await eventually(() => c.status === 'open', 10_000, 'the reconnect');
    }
    flowing = false;
    await writer;
    await eventually(() => seqs.at(-1) === sent, 10_000, 'the last message');
    expect(reconnects).toBeGreaterThanOrEqual(4);
    expect(seqs).toEqual(range(1, sent));
  });

  it('resumes three rooms with a writer each across lost connections: per room no gap, no duplicate', async () => {
    const s = await server();
    const proxy: CuttableProxy = await startProxy(s.port);
    cleanups.push(() => proxy.close());
    const agent = await registerAgent(s, 'MultiReader');
    const rooms: Array<{ roomId: string; token: string; sent: number; seqs: number[] }> = [];
    const c = client(proxy.url, agent.token);
    for (let i = 0; i < 3; i++) {
      const person = await registerUser(s, `MultiWriter${i}`);
      const { room } = await s.ok('create_room', { room_name: `Multi ${i}` }, person.token);
      await s.ok('join_room', { room_id: room.room_id }, agent.token);
      rooms.push({ roomId: room.room_id, token: person.token, sent: 0, seqs: recordSeqs(c, room.room_id) });
    }
    let reconnects = 0;
    c.onStatus((status) => {
      if (status === 'reconnecting') reconnects++;
    });
    await c.connect();
    let flowing = true;
    const writers = rooms.map(async (r) => {
      while (flowing) await s.ok('send_message', { room_id: r.roomId, text_content: `w${++r.sent}` }, r.token);
    });
    for (let cut = 0; cut < 3; cut++) {
      await eventually(() => rooms.every((r) => r.seqs.length >= (cut + 1) * 8), 10_000, 'messages in every room before the cut');
      proxy.cut();
      await eventually(() => reconnects > cut, 10_000, 'the client noticing the cut');
      await eventually(() => c.status === 'open', 10_000, 'the reconnect');
    }
    flowing = false;
    await Promise.all(writers);
    await eventually(() => rooms.every((r) => r.seqs.at(-1) === r.sent), 10_000, 'the last message of every room');
    for (const r of rooms) expect(r.seqs).toEqual(range(1, r.sent));
  });

  it('hands a turn that came before onTurn was registered to the handler registered later', async () => {
    const s = await server();
    const { person, room, agents: [agent] } = await roomWithAgents(s, 'EarlyAsker', 'Early turn', ['LateHandler']);
    const c = client(s.url, agent.token);
    const seen: string[] = [];
    c.on('agent_turn', (data) => seen.push(data.agent_name));
    await c.connect();
    await s.ok('send_message', { room_id: room.room_id, text_content: 'early?' }, person.token);
    await eventually(() => seen.length >= 1, 5000, 'the agent_turn');
    c.onTurn((turn) => ({ text: `late answer to ${turn.context.messages.at(-1)?.text_content}` }));
    await eventually(async () => (await s.ok('get_messages', { room_id: room.room_id }, person.token)).messages.length === 2, 5000, 'the answer');
    const messages = (await s.ok('get_messages', { room_id: room.room_id }, person.token)).messages;
    expect(messages[1]).toMatchObject({ sender: 'LateHandler', text_content: 'late answer to early?', visible: true });
  });

  it('ignores unknown frame and event types and malformed frames without throwing', async () => {
    const wss = new WebSocketServer({ port: 0, host: '127.0.0.1' });
    cleanups.push(() => new Promise<void>((resolve) => wss.close(() => resolve())));
    await new Promise<void>((resolve) => wss.once('listening', () => resolve()));
    const participant = { kind: 'agent', id: 'a1', name: 'Future', role: 'ai_agent' };
    const message = { seq: 1, message_id: 'm1', text_content: 'still works' };
    wss.on('connection', (ws) => {
      ws.on('message', (raw) => {
        const frame = JSON.parse(raw.toString());
        if (frame.type === 'auth') {
          ws.send(JSON.stringify({ type: 'auth_ok', participant, rooms: [{ room_id: 'r1', last_seq: 0 }], server_time: new Date().toISOString() }));
        } else if (frame.type === 'subscribe') {
          ws.send(JSON.stringify({ type: 'subscribed', room_id: 'r1', last_seq: 0, after_seq: 0 }));
          for (const odd of ['not json', 'null', '42', '[1,2]', '{"no":"type"}']) ws.send(odd);
          ws.send(JSON.stringify({ type: 'hologram', room_id: 'r1' }));
          ws.send(JSON.stringify({ type: 'event', event: 'future_event', room_id: 'r1', data: { x: 1 } }));
          ws.send(JSON.stringify({ type: 'event', event: 'message_new', room_id: 'r1' })); // no data
          ws.send(JSON.stringify({ type: 'event', event: 'message_new', room_id: 'r1', data: { message } }));
        }
      });
    });
    const c = client(`ws://127.0.0.1:${(wss.address() as AddressInfo).port}/ws`, 'act_any');
    const any: string[] = [];
    c.on('*', (_data, meta) => any.push(meta.event));
    const texts: string[] = [];
    c.on('message_new', (data) => texts.push(data.message.text_content));
    await c.connect();
    await eventually(() => texts.length === 1, 5000, 'the message after the odd frames');
    expect(texts).toEqual(['still works']);
    expect(any).toEqual(['future_event', 'message_new']);
    expect(c.lastSeq('r1')).toBe(1);
    expect(c.status).toBe('open');
  });

  it('reconnects after a server restart on the same DATA_DIR and resumes', async () => {
    const first = await startTestServer({ dataDir: await sharedDataDir() });
    const { person, room, agents: [agent] } = await roomWithAgents(first, 'Restarter', 'Restart room', ['Survivor']);
    const c = client(first.url, agent.token);
    const seqs = recordSeqs(c, room.room_id);
    await c.connect();
    for (let i = 1; i <= 5; i++) await first.ok('send_message', { room_id: room.room_id, text_content: `before ${i}` }, person.token);
    await eventually(() => seqs.length === 5);
    const statuses: string[] = [];
    c.onStatus((status) => statuses.push(status));
    await first.stop();
    await eventually(() => c.status === 'reconnecting', 5000, 'the client to notice');
    const second = await server({ dataDir: first.dataDir, port: first.port });
    // Posted right away: delivered live or by the resume, but exactly once.
    for (let i = 1; i <= 5; i++) await second.ok('send_message', { room_id: room.room_id, text_content: `after ${i}` }, person.token);
    await eventually(() => seqs.length === 10, 10_000, 'the messages after the restart');
    expect(seqs).toEqual(range(1, 10));
    expect(statuses).toContain('open');
    expect(await c.call('get_room', { room_id: room.room_id })).toMatchObject({ room: { room_id: room.room_id } });
  });

  it('gets its turn back after a restart and answers it', async () => {
    const first = await startTestServer({ dataDir: await sharedDataDir() });
    const { person, room, agents: [agent] } = await roomWithAgents(first, 'Asker', 'Turn restart', ['Answerer']);
    // The agent is online (it just called) but not connected: the turn waits for it.
    await first.ok('send_message', { room_id: room.room_id, text_content: 'question?' }, person.token);
    const before = await first.ok('get_context', { room_id: room.room_id }, agent.token);
    expect(before.your_turn).toMatchObject({ can_skip: true, round_id: expect.any(String) });
    await first.stop();
    const second = await server({ dataDir: first.dataDir });
    const c = client(second.url, agent.token);
    const turns: TurnInfo[] = [];
    c.onTurn((turn) => {
      turns.push(turn);
      return { text: `answer to: ${turn.context.messages.at(-1)?.text_content}` };
    });
    await c.connect();
    await eventually(() => turns.length === 1, 5000, 'the turn');
    // The same turn as before the restart: same round, can_skip as issued.
    expect(turns[0]!.context.your_turn).toMatchObject({ round_id: before.your_turn.round_id, can_skip: true });
    const page = await second.ok('get_messages', { room_id: room.room_id }, person.token);
    await eventually(async () => (await second.ok('get_messages', { room_id: room.room_id }, person.token)).messages.length === 2);
    const messages = (await second.ok('get_messages', { room_id: room.room_id }, person.token)).messages;
    expect(page.messages[0].text_content).toBe('question?');
    expect(messages[1]).toMatchObject({ sender: 'Answerer', text_content: 'answer to: question?', visible: true });
  });

  it('never holds a turn past its deadline: a hanging handler is skipped before the server times out', async () => {
    const s = await server({ turnTimeoutMs: 2000 });
    const { person, room, agents: [agent] } = await roomWithAgents(s, 'Waiter', 'Hang room', ['Hanger']);
    const c = client(s.url, agent.token);
    let aborted = false;
    c.onTurn(
      (turn) =>
        new Promise<never>(() => {
          turn.signal.addEventListener('abort', () => (aborted = true));
        }),
    );
    await c.connect();
    await s.ok('send_message', { room_id: room.room_id, text_content: 'anyone?' }, person.token);
    await eventually(async () => (await s.ok('get_messages', { room_id: room.room_id }, person.token)).messages.length === 2, 5000);
    const record = (await s.ok('get_messages', { room_id: room.room_id }, person.token)).messages[1];
    // Skipped by the client itself ('skip'; the server's timeout would record 'timeout').
    expect(record).toMatchObject({ sender: 'Hanger', visible: false, skip_reason: 'skip' });
    expect(aborted).toBe(true);
  });

  it('skips with the reason the handler gives, or the error it threw, and shows activity (SPEC v2 §7)', async () => {
    const s = await server();
    const { person, room, agents: [agent] } = await roomWithAgents(s, 'Asker', 'Reason room', ['Reasoner']);
    const c = client(s.url, agent.token);
    const changes: Array<{ name: string; status: string; activity?: string | null; note?: string | null }> = [];
    c.on('member_status_change', (data) => changes.push(data.member as (typeof changes)[number]));
    let calls = 0;
    let activitySet: boolean | null = null;
    c.onTurn(async (turn) => {
      calls++;
      if (calls === 1) {
        activitySet = await c.setActivity(turn.room_id, 'thinking', 'reading the question');
        return { skip: true, reason: 'nothing to add\n(really)' };
      }
      throw new Error('model exploded');
    });
    await c.connect();
    const skipRecords = async () =>
      ((await s.ok('get_messages', { room_id: room.room_id }, person.token)).messages as Array<{ sender: string; text_content: string; visible: boolean }>).filter(
        (m) => m.sender === 'Reasoner' && !m.visible,
      );
    await s.ok('send_message', { room_id: room.room_id, text_content: 'first?' }, person.token);
    await expect.poll(async () => (await skipRecords()).length, { timeout: 5000 }).toBe(1);
    await s.ok('send_message', { room_id: room.room_id, text_content: 'second?' }, person.token);
    await expect.poll(async () => (await skipRecords()).length, { timeout: 5000 }).toBe(2);
    expect((await skipRecords()).map((m) => m.text_content)).toEqual(['（跳过：nothing to add (really)）', '（跳过：error: model exploded）']);
    expect(activitySet).toBe(true);
    expect(changes).toContainEqual(expect.objectContaining({ name: 'Reasoner', status: 'busy', activity: 'thinking', note: 'reading the question' }));
  });
});
