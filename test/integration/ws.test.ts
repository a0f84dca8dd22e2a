// The WebSocket hub against the real server: auth, events, isolation, replay, limits.
import type { Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { wsHubOf } from '../../src/transports/ws.js';
import { registerAgent, registerUser, startTestServer, type TestServer } from '../helpers/server.js';
import { eventually, TestSocket, wsUrl } from '../helpers/ws.js';

let server: TestServer;
let url: string;

beforeAll(async () => {
  server = await startTestServer({ turnTimeoutMs: 60_000 });
  url = wsUrl(server.url);
});
afterAll(async () => {
  await server?.stop();
});

let counter = 0;
/** A fresh person with a fresh room of their own (no agents: posts start no rounds). */
async function personWithRoom(prefix = 'P') {
  const person = await registerUser(server, `${prefix}${++counter}`);
  const { room } = await server.ok('create_room', { room_name: `Room ${counter}` }, person.token);
  return { person, roomId: room.room_id as string };
}

function post(roomId: string, token: string, text: string) {
  return server.ok('send_message', { room_id: roomId, text_content: text }, token);
}

describe('auth', () => {
  it('answers auth_ok with the participant (no token hash) and its rooms, already subscribed', async () => {
    const { person, roomId } = await personWithRoom();
    const socket = await TestSocket.open(url);
    const ok = await socket.auth(person.token);
    expect(ok.participant).toEqual({ kind: 'user', id: person.id, name: person.name, role: 'user' });
    expect(JSON.stringify(ok)).not.toMatch(/token/i);
    expect(ok.rooms).toEqual([{ room_id: roomId, last_seq: 0 }]);
    expect(Date.parse(ok.server_time)).not.toBeNaN();
    // No subscribe needed: the first message arrives.
    await post(roomId, person.token, 'first');
    const frame = await socket.waitForEvent('message_new');
    expect(frame.data.message).toMatchObject({ seq: 1, text_content: 'first', sender: person.name });
    await socket.close();
  });

  it('closes 4401 for an unknown token', async () => {
    const socket = await TestSocket.open(url);
    socket.send({ type: 'auth', token: 'act_not-a-real-token' });
    expect((await socket.closed).code).toBe(4401);
  });

  it('closes 4401 when the first frame is not auth', async () => {
    const socket = await TestSocket.open(url);
    socket.send({ type: 'ping' });
    const closed = await socket.closed;
    expect(closed.code).toBe(4401);
    expect(closed.reason).toMatch(/auth/);
  });

  it('closes 4401 when no auth frame comes in time', async () => {
    const own = await startTestServer();
    try {
      wsHubOf(own.app)!.configure({ authTimeoutMs: 200 });
      const socket = await TestSocket.open(wsUrl(own.url));
      const started = Date.now();
      const closed = await socket.closed;
      expect(closed.code).toBe(4401);
      expect(closed.reason).toMatch(/in time/);
      expect(Date.now() - started).toBeGreaterThanOrEqual(150);
    } finally {
      await own.stop();
    }
  });

  it('the default auth timeout is 10 s', async () => {
    const { WS_DEFAULTS } = await import('../../src/transports/ws.js');
    expect(WS_DEFAULTS.authTimeoutMs).toBe(10_000);
    expect(WS_DEFAULTS.heartbeatMs).toBe(30_000);
    expect(WS_DEFAULTS.maxBufferedBytes).toBe(1024 * 1024);
  });

  it('closes the sockets of a rotated token with 4401 and keeps the others', async () => {
    const { person } = await personWithRoom();
    const second = await server.ok('login', { token: person.token });
    expect(second.token).toBe(person.token);
    const a = await TestSocket.connect(url, person.token);
    const rotated = await server.ok<{ token: string }>('rotate_token', {}, person.token);
    expect((await a.closed).code).toBe(4401);
    // The new token works; the old one is refused at auth.
    const b = await TestSocket.connect(url, rotated.token);
    const old = await TestSocket.open(url);
    old.send({ type: 'auth', token: person.token });
    expect((await old.closed).code).toBe(4401);
    await b.close();
  });

  it('rotate_token over the socket answers with the new token, then closes 4401', async () => {
    const { person } = await personWithRoom();
    const socket = await TestSocket.connect(url, person.token);
    const result = await socket.call('rotate_token');
    expect(result.ok).toBe(true);
    const closed = await socket.closed;
    expect(closed.code).toBe(4401);
    const fresh = await TestSocket.connect(url, (result as { data: { token: string } }).data.token);
    await fresh.close();
  });
});

describe('a whole default round over the socket', () => {
  it('delivers round_start, agent_turn, message_new, …, round_end in commit order to every member', async () => {
    const alice = await registerUser(server, 'RoundAlice');
    const ann = await registerAgent(server, 'RoundAnn');
    const bob = await registerAgent(server, 'RoundBob');
    const { room } = await server.ok('create_room', { room_name: 'Round room' }, alice.token);
    const roomId = room.room_id as string;
    await server.ok('join_room', { room_id: roomId }, ann.token);
    await server.ok('join_room', { room_id: roomId }, bob.token);
    const sa = await TestSocket.connect(url, ann.token);
    const sb = await TestSocket.connect(url, bob.token);
    const su = await TestSocket.connect(url, alice.token);

    await post(roomId, alice.token, 'hello agents');
    const annTurn = await sa.waitForEvent('agent_turn', (d) => d.agent_name === 'RoundAnn');
    expect(annTurn.data).toMatchObject({ agent_id: ann.id, can_skip: true, reason: 'rotation', timeout_ms: 60_000 });
    expect(Date.parse(annTurn.data.deadline) - Date.now()).toBeGreaterThan(50_000);
    const answer = await sa.call('send_message', { room_id: roomId, text_content: 'Ann here' });
    expect(answer).toMatchObject({ ok: true, data: { message: { seq: 2, sender: 'RoundAnn', role: 'ai_agent' } } });
    await sb.waitForEvent('agent_turn', (d) => d.agent_name === 'RoundBob');
    // Not Ann's turn any more: the same error code as REST.
    expect(await sa.call('send_message', { room_id: roomId, text_content: 'again' })).toMatchObject({
      ok: false,
      error: { code: 'not_your_turn' },
    });
    expect(await sb.call('skip_response', { room_id: roomId })).toMatchObject({ ok: true, data: { skipped: true } });
    await su.waitForEvent('round_end');
    // Stop the automatic next round so the room goes quiet.
    await server.ok('set_room_status', { room_id: roomId, system_status: 'paused' }, alice.token);
    await su.waitForEvent('room_update', (d) => d.room.system_status === 'paused');

    const firstRound = (socket: TestSocket) => {
      const events = socket.events(roomId);
      const end = events.findIndex((f) => f.event === 'round_end');
      return events.slice(0, end + 1);
    };
    const names = firstRound(su).map((f) => f.event);
    expect(names).toEqual([
      'message_new', // Alice
      'round_start',
      'agent_turn', // Ann
      'room_update',
      'message_new', // Ann
      'agent_turn', // Bob
      'message_new', // Bob's skip record
      'round_end',
    ]);
    const [, roundStart, , , annMessage, bobTurn, skipRecord, roundEnd] = firstRound(su);
    expect(roundStart!.data).toMatchObject({ agent_queue: ['RoundAnn', 'RoundBob'], mode: 'default' });
    expect(annMessage!.data.message).toMatchObject({ seq: 2, text_content: 'Ann here', visible: true });
    expect(bobTurn!.data).toMatchObject({ agent_name: 'RoundBob', agent_id: bob.id });
    expect(skipRecord!.data.message).toMatchObject({ seq: 3, sender: 'RoundBob', visible: false, skip_reason: 'skip' });
    expect(roundEnd!.data).toMatchObject({ round_id: (roundStart!.data as { round_id: string }).round_id, reason: 'completed' });
    // Every member saw the same events in the same order.
    const wire = (socket: TestSocket) => JSON.stringify(socket.events(roomId).slice(0, names.length));
    await eventually(() => sa.events(roomId).length >= names.length && sb.events(roomId).length >= names.length);
    expect(wire(sa)).toBe(wire(su));
    expect(wire(sb)).toBe(wire(su));
    await Promise.all([sa.close(), sb.close(), su.close()]);
  });

  it('sends agent_turn again when the turn holder subscribes', async () => {
    const alice = await registerUser(server, 'HolderAlice');
    const ann = await registerAgent(server, 'HolderAnn');
    const { room } = await server.ok('create_room', { room_name: 'Holder room' }, alice.token);
    await server.ok('join_room', { room_id: room.room_id }, ann.token);
    const sa = await TestSocket.connect(url, ann.token);
    await post(room.room_id, alice.token, 'your turn, Ann');
    const first = await sa.waitForEvent('agent_turn');
    const again = await TestSocket.connect(url, ann.token);
    again.send({ type: 'subscribe', room_id: room.room_id, after_seq: 0 });
    const replayed = await again.waitForEvent('agent_turn');
    expect(replayed.data).toEqual(first.data);
    // The replay came first: seq 1 then the turn.
    expect(again.messageSeqs(room.room_id)).toEqual([1]);
    await server.ok('set_room_status', { room_id: room.room_id, system_status: 'paused' }, alice.token);
    await Promise.all([sa.close(), again.close()]);
  });
});

describe('isolation and membership', () => {
  it('a non-member receives nothing of a busy room and may not subscribe or read it', async () => {
    const { person, roomId } = await personWithRoom('Busy');
    const eve = await registerUser(server, 'Eve');
    await server.ok('create_room', { room_name: 'Eves room' }, eve.token);
    const se = await TestSocket.connect(url, eve.token);
    const member = await TestSocket.connect(url, person.token);
    for (let i = 0; i < 20; i++) await post(roomId, person.token, `secret ${i}`);
    await member.waitForEvent('message_new', (d) => d.message.seq === 20);
    se.send({ type: 'subscribe', room_id: roomId, after_seq: 0 });
    const refused = await se.waitFor((f) => f.type === 'error');
    expect(refused).toMatchObject({ type: 'error', room_id: roomId, error: { code: 'not_a_member' } });
    expect(await se.call('get_messages', { room_id: roomId })).toMatchObject({ ok: false, error: { code: 'not_a_member' } });
    expect(se.events()).toEqual([]);
    expect(JSON.stringify(se.frames)).not.toContain('secret');
    await Promise.all([se.close(), member.close()]);
  });

  it('joining subscribes the open sockets; leaving stops delivery at once', async () => {
    const { person, roomId } = await personWithRoom('Host');
    const guest = await registerUser(server, `Guest${++counter}`);
    const sg = await TestSocket.connect(url, guest.token);
    await post(roomId, person.token, 'before join');
    expect(await sg.call('join_room', { room_id: roomId })).toMatchObject({ ok: true });
    expect(await sg.waitFor((f) => f.type === 'subscribed' && f.room_id === roomId)).toMatchObject({ last_seq: 1 });
    // The newcomer's own socket sees its member_join.
    expect(await sg.waitForEvent('member_join', (d) => d.member.name === guest.name)).toBeTruthy();
    await post(roomId, person.token, 'after join');
    await sg.waitForEvent('message_new', (d) => d.message.text_content === 'after join');
    expect(await sg.call('leave_room', { room_id: roomId })).toMatchObject({ ok: true });
    await sg.waitFor((f) => f.type === 'unsubscribed' && f.room_id === roomId);
    const seen = sg.frames.length;
    await post(roomId, person.token, 'after leave');
    const host = await TestSocket.connect(url, person.token);
    host.send({ type: 'subscribe', room_id: roomId, after_seq: 2 });
    await host.waitForEvent('message_new', (d) => d.message.text_content === 'after leave');
    expect(sg.frames.slice(seen)).toEqual([]);
    expect(sg.messageSeqs(roomId)).toEqual([2]);
    await Promise.all([sg.close(), host.close()]);
  });
});

describe('replay', () => {
  it('a client that reconnects with after_seq misses nothing and gets nothing twice while messages keep flowing', async () => {
    const { person, roomId } = await personWithRoom('Replay');
    let sent = 0;
    let flowing = true;
    const writer = (async () => {
      while (flowing) {
        await post(roomId, person.token, `m${++sent}`);
      }
    })();
    const first = await TestSocket.connect(url, person.token);
    await first.waitForEvent('message_new', (d) => d.message.seq >= 10);
    first.terminate();
    await first.closed;
    const seenBefore = first.messageSeqs(roomId);
    const lastSeen = Math.max(...seenBefore);
    // Messages go on while we are away.
    await eventually(() => sent >= lastSeen + 15, 10_000, 'more messages');
    const second = await TestSocket.connect(url, person.token);
    second.send({ type: 'subscribe', room_id: roomId, after_seq: lastSeen });
    const subscribed = await second.waitFor((f) => f.type === 'subscribed' && f.room_id === roomId);
    await eventually(() => sent >= lastSeen + 40, 10_000, 'messages after the resubscribe');
    flowing = false;
    await writer;
    await second.waitForEvent('message_new', (d) => d.message.seq === sent);
    const index = second.frames.indexOf(subscribed);
    const afterSeam = second.frames
      .slice(index + 1)
      .filter((f) => f.type === 'event' && f.event === 'message_new')
      .map((f) => (f as { data: { message: { seq: number } } }).data.message.seq);
    const expected = Array.from({ length: sent - lastSeen }, (_, i) => lastSeen + 1 + i);
    expect(afterSeam).toEqual(expected);
    // Together the two connections saw every message once, in order.
    expect([...seenBefore, ...afterSeam]).toEqual(Array.from({ length: sent }, (_, i) => i + 1));
    await second.close();
  });

  it('replays a long history in order without tripping the slow-consumer limit', async () => {
    const { person, roomId } = await personWithRoom('Long');
    const text = '长'.repeat(8000); // ~24 KB per frame
    for (let i = 0; i < 80; i += 10) {
      await Promise.all(Array.from({ length: 10 }, (_, j) => post(roomId, person.token, `${i + j} ${text}`)));
    }
    const socket = await TestSocket.connect(url, person.token);
    socket.send({ type: 'subscribe', room_id: roomId, after_seq: 0 });
    await socket.waitForEvent('message_new', (d) => d.message.seq === 80, 10_000);
    expect(socket.messageSeqs(roomId)).toEqual(Array.from({ length: 80 }, (_, i) => i + 1));
    await socket.close();
  });
});

describe('bad frames and limits', () => {
  it('answers bad frames with an error and keeps the socket open', async () => {
    const { person } = await personWithRoom();
    const socket = await TestSocket.connect(url, person.token);
    socket.send('{not json');
    socket.send({ type: 'dance' });
    socket.send({ type: 'subscribe' });
    socket.send({ type: 'call', id: 'c1', args: {} });
    socket.send([1, 2]);
    socket.send({ type: 'call', id: 'c2', tool: 'no_such_tool', args: {} });
    socket.send({ type: 'call', id: 'c3', tool: 'get_room', args: { room_id: 42 } });
    socket.send({ type: 'ping' });
    await socket.waitFor((f) => f.type === 'pong');
    const errors = socket.frames.filter((f) => f.type === 'error');
    expect(errors).toHaveLength(4);
    for (const e of errors) expect(e).toMatchObject({ error: { code: 'validation_error' } });
    expect(errors[0]!.error.message).toMatch(/JSON/);
    expect(errors[1]!.error.message).toMatch(/dance/);
    expect(errors[2]!.error.message).toMatch(/room_id/);
    const results = socket.frames.filter((f) => f.type === 'result');
    expect(results).toEqual([
      expect.objectContaining({ id: 'c1', ok: false, error: expect.objectContaining({ code: 'validation_error' }) }),
      expect.objectContaining({ id: 'c2', ok: false, error: expect.objectContaining({ code: 'unknown_tool' }) }),
      expect.objectContaining({ id: 'c3', ok: false, error: expect.objectContaining({ code: 'validation_error' }) }),
    ]);
    expect(await socket.call('list_rooms')).toMatchObject({ ok: true });
    await socket.close();
  });

  it('closes 1009 on a frame over MAX_FRAME_BYTES', async () => {
    const { person } = await personWithRoom();
    const socket = await TestSocket.connect(url, person.token);
    socket.send({ type: 'call', id: 'big', tool: 'list_rooms', args: { pad: 'x'.repeat(server.app.config.maxFrameBytes) } });
    expect((await socket.closed).code).toBe(1009);
  });

  it('refuses a foreign Origin with 403 naming ALLOWED_ORIGINS, accepts the allowed ones', async () => {
    await expect(TestSocket.open(url, { origin: 'http://evil.example' })).rejects.toMatchObject({
      status: 403,
      body: expect.stringContaining('ALLOWED_ORIGINS'),
    });
    const ok = await TestSocket.open(url, { origin: `http://127.0.0.1:${server.port}` });
    await ok.close();
    const noOrigin = await TestSocket.open(url);
    await noOrigin.close();
  });

  it('drops a consumer that stops reading while a fast one keeps receiving everything', async () => {
    const { person, roomId } = await personWithRoom('Slow');
    const fast = await TestSocket.connect(url, person.token);
    const slow = await TestSocket.connect(url, person.token);
    const hub = wsHubOf(server.app)!;
    const before = hub.stats().sockets;
    (slow.ws as unknown as { _socket: Socket })._socket.pause();
    const text = '慢'.repeat(30_000); // ~90 KB per frame
    const total = 120;
    for (let i = 0; i < total; i += 10) {
      await Promise.all(Array.from({ length: 10 }, (_, j) => post(roomId, person.token, `${i + j} ${text}`)));
    }
    await fast.waitForEvent('message_new', (d) => d.message.seq === total, 20_000);
    expect(fast.messageSeqs(roomId)).toEqual(Array.from({ length: total }, (_, i) => i + 1));
    await eventually(() => hub.stats().sockets === before - 1, 5000, 'the slow socket to be dropped');
    (slow.ws as unknown as { _socket: Socket })._socket.resume();
    expect((await slow.closed).code).toBe(1006);
    expect(slow.messageSeqs(roomId).length).toBeLessThan(total);
    await fast.close();
  });
});

describe('liveness and shutdown', () => {
  it('drops sockets that do not answer pings, answers application pings', async () => {
    const own = await startTestServer();
    try {
      const { token } = await registerUser(own, 'Sleeper');
      const hub = wsHubOf(own.app)!;
      hub.configure({ heartbeatMs: 100 });
      const awake = await TestSocket.connect(wsUrl(own.url), token);
      const asleep = await TestSocket.connect(wsUrl(own.url), token);
      (asleep.ws as unknown as { _socket: Socket })._socket.pause();
      await eventually(() => hub.stats().sockets === 1, 3000, 'the silent socket to be dropped');
      awake.send({ type: 'ping' });
      expect(await awake.waitFor((f) => f.type === 'pong')).toMatchObject({ type: 'pong' });
      await awake.close();
    } finally {
      await own.stop();
    }
  });

  it('closes every socket with 1001 when the server stops', async () => {
    const own = await startTestServer();
    const { token } = await registerUser(own, 'Leaver');
    const a = await TestSocket.connect(wsUrl(own.url), token);
    const b = await TestSocket.open(wsUrl(own.url));
    await own.stop();
    expect((await a.closed).code).toBe(1001);
    expect((await b.closed).code).toBe(1001);
  });
});
