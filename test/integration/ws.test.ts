// The WebSocket hub against the real server: auth, events, isolation, replay, limits.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { wsHubOf } from '../../src/transports/ws.js';
import { registerAgent, registerUser, startTestServer, type TestServer } from '../helpers/server.js';
import { TestSocket, wsUrl } from '../helpers/ws.js';

let server: TestServer;
let url: string;

beforeAll(async () => {
  server = await startTestServer({ turnTimeoutMs: 60_000 });
  url = wsUrl(server.url);
});
afterAll(async () => {
  await server?.stop();
});

describe('auth', () => {
  it('answers auth_ok with the participant (no token hash) and its rooms', async () => {
    const alice = await registerUser(server, 'Alice');
    const room = await server.ok('create_room', { room_name: 'Auth room' }, alice.token);
    const socket = await TestSocket.open(url);
    const ok = await socket.auth(alice.token);
    expect(ok.participant).toEqual({ kind: 'user', id: alice.id, name: 'Alice', role: 'user' });
    expect(JSON.stringify(ok)).not.toMatch(/token/i);
    expect(ok.rooms).toEqual([{ room_id: room.room.room_id, last_seq: 0 }]);
    await socket.close();
  });
});
