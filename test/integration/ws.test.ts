// The WebSocket hub against the real server: auth, events, limits; isolation, subscriptions and
// replay are in test/suites/ws-rooms.ts (shared with the PostgreSQL run).
import type { Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createRoomWith, registerAgent, registerUser, roomWithNewMembers, startTestServer, type TestServer } from '../helpers/server.js';
import { eventually, TestSocket, wsUrl } from '../helpers/ws.js';
import type { AuthOkFrame } from '../../src/protocol/frames.js';
import { MemoryStore } from '../../src/storage/memory-store.js';
import { roomHelpers, wsRoomSuites } from '../suites/ws-rooms.js';

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
const { newMember, personWithRoom, post } = roomHelpers(() => server, () => ++counter);

/**
 * A server whose store holds `roomsOf` at a gate: a socket's auth is between `auth` and
 * `auth_ok` (its rooms being read) for as long as the test wants.
 */
async function gatedServer() {
  let release = (): void => undefined;
  let entered = (): void => undefined;
  class GatedStore extends MemoryStore {
    gate: Promise<void> | undefined;
    override async roomsOf(participantId: string): Promise<string[]> {
      const rooms = await super.roomsOf(participantId);
      if (this.gate) {
        entered();
        await this.gate;
      }
      return rooms;
    }
  }
  const store = new GatedStore();
  const gatedServer = await startTestServer({ turnTimeoutMs: 60_000 }, { store });
  return {
    server: gatedServer,
    /** Opens a socket and sends auth; resolves once its rooms are being read (held at the gate). */
    async authAtGate(token: string): Promise<TestSocket> {
      const atGate = new Promise<void>((resolve) => (entered = resolve));
      store.gate = new Promise<void>((resolve) => (release = resolve));
      const socket = await TestSocket.open(wsUrl(gatedServer.url));
      socket.send({ type: 'auth', token });
      await atGate;
      store.gate = undefined;
      return socket;
    },
    release: () => release(),
    async stop() {
      release();
      await gatedServer.stop();
    },
  };
}

