// Fuzzing every tool over REST and raw WebSocket frames: no crash, every answer a structured
// error with a contract code (never internal_error), and the server still healthy after.
import http from 'node:http';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { z } from 'zod';
import { ERROR_STATUS } from '../../src/errors.js';
import { registerAgent, registerUser, startTestServer, type TestServer } from '../helpers/server.js';

const REST_CASES = Number(process.env.FUZZ_CASES ?? 10_000);
const WS_CASES = Number(process.env.FUZZ_CASES ?? 10_000);
// Calls that would end the fuzzing identity or block for seconds are fuzzed separately below.
const SKIP = new Set(['rotate_token', 'wait_for_turn']);

let server: TestServer;
let token: string;
let roomId: string;
let messageId: string;

beforeAll(async () => {
  server = await startTestServer({ rateLimitPerToken: 0, rateLimitPerAddress: 0, turnTimeoutMs: 60_000 });
  const owner = await registerUser(server, 'Fuzzer', 'fuzz-password');
  token = owner.token;
  roomId = (await server.ok('create_room', { room_name: 'Fuzz' }, token)).room.room_id;
  const agent = await registerAgent(server, 'FuzzAgent');
  await server.ok('join_room', { room_id: roomId }, agent.token);
  messageId = (await server.ok('send_message', { room_id: roomId, text_content: 'seed' }, token)).message.message_id;
});
afterAll(async () => {
  await server.stop();
});

/** Values that are sometimes right: real ids, names, enums, plus anything at all. */
function valueArb(): fc.Arbitrary<unknown> {
  return fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(roomId, messageId, 'FuzzAgent', 'Fuzzer', 'default', 'host', 'paused', 'active', 'markdown', 'pdf') },
    { weight: 2, arbitrary: fc.string({ maxLength: 40 }) },
    { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 20 }) },
    { weight: 1, arbitrary: fc.integer() },
    { weight: 1, arbitrary: fc.double() },
    { weight: 1, arbitrary: fc.boolean() },
    { weight: 1, arbitrary: fc.constant(null) },
    { weight: 1, arbitrary: fc.array(fc.string({ maxLength: 10 }), { maxLength: 4 }) },
    { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }) },
  );
}

