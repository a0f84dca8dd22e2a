// Abuse limits: per-token and per-address rate limits, slowed password attempts.
import { afterEach, describe, expect, it } from 'vitest';
import { AppError } from '../../src/errors.js';
import { FailureDelay } from '../../src/limits/rate-limits.js';
import { connectMcp } from '../helpers/mcp.js';
import { registerUser, startTestServer, type TestServer } from '../helpers/server.js';
import { TestSocket, wsUrl } from '../helpers/ws.js';

let server: TestServer;
afterEach(async () => {
  await server?.stop();
});

describe('rate limits', () => {
  it('answers 429 rate_limited past the per-token limit, other tokens unaffected', async () => {
    server = await startTestServer({ rateLimitPerToken: 5, rateLimitPerAddress: 0 });
    const a = await registerUser(server, 'Busy');
    const b = await registerUser(server, 'Calm');
    const codes: number[] = [];
    for (let i = 0; i < 7; i++) codes.push((await server.call('list_rooms', {}, a.token)).status);
    expect(codes.slice(0, 5)).toEqual([200, 200, 200, 200, 200]);
    const limited = await server.call('list_rooms', {}, a.token);
    expect(limited.status).toBe(429);
    expect(limited.body.ok ? null : limited.body.error).toMatchObject({ code: 'rate_limited' });
    expect((await server.call('list_rooms', {}, b.token)).status).toBe(200);
  });

  it('limits anonymous calls per address', async () => {
    server = await startTestServer({ rateLimitPerToken: 0, rateLimitPerAddress: 3 });
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await server.call('register_agent', { name: `n${i}` })).status);
    expect(statuses).toEqual([200, 200, 200, 429]);
  });

  it('counts calls to unknown tools and with bad tokens against the address', async () => {
    server = await startTestServer({ rateLimitPerToken: 0, rateLimitPerAddress: 3 });
    const unknown = await server.call('no_such_tool', {});
    const badToken = await server.call('list_rooms', {}, 'not-a-real-token');
    const noToken = await server.call('list_rooms', {});
    expect([unknown.status, badToken.status, noToken.status]).toEqual([404, 401, 401]);
    const next = await server.call('register_agent', { name: 'Late' });
    expect(next.status).toBe(429);
    expect(next.body.ok ? null : next.body.error.code).toBe('rate_limited');
  });

  it('counts MCP calls with an unknown header token against the address', async () => {
    server = await startTestServer({ rateLimitPerToken: 0, rateLimitPerAddress: 3 });
    const mcp = await connectMcp(server.url, { token: 'act_not-a-real-token' });
    try {
      for (let i = 0; i < 3; i++) expect((await mcp.err('list_rooms')).code).toBe('unauthorized');
      expect((await mcp.err('list_rooms')).code).toBe('rate_limited');
    } finally {
      await mcp.close();
    }
  });

  it('answers an MCP call past the per-token limit with a rate_limited error result', async () => {
    server = await startTestServer({ rateLimitPerToken: 3, rateLimitPerAddress: 0 });
    const user = await registerUser(server, 'McpBusy');
    const mcp = await connectMcp(server.url, { token: user.token });
    try {
      for (let i = 0; i < 3; i++) await mcp.ok('list_rooms');
      const error = await mcp.err('list_rooms');
      expect(error.code).toBe('rate_limited');
      expect(error.details).toMatchObject({ retry_after_ms: expect.any(Number) });
      // The session lives on: another participant's calls are unaffected.
      const other = await registerUser(server, 'McpCalm');
      expect((await server.call('list_rooms', {}, other.token)).status).toBe(200);
    } finally {
      await mcp.close();
    }
  });
});

/** A socket that sends its auth frame as soon as it is open (the answer is not awaited here). */
async function openSocket(s: TestServer, token: string): Promise<TestSocket> {
  const socket = await TestSocket.open(wsUrl(s.url));
  socket.send({ type: 'auth', token });
  return socket;
}

describe('WebSocket limits', () => {
  it('caps open sockets per participant with close 1008', async () => {
    server = await startTestServer({ maxSocketsPerToken: 2 });
    const user = await registerUser(server, 'Sockets');
    const first = await openSocket(server, user.token);
    const second = await openSocket(server, user.token);
    await Promise.all([first.waitFor((f) => f.type === 'auth_ok'), second.waitFor((f) => f.type === 'auth_ok')]);
    expect([first.frames[0]!.type, second.frames[0]!.type]).toEqual(['auth_ok', 'auth_ok']);
    const third = await openSocket(server, user.token);
    expect((await third.closed).code).toBe(1008);
    await first.close();
    await second.close();
  });

  it('closes with 1008 a socket that keeps calling after rate_limited', async () => {
    server = await startTestServer({ rateLimitPerToken: 5, rateLimitPerAddress: 0 });
    const user = await registerUser(server, 'Flood');
    const socket = await openSocket(server, user.token);
    await socket.waitFor((f) => f.type === 'auth_ok');
    for (let i = 0; i < 40; i++) socket.send({ type: 'call', id: i, tool: 'list_rooms', args: {} });
    expect((await socket.closed).code).toBe(1008);
    const results = socket.frames.filter((f) => f.type === 'result');
    expect(results.filter((r) => r.ok).length).toBeLessThanOrEqual(5);
    expect(results.some((r) => !r.ok && r.error.code === 'rate_limited')).toBe(true);
  });

  it('counts subscribe frames like calls: rate_limited past the budget, then 1008 for a socket that keeps sending', async () => {
    server = await startTestServer({ rateLimitPerToken: 5, rateLimitPerAddress: 0 });
    const user = await registerUser(server, 'Resubscriber');
    const { room } = await server.ok('create_room', { room_name: 'Replayed' }, user.token);
    for (let i = 0; i < 3; i++) await server.ok('send_message', { room_id: room.room_id, text_content: `m${i}` }, user.token);
    const socket = await openSocket(server, user.token);
    await socket.waitFor((f) => f.type === 'auth_ok');
    // Each one would start a replay of the room's history.
    for (let i = 0; i < 40; i++) socket.send({ type: 'subscribe', room_id: room.room_id, after_seq: 0 });
    expect((await socket.closed).code).toBe(1008);
    const limited = socket.frames.filter((f) => f.type === 'error' && f.error.code === 'rate_limited');
    expect(limited.length).toBeGreaterThan(0);
    expect((limited[0] as { room_id?: string }).room_id).toBe(room.room_id);
    // At most the budget's subscribes were served (a replay each: three messages).
    expect(socket.frames.filter((f) => f.type === 'event' && f.event === 'message_new').length).toBeLessThanOrEqual(5 * 3);
  });
});


