// Rooms over the WebSocket against the real server: isolation and membership, subscriptions,
// and replay with after_seq. A suite function, run by test/integration/ws.test.ts on the file
// store and by test/postgres/behaviour.test.ts on PostgreSQL.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRoomWith, registerAgent, registerUser, roomWithNewMembers, startTestServer, type TestServer } from '../helpers/server.js';
import { eventually, TestSocket, wsUrl } from '../helpers/ws.js';

let server: TestServer;
let url: string;
let counter = 0;

/** Helpers on the server `get` returns; `next` numbers names so they stay unique on it. */
export function roomHelpers(get: () => TestServer, next: () => number) {
  return {
    /** A fresh person with a fresh room of their own (no agents: posts start no rounds). */
    async personWithRoom(prefix = 'P') {
      const n = next();
      const person = await registerUser(get(), `${prefix}${n}`);
      const { room } = await get().ok('create_room', { room_name: `Room ${n}` }, person.token);
      return { person, roomId: room.room_id as string };
    },
    /** A new person (`prefix` + a number) who joins the room. */
    async newMember(roomId: string, prefix: string) {
      const person = await registerUser(get(), `${prefix}${next()}`);
      await get().ok('join_room', { room_id: roomId }, person.token);
      return person;
    },
    post(roomId: string, token: string, text: string) {
      return get().ok('send_message', { room_id: roomId, text_content: text }, token);
    },
  };
}

const { personWithRoom, post } = roomHelpers(() => server, () => ++counter);