function argsArb(schema: z.ZodType): fc.Arbitrary<unknown> {
  const keys = schema instanceof z.ZodObject ? Object.keys(schema.shape) : [];
  const shaped =
    keys.length > 0
      ? fc.record(Object.fromEntries(keys.map((k) => [k, valueArb()])), { requiredKeys: [] })
      : fc.constant({});
  return fc.oneof(
    { weight: 6, arbitrary: shaped },
    { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
    { weight: 1, arbitrary: fc.dictionary(fc.string({ maxLength: 8 }), valueArb(), { maxKeys: 4 }) },
  );
}

function expectStructured(status: number, body: any, label: string) {
  expect(body, label).toBeTypeOf('object');
  expect(typeof body.ok, label).toBe('boolean');
  if (body.ok) {
    expect(status, label).toBe(200);
    return;
  }
  const code = body.error?.code as keyof typeof ERROR_STATUS;
  expect(Object.keys(ERROR_STATUS), label).toContain(code);
  expect(code, `${label} → internal_error`).not.toBe('internal_error');
  expect(status, label).toBe(ERROR_STATUS[code]);
  expect(typeof body.error.message, label).toBe('string');
}

async function inBatches<T>(items: T[], size: number, run: (item: T) => Promise<void>) {
  for (let i = 0; i < items.length; i += size) await Promise.all(items.slice(i, i + size).map(run));
}

describe('fuzzing', () => {
  it(`answers ${REST_CASES} random tool calls over REST with structured results`, async () => {
    const tools = server.app.registry.list().filter((t) => !SKIP.has(t.name));
    const cases = fc.sample(
      fc.tuple(fc.constantFrom(...tools), fc.boolean()).chain(([tool, withToken]) =>
        argsArb(tool.input).map((args) => ({ tool: tool.name, args, withToken })),
      ),
      { numRuns: REST_CASES, seed: 42 },
    );
    await inBatches(cases, 16, async ({ tool, args, withToken }) => {
      const answer = await server.call(tool, args, withToken ? token : null);
      expectStructured(answer.status, answer.body, `${tool} ${JSON.stringify(args).slice(0, 200)}`);
    });
    // The blocking tool with short waits, and raw bodies that are not JSON objects.
    for (const timeout_s of [0, 0.01, -1, 51, 'x']) {
      const answer = await server.call('wait_for_turn', { room_id: roomId, timeout_s }, token);
      expectStructured(answer.status, answer.body, `wait_for_turn ${timeout_s}`);
    }
    for (const raw of ['[]', '"text"', '12', 'null', '{"a":', '\u0000', '{"room_id":{"$gt":""}}']) {
      const res = await fetch(`${server.url}/api/v1/tools/get_room`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body: raw,
      });
      expectStructured(res.status, await res.json(), `raw ${raw}`);
    }
    expect((await fetch(`${server.url}/api/v1/health`)).status).toBe(200);
  }, 300_000);

  it(`answers ${WS_CASES} random WebSocket frames with structured frames and keeps the socket`, async () => {
    const ws = new WebSocket(`${server.url.replace('http', 'ws')}/ws`);
    const frames: any[] = [];
    ws.on('message', (data) => frames.push(JSON.parse(String(data))));
    await new Promise((r) => ws.once('open', r));
    ws.send(JSON.stringify({ type: 'auth', token }));
    await until(() => frames.some((f) => f.type === 'auth_ok'));

    const frameArb = fc.oneof(
      { weight: 2, arbitrary: fc.string({ maxLength: 60 }) },
      { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)) },
      {
        weight: 4,
        arbitrary: fc
          .record(
            {
              type: fc.constantFrom('subscribe', 'unsubscribe', 'call', 'ping', 'pong', 'event', 'nope'),
              id: valueArb(),
              room_id: valueArb(),
              after_seq: valueArb(),
              tool: fc.constantFrom('get_room', 'get_context', 'send_message', 'list_rooms', 'nope', 'rotate_token_x'),
              args: fc.oneof(fc.constant({ room_id: roomId }), fc.dictionary(fc.string({ maxLength: 8 }), valueArb(), { maxKeys: 3 }), valueArb()),
            },
            { requiredKeys: ['type'] },
          )
          .map((v) => JSON.stringify(v)),
      },
    );
    const cases = fc.sample(frameArb, { numRuns: WS_CASES, seed: 7 });
    for (const frame of cases) ws.send(frame);
    ws.send(JSON.stringify({ type: 'ping' }));
    const pongs = () => frames.filter((f) => f.type === 'pong').length;
    const expectedPongs = cases.filter((c) => /^\{"type":"ping"/.test(c)).length + 1;
    await until(() => pongs() >= expectedPongs, 60_000);
    expect(ws.readyState).toBe(WebSocket.OPEN);
    for (const f of frames) {
      expect(['auth_ok', 'subscribed', 'unsubscribed', 'result', 'pong', 'error', 'event']).toContain(f.type);
      const error = f.type === 'error' ? f.error : f.type === 'result' && !f.ok ? f.error : null;
      if (error) {
        expect(Object.keys(ERROR_STATUS)).toContain(error.code);
        expect(error.code).not.toBe('internal_error');
      }
    }
    ws.close();
    expect((await fetch(`${server.url}/api/v1/health`)).status).toBe(200);
  }, 300_000);
});

/** POSTs to a raw request target, sent byte for byte (fetch would normalise or re-encode it). */
function rawPost(target: string, token: string | null): Promise<{ status: number; body: any }> {
  const { hostname, port } = new URL(server.url);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        hostname,
        port,
        path: target,
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      },
      (res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
      },
    );
    req.on('error', reject);
    req.end('{}');
  });
}

describe('raw tool paths', () => {
  const long = 'a'.repeat(10_000);
  it.each([
    ['a malformed escape', '/api/v1/tools/%E0'],
    ['a lone percent sign', '/api/v1/tools/%'],
    ['an encoded dot-dot', '/api/v1/tools/%2e%2e'],
    ['an encoded dot-dot to another route', '/api/v1/tools/%2e%2e%2fhealth'],
    ['an encoded tool name', '/api/v1/tools/list%5frooms'],
    ['a 10,000-character name', `/api/v1/tools/${long}`],
  ])('answers %s with 404 unknown_tool and stays healthy', async (_label, target) => {
    for (const withToken of [false, true]) {
      const answer = await rawPost(target, withToken ? token : null);
      expectStructured(answer.status, answer.body, target.slice(0, 80));
      expect(answer.status).toBe(404);
      expect(answer.body.error.code).toBe('unknown_tool');
      expect(answer.body.error.message.length).toBeLessThan(200);
    }
    expect((await fetch(`${server.url}/api/v1/health`)).status).toBe(200);
  });

  it('still serves a tool name sent raw', async () => {
    const answer = await rawPost('/api/v1/tools/list_rooms', token);
    expect(answer).toMatchObject({ status: 200, body: { ok: true } });
  });
});

async function until(check: () => boolean, ms = 5000) {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}
