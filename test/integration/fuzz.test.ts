// Fuzzing every tool over REST, WebSocket and MCP with arguments generated from the tools' own
// JSON Schemas (test/helpers/schema-arbitrary.ts), plus raw WebSocket frames: no crash, every
// answer a structured error with a contract code (never internal_error: no fault is injected
// here), and the server still healthy after. ≥ 10,000 schema-driven tool calls per run.
import http from 'node:http';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { z } from 'zod';
import { ERROR_STATUS } from '../../src/errors.js';
import { connectMcp } from '../helpers/mcp.js';
import { eventually, TestSocket, wsUrl } from '../helpers/ws.js';
import { schemaArbitrary, type JsonSchema } from '../helpers/schema-arbitrary.js';
import { registerAgent, registerUser, startTestServer, type TestServer } from '../helpers/server.js';

const SCALE = Number(process.env.FUZZ_CASES ?? 10_000) / 10_000;
// Schema-generated tool calls: 10,000 in all. Most go over WebSocket, the cheapest transport to
// drive; REST and MCP get enough to reach every tool through their own gateways.
const REST_CASES = Math.round(2500 * SCALE);
const WS_CALL_CASES = Math.round(7000 * SCALE);
const MCP_CASES = Math.round(500 * SCALE);
const WS_FRAME_CASES = Math.round(5000 * SCALE);

let server: TestServer;
let token: string;
let roomId: string;
let messageId: string;

beforeAll(async () => {
  server = await startTestServer({ rateLimitPerToken: 0, rateLimitPerAddress: 0, turnTimeoutMs: 60_000 });
  const owner = await registerUser(server, 'Fuzzer', 'fuzz-password');
  token = owner.token;
  await freshRoom();
});
afterAll(async () => {
  await server.stop();
});

async function freshRoom() {
  roomId = (await server.ok('create_room', { room_name: 'Fuzz' }, token)).room.room_id;
  const agent = await registerAgent(server, `FuzzAgent${Date.now() % 100000}`);
  await server.ok('join_room', { room_id: roomId }, agent.token);
  messageId = (await server.ok('send_message', { room_id: roomId, text_content: 'seed @Fuzzer' }, token)).message.message_id;
}

/**
 * Fuzzed calls may archive, leave, lock or pause the fuzz room: between batches the fuzzer gets
 * a usable room back, so later cases keep reaching the handlers.
 */
async function restoreRoom() {
  const room = await server.call<any>('get_room', { room_id: roomId }, token);
  if (!room.body.ok || room.body.data.room.archived || room.body.data.room.has_password) return freshRoom();
  if (room.body.data.room.system_status === 'paused') await server.call('set_room_status', { room_id: roomId, system_status: 'active' }, token);
}

/** Placeholders resolved at send time, since the fuzz room can change between batches. */
const ROOM = '$ROOM';
const MESSAGE = '$MESSAGE';
const HINTS = {
  room_id: [ROOM],
  message_id: [MESSAGE],
  response_to: [MESSAGE],
  name: ['Fuzzer', 'fuzzer', 'FuzzAgent'],
  format: ['markdown', 'json', 'html'],
};

function resolve_(value: unknown): unknown {
  if (value === ROOM) return roomId;
  if (value === MESSAGE) return messageId;
  if (Array.isArray(value)) return value.map(resolve_);
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, resolve_(v)]));
  return value;
}

/** Keeps the one blocking tool short: a long `timeout_s` would make a case wait up to 50 s. */
function bounded(tool: string, args: unknown): unknown {
  if (tool === 'wait_for_turn' && args && typeof args === 'object' && !Array.isArray(args)) {
    const timeout = (args as { timeout_s?: unknown }).timeout_s;
    // Absent, the wait is 25 s.
    if (timeout === undefined || (typeof timeout === 'number' && timeout > 0.05)) return { ...args, timeout_s: 0 };
  }
  return args;
}

interface Case {
  tool: string;
  args: unknown;
  withToken: boolean;
}