export function wsRoomSuites(): void {
  describe('rooms over the socket', () => {
    beforeAll(async () => {
      server = await startTestServer({ turnTimeoutMs: 60_000 });
      url = wsUrl(server.url);
    });
    afterAll(async () => {
      await server?.stop();
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

      it('a non-member receives nothing of a room where agents take turns, members join and messages change', async () => {
        const { room, members: [alice, ann, bob] } = await roomWithNewMembers(server, 'Busy round room', { BusyAlice: 'user', BusyAnn: 'agent', BusyBob: 'agent' });
        const roomId = room.room_id as string;
        const mallory = await registerUser(server, 'Mallory');
        const own = await server.ok('create_room', { room_name: 'Mallorys room' }, mallory.token);
        const sm = await TestSocket.connect(url, mallory.token);
        const sa = await TestSocket.connect(url, ann.token);
        const sb = await TestSocket.connect(url, bob.token);
        const su = await TestSocket.connect(url, alice.token);

        // Two rounds: Alice asks, Ann and Bob answer in turn, then the next round starts by itself.
        await post(roomId, alice.token, 'secret question');
        for (let round = 1; round <= 2; round++) {
          await sa.nthEvent('agent_turn', round, (d) => d.agent_name === 'BusyAnn');
          expect(await sa.call('send_message', { room_id: roomId, text_content: `secret Ann ${round}` })).toMatchObject({ ok: true });
          await sb.nthEvent('agent_turn', round, (d) => d.agent_name === 'BusyBob');
          expect(await sb.call('send_message', { room_id: roomId, text_content: `secret Bob ${round}` })).toMatchObject({ ok: true });
          await su.nthEvent('round_end', round);
        }
        await server.ok('set_room_status', { room_id: roomId, system_status: 'paused' }, alice.token);
        const carol = await registerUser(server, `BusyCarol${++counter}`);
        await server.ok('join_room', { room_id: roomId }, carol.token);
        const { message } = await post(roomId, carol.token, 'secret typo');
        await server.ok('edit_message', { message_id: message.message_id, text_content: 'secret fixed' }, carol.token);
        await su.waitForEvent('message_update');

        const seen = new Set(su.events(roomId).map((f) => f.event));
        for (const event of ['round_start', 'agent_turn', 'room_update', 'member_join', 'message_new', 'message_update', 'round_end']) {
          expect(seen).toContain(event);
        }
        // Mallory's socket works (her own room's events arrive) but carries nothing of the busy room.
        await post(own.room.room_id, mallory.token, 'my own words');
        await sm.waitForEvent('message_new');
        await sm.barrier();
        expect([...new Set(sm.events().map((f) => f.room_id))]).toEqual([own.room.room_id]);
        expect(JSON.stringify(sm.frames)).not.toContain(roomId);
        expect(JSON.stringify(sm.frames)).not.toContain('secret');
        await Promise.all([sm.close(), sa.close(), sb.close(), su.close()]);
      });

      it('joining subscribes the open sockets; leaving stops delivery at once', async () => {
        const { person, roomId } = await personWithRoom('Host');
        const guest = await registerUser(server, `Guest${++counter}`);
        const sg = await TestSocket.connect(url, guest.token);
        await post(roomId, person.token, 'before join');
        expect(await sg.call('join_room', { room_id: roomId })).toMatchObject({ ok: true });
        expect(await sg.waitFor((f) => f.type === 'subscribed' && f.room_id === roomId)).toMatchObject({ last_seq: 1 });
        // The newcomer's own socket sees its member_join.
        const joined = await sg.waitForEvent('member_join', (d) => d.member.name === guest.name);
        expect(joined).toMatchObject({ room_id: roomId, data: { member: { name: guest.name } } });
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

    describe('subscriptions', () => {
      it('unsubscribe stops the room; subscribe with after_seq replays what was missed, then live', async () => {
        const { person, roomId } = await personWithRoom('Unsub');
        const socket = await TestSocket.connect(url, person.token);
        await post(roomId, person.token, 'm1');
        await socket.waitForEvent('message_new', (d) => d.message.seq === 1);
        socket.send({ type: 'unsubscribe', room_id: roomId });
        expect(await socket.waitFor((f) => f.type === 'unsubscribed')).toEqual({ type: 'unsubscribed', room_id: roomId });
        const away = socket.mark();
        await post(roomId, person.token, 'm2');
        await post(roomId, person.token, 'm3');
        await socket.barrier();
        expect(socket.since(away).filter((f) => f.type !== 'pong')).toEqual([]);
        socket.send({ type: 'subscribe', room_id: roomId, after_seq: 1 });
        expect(await socket.waitFor((f) => f.type === 'subscribed')).toEqual({ type: 'subscribed', room_id: roomId, last_seq: 3, after_seq: 1 });
        await socket.waitForEvent('message_new', (d) => d.message.seq === 3);
        await post(roomId, person.token, 'm4');
        await socket.waitForEvent('message_new', (d) => d.message.seq === 4);
        expect(socket.messageSeqs(roomId)).toEqual([1, 2, 3, 4]);
        await socket.close();
      });

      it('unsubscribe is idempotent and never refused: a room not subscribed (foreign, unknown) is answered unsubscribed, and the socket stays', async () => {
        const { person, roomId } = await personWithRoom('Idem');
        const other = await personWithRoom('Elsewhere');
        const socket = await TestSocket.connect(url, person.token);
        for (const target of [other.roomId, 'no-such-room', roomId, roomId]) {
          const at = socket.mark();
          socket.send({ type: 'unsubscribe', room_id: target });
          expect(await socket.waitFor((f) => f.type === 'unsubscribed' && socket.frames.indexOf(f) >= at)).toEqual({ type: 'unsubscribed', room_id: target });
        }
        // The foreign room told nothing: its events never reach this socket.
        await post(other.roomId, other.person.token, 'not for you');
        await socket.barrier();
        expect(socket.messageSeqs(other.roomId)).toEqual([]);
        await socket.close();
      });

      it('subscribe without after_seq starts live from now, replaying nothing', async () => {
        const { person, roomId } = await personWithRoom('Live');
        const socket = await TestSocket.connect(url, person.token);
        socket.send({ type: 'unsubscribe', room_id: roomId });
        await socket.waitFor((f) => f.type === 'unsubscribed');
        await post(roomId, person.token, 'missed');
        socket.send({ type: 'subscribe', room_id: roomId });
        expect(await socket.waitFor((f) => f.type === 'subscribed')).toEqual({ type: 'subscribed', room_id: roomId, last_seq: 1 });
        await post(roomId, person.token, 'live');
        await socket.waitForEvent('message_new', (d) => d.message.seq === 2);
        await socket.barrier();
        expect(socket.messageSeqs(roomId)).toEqual([2]);
        await socket.close();
      });

      it('a subscribe whose replay fails is answered with an error for the room; the socket lives on', async () => {
        const { person, roomId } = await personWithRoom('Broken');
        await post(roomId, person.token, 'm1');
        const socket = await TestSocket.connect(url, person.token);
        const store = server.app.store;
        const readMessages = store.readMessages;
        store.readMessages = () => Promise.reject(new Error('disk on fire'));
        try {
          socket.send({ type: 'subscribe', room_id: roomId, after_seq: 0 });
          const error = await socket.waitFor((f) => f.type === 'error');
          expect(error).toMatchObject({ type: 'error', room_id: roomId, error: { code: 'internal_error' } });
          expect(JSON.stringify(error)).not.toContain('disk on fire');
        } finally {
          store.readMessages = readMessages;
        }
        // The broken subscription was dropped; subscribing again works.
        socket.send({ type: 'subscribe', room_id: roomId, after_seq: 0 });
        await socket.waitForEvent('message_new', (d) => d.message.seq === 1);
        expect(await socket.call('list_rooms')).toMatchObject({ ok: true });
        await socket.close();
      });
    });

    describe('replay', () => {
      it('a client that reconnects with after_seq misses nothing and gets nothing twice while messages keep flowing', async () => {
        const { person, roomId } = await personWithRoom('Replay');
        // Connected before the first message, so the two connections together must see all of them.
        const first = await TestSocket.connect(url, person.token);
        let sent = 0;
        let flowing = true;
        const writer = (async () => {
          while (flowing) {
            await post(roomId, person.token, `m${++sent}`);
          }
        })();
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
  });
}
