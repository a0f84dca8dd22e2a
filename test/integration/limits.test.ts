// Abuse limits: per-token and per-address rate limits, slowed password attempts.
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { FailureDelay } from '../../src/limits/rate-limits.js';
import { registerUser, startTestServer, type TestServer } from '../helpers/server.js';

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
});

function openSocket(s: TestServer, token: string) {
  const ws = new WebSocket(`${s.url.replace('http', 'ws')}/ws`);
  const frames: any[] = [];
  const closed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)));
  ws.on('message', (data) => frames.push(JSON.parse(String(data))));
  ws.once('open', () => ws.send(JSON.stringify({ type: 'auth', token })));
  return { ws, frames, closed };
}

describe('WebSocket limits', () => {
  it('caps open sockets per participant with close 1008', async () => {
    server = await startTestServer({ maxSocketsPerToken: 2 });
    const user = await registerUser(server, 'Sockets');
    const first = openSocket(server, user.token);
    const second = openSocket(server, user.token);
    await until(() => first.frames.length > 0 && second.frames.length > 0);
    expect([first.frames[0].type, second.frames[0].type]).toEqual(['auth_ok', 'auth_ok']);
    const third = openSocket(server, user.token);
    expect(await third.closed).toBe(1008);
    first.ws.close();
    second.ws.close();
  });

  it('closes with 1008 a socket that keeps calling after rate_limited', async () => {
    server = await startTestServer({ rateLimitPerToken: 5, rateLimitPerAddress: 0 });
    const user = await registerUser(server, 'Flood');
    const socket = openSocket(server, user.token);
    await until(() => socket.frames.some((f) => f.type === 'auth_ok'));
    for (let i = 0; i < 40; i++) socket.ws.send(JSON.stringify({ type: 'call', id: i, tool: 'list_rooms', args: {} }));
    expect(await socket.closed).toBe(1008);
    const results = socket.frames.filter((f) => f.type === 'result');
    expect(results.filter((r) => r.ok).length).toBeLessThanOrEqual(5);
    expect(results.some((r) => !r.ok && r.error.code === 'rate_limited')).toBe(true);
  });
});

async function until(check: () => boolean, ms = 5000) {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

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