/** Every tool, arguments from its JSON Schema. rotate_token would end the fuzzing identity: fuzzed at the end. */
function casesFor(count: number, seed: number, skip: ReadonlySet<string> = new Set(['rotate_token'])): Case[] {
  const tools = server.app.registry.list().filter((t) => !skip.has(t.name));
  const arbs = tools.map((tool) => {
    const schema = z.toJSONSchema(tool.input, { io: 'input', unrepresentable: 'any' }) as JsonSchema;
    return fc.record({
      tool: fc.constant(tool.name),
      args: fc.oneof({ weight: 12, arbitrary: schemaArbitrary(schema, HINTS) }, { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }) }),
      withToken: fc.oneof({ weight: 9, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) }),
    });
  });
  return fc.sample(fc.oneof(...arbs), { numRuns: count, seed }).map((c) => ({ ...c, args: bounded(c.tool, c.args) }));
}

function expectStructured(status: number, body: any, label: string) {
  expect(body, label).toBeTypeOf('object');
  expect(typeof body.ok, label).toBe('boolean');
  if (body.ok) {
    expect(status, label).toBe(200);
    return;
  }
  expectContractError(body.error, label);
  expect(status, label).toBe(ERROR_STATUS[body.error.code as keyof typeof ERROR_STATUS]);
}

function expectContractError(error: any, label: string) {
  expect(Object.keys(ERROR_STATUS), label).toContain(error?.code);
  expect(error.code, `${label} → internal_error`).not.toBe('internal_error');
  expect(typeof error.message, label).toBe('string');
}

/**
 * Runs the items with `workers` requests in flight (over kept-alive connections): a slow case (a
 * slowed password guess, an export) holds one worker, not a whole batch. `between` runs every
 * `every` items, with the workers paused.
 */
async function inPool<T>(items: T[], workers: number, run: (item: T) => Promise<void>, between?: () => Promise<void>, every = 250) {
  for (let start = 0; start < items.length; start += every) {
    const chunk = items.slice(start, start + every);
    let next = 0;
    await Promise.all(
      Array.from({ length: workers }, async () => {
        while (next < chunk.length) await run(chunk[next++]!);
      }),
    );
    if (between) await between();
  }
}

const timings = new Map<string, { n: number; ms: number }>();
async function timed<T>(tool: string, work: () => Promise<T>): Promise<T> {
  const started = performance.now();
  try {
    return await work();
  } finally {
    const t = timings.get(tool) ?? { n: 0, ms: 0 };
    t.n += 1;
    t.ms += performance.now() - started;
    timings.set(tool, t);
  }
}
afterAll(() => {
  if (process.env.FUZZ_TIMINGS) console.log([...timings].sort((a, b) => b[1].ms - a[1].ms).map(([k, v]) => `${k} ${v.n} ${Math.round(v.ms)}ms`).join('\n'));
});

const label = (c: Case) => `${c.tool} ${JSON.stringify(c.args)?.slice(0, 200)}`;

