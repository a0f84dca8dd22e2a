// Abuse limits: per-token and per-address rate limits, slowed password attempts.
import { afterEach, describe, expect, it } from 'vitest';
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