describe('auth', () => {
  it('answers auth_ok with the participant (no token hash) and its rooms, already subscribed', async () => {
    const { person, roomId } = await personWithRoom();
    const socket = await TestSocket.open(url);
    const ok = await socket.auth(person.token);
    expect(ok.participant).toEqual({ kind: 'user', id: person.id, user_id: person.id, name: person.name, role: 'user' });
    expect(JSON.stringify(ok)).not.toMatch(/token/i);
    expect(ok.rooms).toEqual([{ room_id: roomId, last_seq: 0 }]);
    expect(Date.parse(ok.server_time)).not.toBeNaN();
    // No subscribe needed: the first message arrives.
    await post(roomId, person.token, 'first');
    const frame = await socket.waitForEvent('message_new');
    expect(frame.data.message).toMatchObject({ seq: 1, text_content: 'first', sender: person.name });
    await socket.close();
  });

  it('auth_ok comes first: a room joined and a message posted while the socket subscribes follow it, the room listed in auth_ok', async () => {
    const gated = await gatedServer();
    try {
      const person = await registerUser(gated.server, 'Early');
      const first = (await gated.server.ok<{ room: { room_id: string } }>('create_room', { room_name: 'First' }, person.token)).room.room_id;
      const socket = await gated.authAtGate(person.token);
      const second = (await gated.server.ok<{ room: { room_id: string } }>('create_room', { room_name: 'Second' }, person.token)).room.room_id;
      await gated.server.ok('send_message', { room_id: second, text_content: 'posted during auth' }, person.token);
      gated.release();
      await socket.waitForEvent('message_new', (d) => d.message.text_content === 'posted during auth');
      expect(socket.frames[0]?.type).toBe('auth_ok');
      const ok = socket.frames[0] as AuthOkFrame;
      expect(ok.rooms.map((r) => r.room_id).sort()).toEqual([first, second].sort());
      expect(socket.frames.some((f) => f.type === 'subscribed')).toBe(false);
      expect(socket.frames.findIndex((f) => f.type === 'event')).toBeGreaterThan(0);
      socket.ws.close();
    } finally {
      await gated.stop();
    }
  });

  it('frames sent right behind auth are handled after auth_ok, in order: the replay they start is in seq order', async () => {
    const gated = await gatedServer();
    try {
      const person = await registerUser(gated.server, 'Hasty');
      const roomId = (await gated.server.ok<{ room: { room_id: string } }>('create_room', { room_name: 'Pipelined' }, person.token)).room.room_id;
      for (let i = 1; i <= 5; i++) await gated.server.ok('send_message', { room_id: roomId, text_content: `old ${i}` }, person.token);
      const socket = await gated.authAtGate(person.token);
      // Sent behind the auth, while it is still being answered.
      socket.send({ type: 'ping' });
      socket.send({ type: 'subscribe', room_id: roomId, after_seq: 0 });
      socket.send({ type: 'call', id: 7, tool: 'get_room', args: { room_id: roomId } });
      await gated.server.ok('send_message', { room_id: roomId, text_content: 'new 6' }, person.token);
      gated.release();
      await socket.waitFor((f) => f.type === 'result');
      await socket.waitForEvent('message_new', (d) => d.message.seq === 6);
      expect(socket.frames[0]?.type).toBe('auth_ok');
      const types = socket.frames.map((f) => f.type);
      expect(types.indexOf('pong')).toBeGreaterThan(0);
      expect(types.indexOf('pong')).toBeLessThan(types.indexOf('subscribed'));
      const seqs = socket.events().filter((e) => e.event === 'message_new').map((e) => e.data.message.seq as number);
      expect(seqs).toEqual([1, 2, 3, 4, 5, 6]);
      socket.ws.close();
    } finally {
      await gated.stop();
    }
  });

  it('more than 64 frames behind an unanswered auth close the socket with 1008', async () => {
    const gated = await gatedServer();
    try {
      const person = await registerUser(gated.server, 'Flood');
      const socket = await gated.authAtGate(person.token);
      for (let i = 0; i < 65; i++) socket.send({ type: 'ping' });
      expect((await socket.closed).code).toBe(1008);
    } finally {
      await gated.stop();
    }
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
    const own = await startTestServer({}, { ws: { authTimeoutMs: 200 } });
    try {
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
    const { room, members: [alice, ann, bob] } = await roomWithNewMembers(server, 'Round room', { RoundAlice: 'user', RoundAnn: 'agent', RoundBob: 'agent' });
    const roomId = room.room_id as string;
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

  it('sends agent_turn again to a fresh socket of the turn holder, and again when it subscribes', async () => {
    const { room, members: [alice, ann] } = await roomWithNewMembers(server, 'Holder room', { HolderAlice: 'user', HolderAnn: 'agent' });
    const sa = await TestSocket.connect(url, ann.token);
    await post(room.room_id, alice.token, 'your turn, Ann');
    const first = await sa.waitForEvent('agent_turn');
    // A fresh socket (an agent restarted mid-turn) gets its turn right after auth_ok, unasked.
    const again = await TestSocket.connect(url, ann.token);
    const onAuth = await again.waitForEvent('agent_turn');
    expect(onAuth.data).toEqual(first.data);
    expect(again.frames.map((f) => f.type)).toEqual(['auth_ok', 'event']);
    // A subscribe with after_seq replays first, then sends the turn once more.
    const from = again.mark();
    again.send({ type: 'subscribe', room_id: room.room_id, after_seq: 0 });
    const replayed = await again.waitForEventFrom(from, 'agent_turn');
    expect(replayed.data).toEqual(first.data);
    expect(again.since(from).map((f) => (f.type === 'event' ? f.event : f.type))).toEqual(['subscribed', 'message_new', 'agent_turn']);
    // Another member's fresh socket gets no turn of Ann's.
    const su = await TestSocket.connect(url, alice.token);
    await su.barrier();
    expect(su.events()).toEqual([]);
    await server.ok('set_room_status', { room_id: room.room_id, system_status: 'paused' }, alice.token);
    await Promise.all([sa.close(), again.close(), su.close()]);
  });

  it('sends agent_turn again with a later deadline after send_message with end_turn: false', async () => {
    const { room, members: [alice, ann] } = await roomWithNewMembers(server, 'Keep room', { KeepAlice: 'user', KeepAnn: 'agent' });
    const roomId = room.room_id as string;
    const sa = await TestSocket.connect(url, ann.token);
    await post(roomId, alice.token, 'tell me two things');
    const first = await sa.waitForEvent('agent_turn');
    const from = sa.mark();
    expect(await sa.call('send_message', { room_id: roomId, text_content: 'one', end_turn: false })).toMatchObject({ ok: true });
    const second = await sa.waitForEventFrom(from, 'agent_turn');
    expect(second.data).toMatchObject({ round_id: first.data.round_id, agent_name: 'KeepAnn', timeout_ms: 60_000 });
    expect(Date.parse(second.data.deadline)).toBeGreaterThan(Date.parse(first.data.deadline));
    // Still Ann's turn: the second message is accepted and ends it.
    expect(await sa.call('send_message', { room_id: roomId, text_content: 'two' })).toMatchObject({ ok: true });
    await server.ok('set_room_status', { room_id: roomId, system_status: 'paused' }, alice.token);
    await sa.close();
  });
});

wsRoomSuites();

describe('events over the socket', () => {
  it('message_update for edit_message and delete_message reaches the other members', async () => {
    const { person, roomId } = await personWithRoom('Edit');
    const other = await newMember(roomId, 'Reader');
    const so = await TestSocket.connect(url, other.token);
    const { message } = await post(roomId, person.token, 'draft');
    await server.ok('edit_message', { message_id: message.message_id, text_content: 'final' }, person.token);
    const edited = await so.waitForEvent('message_update');
    expect(edited.data.message).toMatchObject({ message_id: message.message_id, seq: 1, text_content: 'final' });
    await server.ok('delete_message', { message_id: message.message_id }, person.token);
    const deleted = await so.nthEvent('message_update', 2);
    expect(deleted.data.message).toMatchObject({ message_id: message.message_id, seq: 1, text_content: '', deleted: true });
    await so.close();
  });

  it('member_leave reaches the remaining members when someone leaves', async () => {
    const { person, roomId } = await personWithRoom('Stay');
    const leaver = await newMember(roomId, 'Leaver');
    const sp = await TestSocket.connect(url, person.token);
    await server.ok('leave_room', { room_id: roomId }, leaver.token);
    const left = await sp.waitForEvent('member_leave');
    expect(left.room_id).toBe(roomId);
    expect(left.data.member).toMatchObject({ name: leaver.name, participant_id: leaver.id });
    await sp.close();
  });

  it('a removed member gets unsubscribed and nothing more of the room; the others see member_leave', async () => {
    const { person, roomId } = await personWithRoom('Admin');
    const removed = await newMember(roomId, 'Removed');
    const sr = await TestSocket.connect(url, removed.token);
    const sp = await TestSocket.connect(url, person.token);
    await post(roomId, person.token, 'before removal');
    await sr.waitForEvent('message_new');
    await server.ok('remove_member', { room_id: roomId, name: removed.name }, person.token);
    await sr.waitFor((f) => f.type === 'unsubscribed' && f.room_id === roomId);
    const gone = sr.mark();
    expect((await sp.waitForEvent('member_leave')).data.member).toMatchObject({ name: removed.name });
    await post(roomId, person.token, 'after removal');
    await server.ok('set_announcement', { room_id: roomId, user_announcement: 'secret plans' }, person.token);
    await sp.waitForEvent('room_update', (d) => d.room.announcement.user_announcement === 'secret plans');
    sr.send({ type: 'subscribe', room_id: roomId, after_seq: 0 });
    expect(await sr.waitFor((f) => f.type === 'error')).toMatchObject({ room_id: roomId, error: { code: 'not_a_member' } });
    // A string that cannot be a room id names no room, as for the tools.
    sr.send({ type: 'subscribe', room_id: 'Not_A_Room' });
    expect(await sr.waitFor((f) => f.type === 'error' && f.error?.code !== 'not_a_member')).toMatchObject({ error: { code: 'room_not_found' } });
    await sr.barrier();
    expect(sr.since(gone).filter((f) => f.type === 'event')).toEqual([]);
    expect(JSON.stringify(sr.since(gone))).not.toMatch(/after removal|secret plans/);
    await Promise.all([sr.close(), sp.close()]);
  });

  it('serialises each event once, however many sockets receive it', async () => {
    const { person, roomId } = await personWithRoom('Fan');
    const readers = await Promise.all(Array.from({ length: 5 }, () => registerUser(server, `Fan${++counter}`)));
    for (const reader of readers) await server.ok('join_room', { room_id: roomId }, reader.token);
    const sockets = await Promise.all([person, ...readers].map((p) => TestSocket.connect(url, p.token)));
    const text = `fan-out-${counter}-once`;
    // The server runs in this process: count the JSON encodings of the message_new event.
    const stringify = vi.spyOn(JSON, 'stringify');
    try {
      await post(roomId, person.token, text);
      for (const socket of sockets) {
        expect((await socket.waitForEvent('message_new', (d) => d.message.text_content === text)).room_id).toBe(roomId);
      }
      const encodings = stringify.mock.results.filter(
        (r) => r.type === 'return' && typeof r.value === 'string' && r.value.includes('"event":"message_new"') && r.value.includes(text),
      );
      expect(sockets.length).toBe(6);
      expect(encodings).toHaveLength(1);
    } finally {
      stringify.mockRestore();
      await Promise.all(sockets.map((socket) => socket.close()));
    }
  });

  it('client_msg_id stays with the sender: broadcast message_new frames do not carry it', async () => {
    const { person, roomId } = await personWithRoom('Idem');
    const other = await newMember(roomId, 'Watcher');
    const sp = await TestSocket.connect(url, person.token);
    const so = await TestSocket.connect(url, other.token);
    const clientMsgId = 'cmid-7f3a9c-unique';
    expect(await sp.call('send_message', { room_id: roomId, text_content: 'once', client_msg_id: clientMsgId })).toMatchObject({ ok: true });
    for (const socket of [sp, so]) {
      const frame = await socket.waitForEvent('message_new');
      expect(frame.data.message.text_content).toBe('once');
      expect(frame.data.message).not.toHaveProperty('client_msg_id');
      expect(JSON.stringify(frame)).not.toContain(clientMsgId);
    }
    await Promise.all([sp.close(), so.close()]);
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

  it('accepts no per-message compression even when the client offers it', async () => {
    const socket = await TestSocket.open(url, { perMessageDeflate: true });
    expect(socket.ws.extensions).toBe('');
    await socket.close();
  });

  it('refuses a foreign Origin with 403 naming ALLOWED_ORIGINS, accepts the allowed ones', async () => {
    await expect(TestSocket.open(url, { origin: 'http://evil.example' })).rejects.toMatchObject({
      status: 403,
      body: expect.stringContaining('ALLOWED_ORIGINS'),
    });
    // The defaults let the page work at both http://127.0.0.1:PORT and http://localhost:PORT.
    for (const origin of [`http://127.0.0.1:${server.port}`, `http://localhost:${server.port}`]) {
      const ok = await TestSocket.open(url, { origin });
      await ok.close();
    }
    const noOrigin = await TestSocket.open(url);
    await noOrigin.close();
  });

  it('does not take a burst of frames written in one tick for a slow consumer', async () => {
    const own = await startTestServer({}, { ws: { maxBufferedBytes: 100_000 } });
    try {
      const person = await registerUser(own, 'Burster');
      const { room } = await own.ok('create_room', { room_name: 'Burst' }, person.token);
      const roomId = room.room_id as string;
      const reader = await TestSocket.connect(wsUrl(own.url), person.token);
      const before = own.wsStats().sockets;
      // Four ~45 KB events published in one tick, as a group commit publishes its messages:
      // 180 KB wait behind the socket's cork, more than the limit, yet the reader keeps up.
      const big = '涌'.repeat(15_000);
      for (let i = 0; i < 4; i++) {
        const announcement = { ...room.announcement, user_announcement: `${i} ${big}` };
        own.app.bus.publish({ event: 'room_update', room_id: roomId, data: { room: { ...room, announcement } } });
      }
      const last = await reader.waitForEvent('room_update', (d) => d.room.announcement.user_announcement.startsWith('3 '));
      expect(last.data.room.announcement.user_announcement).toHaveLength(15_002);
      expect(own.wsStats().sockets).toBe(before);
      await reader.barrier();
      await reader.close();
    } finally {
      await own.stop();
    }
  });

  it('drops a consumer that stops reading while a fast one keeps receiving everything', async () => {
    const { person, roomId } = await personWithRoom('Slow');
    const fast = await TestSocket.connect(url, person.token);
    const slow = await TestSocket.connect(url, person.token);
    const before = server.wsStats().sockets;
    (slow.ws as unknown as { _socket: Socket })._socket.pause();
    const text = '慢'.repeat(30_000); // ~90 KB per frame
    const total = 120;
    for (let i = 0; i < total; i += 10) {
      await Promise.all(Array.from({ length: 10 }, (_, j) => post(roomId, person.token, `${i + j} ${text}`)));
    }
    await fast.waitForEvent('message_new', (d) => d.message.seq === total, 20_000);
    expect(fast.messageSeqs(roomId)).toEqual(Array.from({ length: total }, (_, i) => i + 1));
    await eventually(() => server.wsStats().sockets === before - 1, 5000, 'the slow socket to be dropped');
    (slow.ws as unknown as { _socket: Socket })._socket.resume();
    expect((await slow.closed).code).toBe(1006);
    expect(slow.messageSeqs(roomId).length).toBeLessThan(total);
    await fast.close();
  });
});

describe('presence over the socket', () => {
  const WINDOW_MS = 400;
  const GRACE_MS = 250;

  /** A server with a short presence window, a watching person and an agent in one room. */
  async function presenceRoom(heartbeatMs?: number) {
    const own = await startTestServer(
      {},
      { presenceWindowMs: WINDOW_MS, socketGraceMs: GRACE_MS, ...(heartbeatMs !== undefined ? { ws: { heartbeatMs } } : {}) },
    );
    const person = await registerUser(own, 'Watcher');
    const agent = await registerAgent(own, 'Wanderer');
    const { room } = await own.ok('create_room', { room_name: 'Presence room' }, person.token);
    await own.ok('join_room', { room_id: room.room_id }, agent.token);
    const watcher = await TestSocket.connect(wsUrl(own.url), person.token);
    const statuses = () =>
      watcher.events(room.room_id).filter((f) => f.event === 'member_status_change' && f.data.member.name === 'Wanderer');
    return { own, agent, roomId: room.room_id as string, watcher, statuses };
  }

  it('members see an agent go offline once its window passed without a socket, and online again, once per change', async () => {
    const { own, agent, roomId, watcher, statuses } = await presenceRoom();
    try {
      // Online from its REST calls; no socket: offline once the window has passed.
      const offline = await watcher.waitForEvent('member_status_change', (d) => d.member.name === 'Wanderer');
      expect(offline.room_id).toBe(roomId);
      expect(Object.keys(offline.data.member).sort()).toEqual(['activity', 'last_active', 'name', 'note', 'status']);
      expect(offline.data.member).toMatchObject({ name: 'Wanderer', status: 'offline' });
      expect(Date.parse(offline.data.member.last_active)).not.toBeNaN();

      const sa = await TestSocket.connect(wsUrl(own.url), agent.token);
      const online = await watcher.nthEvent('member_status_change', 2, (d) => d.member.name === 'Wanderer');
      expect(online.data.member).toMatchObject({ name: 'Wanderer', status: 'online' });
      expect(Date.parse(online.data.member.last_active)).toBeGreaterThan(Date.parse(offline.data.member.last_active));

      // A closed socket keeps the agent online for the short grace (SPEC v2 §6: 15 s), then it
      // goes offline, sooner than the 90 s window of a call.
      const closedAt = Date.now();
      await sa.close();
      await watcher.nthEvent('member_status_change', 3, (d) => d.member.name === 'Wanderer');
      expect(Date.now() - closedAt).toBeGreaterThanOrEqual(GRACE_MS - 50);
      await watcher.barrier();
      expect(statuses().map((f) => f.data.member.status)).toEqual(['offline', 'online', 'offline']);
      await watcher.close();
    } finally {
      await own.stop();
    }
  });

  it('a socket that never answers pings is terminated, and after the window its member goes offline', async () => {
    const { own, agent, watcher, statuses } = await presenceRoom(100);
    try {
      const hub = { stats: () => own.wsStats() };
      const silent = await TestSocket.connect(wsUrl(own.url), agent.token, { autoPong: false });
      expect(hub.stats().authenticated).toBe(2);
      const mark = watcher.mark();
      // Two heartbeats: the first ping goes unanswered, the second finds the socket silent.
      expect((await silent.closed).code).toBe(1006);
      await eventually(() => hub.stats().sockets === 1, 2000, 'the hub to forget the socket');
      const offline = await watcher.waitForEventFrom(mark, 'member_status_change', (d) => d.member.name === 'Wanderer');
      expect(offline.data.member.status).toBe('offline');
      // The watcher answers pings by itself and stays connected all along.
      expect(hub.stats().authenticated).toBe(1);
      await watcher.barrier();
      expect(statuses().at(-1)!.data.member.status).toBe('offline');
      await watcher.close();
    } finally {
      await own.stop();
    }
  });
});

describe('liveness and shutdown', () => {
  it('drops sockets that do not answer pings, answers application pings', async () => {
    const own = await startTestServer({}, { ws: { heartbeatMs: 100 } });
    try {
      const { token } = await registerUser(own, 'Sleeper');
      const hub = { stats: () => own.wsStats() };
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