describe('password attempts', () => {
  it('slows attempts after three failures, doubling, and forgets on success', async () => {
    const waits: number[] = [];
    const delay = new FailureDelay(async (ms) => void waits.push(ms));
    for (let i = 0; i < 6; i++) {
      await delay.beforeAttempt('alice');
      delay.failed('alice');
    }
    expect(waits).toEqual([250, 500, 1000]);
    delay.succeeded('alice');
    await delay.beforeAttempt('alice');
    expect(waits).toHaveLength(3);
  });

  it('refuses an attempt that would wait while another for the same key is pending', async () => {
    const waits: number[] = [];
    const delay = new FailureDelay(async (ms) => void waits.push(ms));
    // Eight at once on a fresh key: the three free attempts run, the rest are refused.
    const outcomes = await Promise.allSettled(Array.from({ length: 8 }, () => delay.beforeAttempt('bob')));
    expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(3);
    const refused = outcomes.filter((o): o is PromiseRejectedResult => o.status === 'rejected').map((o) => o.reason);
    expect(refused).toHaveLength(5);
    for (const err of refused) expect(err).toMatchObject({ code: 'rate_limited', details: { retry_after_ms: 250 } });
    expect(refused[0]).toBeInstanceOf(AppError);
    for (let i = 0; i < 3; i++) delay.failed('bob');
    // One at a time the delays apply as before; other keys are not affected.
    await delay.beforeAttempt('bob');
    await expect(delay.beforeAttempt('bob')).rejects.toMatchObject({ code: 'rate_limited' });
    await delay.beforeAttempt('carol');
    delay.failed('bob');
    await delay.beforeAttempt('bob');
    expect(waits).toEqual([250, 500]);
  });

  it('stops counting a pending attempt that never reported', async () => {
    let now = 0;
    const delay = new FailureDelay(async () => undefined, 3, 8000, 60_000, () => now);
    for (let i = 0; i < 3; i++) {
      await delay.beforeAttempt('dave');
      delay.failed('dave');
    }
    await delay.beforeAttempt('dave'); // its caller never reports
    await expect(delay.beforeAttempt('dave')).rejects.toMatchObject({ code: 'rate_limited' });
    now += 60_000;
    await expect(delay.beforeAttempt('dave')).resolves.toBeUndefined();
  });

  it('refuses parallel wrong logins instead of checking them all without delay', async () => {
    server = await startTestServer();
    await registerUser(server, 'Para', 'right-one');
    const answers = await Promise.all(Array.from({ length: 8 }, () => server.call('login', { name: 'Para', password: 'nope' })));
    const codes = answers.map((a) => (a.body.ok ? 'ok' : a.body.error.code));
    const checked = codes.filter((c) => c === 'wrong_password').length;
    const refused = answers.filter((a) => a.status === 429 && !a.body.ok && a.body.error.code === 'rate_limited').length;
    expect(checked + refused).toBe(8);
    // Three free attempts, plus at most one that waited its 250 ms (if the first three had
    // already failed when it arrived); without the guard all eight are checked at once.
    expect(checked).toBeGreaterThanOrEqual(3);
    expect(checked).toBeLessThanOrEqual(4);
    // At least three failures were recorded: the next attempt waits before it is checked.
    const started = Date.now();
    expect((await server.call('login', { name: 'Para', password: 'right-one' })).status).toBe(200);
    expect(Date.now() - started).toBeGreaterThanOrEqual(240);
  });

  it('refuses wrong passwords with wrong_password over REST, then accepts the right one', async () => {
    server = await startTestServer();
    await registerUser(server, 'Pw', 'right-one');
    for (let i = 0; i < 3; i++) {
      expect((await server.call('login', { name: 'Pw', password: 'nope' })).status).toBe(403);
    }
    const started = Date.now();
    expect((await server.call('login', { name: 'Pw', password: 'right-one' })).status).toBe(200);
    expect(Date.now() - started).toBeGreaterThanOrEqual(240); // the fourth attempt waited
  });
});