describe('fuzzing every tool from its JSON Schema', () => {
  it('covers every tool and every argument the schemas declare', () => {
    const cases = casesFor(5000, 42, new Set());
    const tools = server.app.registry.list();
    for (const tool of tools) {
      const mine = cases.filter((c) => c.tool === tool.name);
      expect(mine.length, tool.name).toBeGreaterThan(0);
      const schema = z.toJSONSchema(tool.input, { io: 'input', unrepresentable: 'any' }) as JsonSchema;
      for (const key of Object.keys(schema.properties ?? {})) {
        const used = mine.some((c) => c.args && typeof c.args === 'object' && key in (c.args as object));
        expect(used, `${tool.name}.${key}`).toBe(true);
      }
    }
  });

  it(`answers ${REST_CASES} schema-generated tool calls over REST with structured results`, async () => {
    const cases = casesFor(REST_CASES, 42);
    await inPool(
      cases,
      24,
      async (c) => {
        const answer = await timed(c.tool, () => server.call(c.tool, resolve_(c.args), c.withToken ? token : null));
        expectStructured(answer.status, answer.body, label(c));
      },
      restoreRoom,
    );
    // Raw bodies that are not JSON objects.
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

  it(`answers ${WS_CALL_CASES} schema-generated tool calls over WebSocket with structured results`, async () => {
    await restoreRoom();
    const ws = await TestSocket.connect(wsUrl(server.url), token);
    // The socket acts as the fuzzer (withToken does not apply).
    await inPool(casesFor(WS_CALL_CASES, 4242), 32, async (c) => {
      const frame = (await timed(c.tool, () => ws.call(c.tool, resolve_(c.args), 300_000))) as { ok: boolean; error?: unknown };
      if (!frame.ok) expectContractError(frame.error, label(c));
    }, restoreRoom);
    expect(ws.ws.readyState).toBe(WebSocket.OPEN);
    await ws.close();
    expect((await fetch(`${server.url}/api/v1/health`)).status).toBe(200);
  }, 300_000);

  it(`answers ${MCP_CASES} schema-generated tool calls over MCP with tool results`, async () => {
    await restoreRoom();
    const mcp = await connectMcp(server.url, { token });
    try {
      await inPool(casesFor(MCP_CASES, 77), 16, async (c) => {
        const args = resolve_(c.args);
        // MCP arguments are an object by the protocol; other JSON is the client's problem.
        const result = await timed(c.tool, () => mcp.call(c.tool, args && typeof args === 'object' && !Array.isArray(args) ? (args as Record<string, unknown>) : {}));
        if (result.isError) expectContractError((result.structuredContent as any)?.error, label(c));
      }, restoreRoom);
      await mcp.ok('list_rooms');
    } finally {
      await mcp.close();
    }
    expect((await fetch(`${server.url}/api/v1/health`)).status).toBe(200);
  }, 300_000);

  it('fuzzes rotate_token last (its only argument is the token it ends)', async () => {
    for (const args of [{}, { token }, [], 'x', null]) {
      const other = await registerUser(server, `Rotator${Math.floor(Math.random() * 1e9)}`);
      const answer = await server.call('rotate_token', args, other.token);
      expectStructured(answer.status, answer.body, `rotate_token ${JSON.stringify(args)}`);
    }
  });
});

describe('fuzzing raw frames', () => {
  it(`answers ${WS_FRAME_CASES} random WebSocket frames with structured frames and keeps the socket`, async () => {
    await restoreRoom();
    const socket = await TestSocket.connect(wsUrl(server.url), token);
    const frames = socket.frames as any[];

    const valueArb = fc.oneof(
      { weight: 3, arbitrary: fc.constantFrom(roomId, messageId, 'Fuzzer', 'default', 'host', 'paused', 'active', 'markdown') },
      { weight: 2, arbitrary: fc.string({ maxLength: 40 }) },
      { weight: 1, arbitrary: fc.integer() },
      { weight: 1, arbitrary: fc.constant(null) },
      { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }) },
    );
    const frameArb = fc.oneof(
      { weight: 2, arbitrary: fc.string({ maxLength: 60 }) },
      { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)) },
      {
        weight: 4,
        arbitrary: fc
          .record(
            {
              type: fc.constantFrom('subscribe', 'unsubscribe', 'call', 'ping', 'pong', 'event', 'nope'),
              id: valueArb,
              room_id: valueArb,
              after_seq: valueArb,
              tool: fc.constantFrom('get_room', 'get_context', 'send_message', 'list_rooms', 'nope', 'rotate_token_x'),
              args: fc.oneof(fc.constant({ room_id: roomId }), fc.dictionary(fc.string({ maxLength: 8 }), valueArb, { maxKeys: 3 }), valueArb),
            },
            { requiredKeys: ['type'] },
          )
          .map((v) => JSON.stringify(v)),
      },
    );
    const cases = fc.sample(frameArb, { numRuns: WS_FRAME_CASES, seed: 7 });
    for (const frame of cases) socket.send(frame);
    socket.send({ type: 'ping' });
    const pongs = () => frames.filter((f) => f.type === 'pong').length;
    const expectedPongs = cases.filter((c) => /^\{"type":"ping"/.test(c)).length + 1;
    await eventually(() => pongs() >= expectedPongs, 60_000);
    expect(socket.ws.readyState).toBe(WebSocket.OPEN);
    for (const f of frames) {
      expect(['auth_ok', 'subscribed', 'unsubscribed', 'result', 'pong', 'error', 'event']).toContain(f.type);
      const error = f.type === 'error' ? f.error : f.type === 'result' && !f.ok ? f.error : null;
      if (error) {
        expect(Object.keys(ERROR_STATUS)).toContain(error.code);
        expect(error.code).not.toBe('internal_error');
      }
    }
    await socket.close();
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

describe('import_chat_history documents (SPEC §10: a malformed or hostile file is a validation_error)', () => {
  /** A valid room export of this server, the base the fuzzed documents start from. */
  async function exportedRoom(): Promise<any> {
    await server.ok('send_message', { room_id: roomId, text_content: 'for the import fuzz' }, token);
    const data = await server.ok('export_chat_history', { room_id: roomId, format: 'json' }, token);
    return (await fetch(server.url + data.url)).json();
  }

  const IMPORT_CASES = Math.round(600 * SCALE) || 1;

  it('answers every fuzzed document with a result or a contract error: no 5xx, no crash', async () => {
    const base = await exportedRoom();
    expect(base.messages.length).toBeGreaterThan(0);
    const time = fc.oneof(
      fc.date({ min: new Date(-62_198_755_200_000), max: new Date(253_402_300_799_000), noInvalidDate: true }).map((d) => d.toISOString()),
      fc.constantFrom('2026-01-01', 'Thu, 01 Jan 2026 00:00:00 GMT', '2026-01-01T00:00:00', '9999-12-31T23:59:59-14:00', '0000-01-01T00:00:00+14:00', '+010000-01-01T00:00:00.000Z', '2026-02-30T00:00:00Z', '2026-01-01T24:00:00Z', ''),
      fc.string({ maxLength: 30 }),
      fc.integer(),
      fc.constant(null),
    );
    const leaf = fc.oneof(time, fc.string({ maxLength: 40 }), fc.integer(), fc.boolean(), fc.constant(null), fc.jsonValue({ maxDepth: 2 }));
    // A mutation: a path into the document (top level, room, announcement, a message, a round) and a new value.
    const mutation = fc.record({
      where: fc.constantFrom('top', 'room', 'announcement', 'settings', 'message', 'round', 'member'),
      key: fc.oneof(
        fc.constantFrom('exported_at', 'timestamp', 'created_at', 'edited_at', 'sender', 'sender_id', 'role', 'seq', 'message_id', 'text_content', 'visible', 'skip_reason', 'response_to', 'round_id', 'imported', 'mentions', 'file_url', 'version', 'format', 'system_announcement', 'user_announcement', 'announcement_publisher', 'started_at', 'timezone', 'language', 'room_name', 'messages', 'rounds', 'members'),
        fc.string({ maxLength: 10 }),
      ),
      value: fc.oneof(time, leaf),
      remove: fc.boolean(),
    });
    const docs = fc.sample(fc.array(mutation, { minLength: 1, maxLength: 4 }), { numRuns: IMPORT_CASES, seed: 38 }).map((mutations) => {
      const doc = structuredClone(base);
      for (const m of mutations) {
        const target =
          m.where === 'top' ? doc
          : m.where === 'room' ? doc.room
          : m.where === 'announcement' ? doc.room?.announcement
          : m.where === 'settings' ? doc.room?.settings
          : m.where === 'message' ? doc.messages?.[0]
          : m.where === 'round' ? (doc.rounds?.[0] ?? doc)
          : (doc.members?.[0] ?? doc);
        if (!target || typeof target !== 'object') continue;
        if (m.remove) delete target[m.key];
        else target[m.key] = m.value;
      }
      return doc;
    });
    let imported = 0;
    await inPool(docs, 4, async (doc) => {
      const answer = await server.call('import_chat_history', { data: doc }, token);
      const label = `import ${JSON.stringify(doc).slice(0, 300)}`;
      expectStructured(answer.status, answer.body, label);
      if (answer.body.ok) {
        imported++;
        // Whatever was imported is nobody's and re-exports into a file that imports again.
        const copy = (answer.body.data as any).room.room_id;
        const again = await server.ok('export_chat_history', { room_id: copy, format: 'json' }, token);
        const file = await (await fetch(server.url + again.url)).json();
        expect(file.messages.every((m: any) => m.sender_id === null && m.imported === true), label).toBe(true);
        const reimport = await server.call('import_chat_history', { data: file }, token);
        expect(reimport.status, `${label} → re-import ${JSON.stringify(reimport.body).slice(0, 300)}`).toBe(200);
      }
    });
    // Some documents stay valid (a mutation of an optional or ignored field) and are imported.
    expect(imported).toBeGreaterThan(0);
    expect((await fetch(`${server.url}/api/v1/health`)).status).toBe(200);
  }, 300_000);
});
