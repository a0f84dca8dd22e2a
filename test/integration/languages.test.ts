// SPEC §6/§7 v3: error messages in the caller's language (Accept-Language, else the room's
// language, else DEFAULT_LANGUAGE; codes unchanged) and the texts the server writes into a room
// in the room's language (skip and timeout records, the guard notice, the PDF footer).
import { execFileSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { registerAgent, registerUser, startTestServer, type TestServer } from '../helpers/server.js';
import { wsUrl } from '../helpers/ws.js';

const CJK = /[\u4e00-\u9fff]/;
let server: TestServer;

async function callWith(tool: string, args: unknown, token: string | null, acceptLanguage?: string) {
  const res = await fetch(`${server.url}/api/v1/tools/${tool}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(acceptLanguage ? { 'accept-language': acceptLanguage } : {}),
    },
    body: JSON.stringify(args),
  });
  return { status: res.status, body: (await res.json()) as any };
}

/** A room (language given) where agent A holds the turn and agent B does not. */
async function roomWithTurn(language: string, prefix: string) {
  const person = await registerUser(server, `${prefix}P`);
  const a = await registerAgent(server, `${prefix}A`);
  const b = await registerAgent(server, `${prefix}B`);
  const { room } = await server.ok('create_room', { room_name: `${prefix} room`, language }, person.token);
  await server.ok('join_room', { room_id: room.room_id }, a.token);
  await server.ok('join_room', { room_id: room.room_id }, b.token);
  await server.ok('send_message', { room_id: room.room_id, text_content: 'hello' }, person.token);
  const ctx = await server.ok('get_context', { room_id: room.room_id }, a.token);
  expect(ctx.your_turn).not.toBeNull();
  return { roomId: room.room_id as string, person, a, b };
}

beforeAll(async () => {
  server = await startTestServer({ turnTimeoutMs: 60_000 });
});
afterAll(async () => {
  await server.stop();
});

describe('error messages in the caller language', () => {
  it('not_your_turn is Chinese in a zh-CN room, English with Accept-Language: en, same code', async () => {
    const { roomId, b } = await roomWithTurn('zh-CN', 'Zh');
    const zh = await callWith('send_message', { room_id: roomId, text_content: 'me first' }, b.token);
    expect(zh.status).toBe(409);
    expect(zh.body.error.code).toBe('not_your_turn');
    expect(zh.body.error.message).toMatch(CJK);
    const en = await callWith('send_message', { room_id: roomId, text_content: 'me first' }, b.token, 'en');
    expect(en.status).toBe(409);
    expect(en.body.error.code).toBe('not_your_turn');
    expect(en.body.error.message).toBe('It is not your turn');
    // An unknown language falls back to the room's.
    const fr = await callWith('send_message', { room_id: roomId, text_content: 'me first' }, b.token, 'fr-FR, de;q=0.8');
    expect(fr.body.error.message).toBe(zh.body.error.message);
  });

  it('an English room answers in English unless the request asks for Chinese', async () => {
    const { roomId, b } = await roomWithTurn('en', 'En');
    const en = await callWith('skip_response', { room_id: roomId }, b.token);
    expect(en.body.error.code).toBe('not_your_turn');
    expect(en.body.error.message).not.toMatch(CJK);
    const zh = await callWith('skip_response', { room_id: roomId }, b.token, 'zh-CN,zh;q=0.9,en;q=0.8');
    expect(zh.body.error.code).toBe('not_your_turn');
    expect(zh.body.error.message).toMatch(CJK);
  });

  it('a call about no room uses DEFAULT_LANGUAGE (zh-CN) unless Accept-Language says otherwise', async () => {
    const person = await registerUser(server, 'NoRoomCaller');
    const zh = await callWith('create_room', { room_name: '1 starts with a digit' }, person.token);
    expect(zh.status).toBe(400);
    expect(zh.body.error.code).toBe('validation_error');
    expect(zh.body.error.message).toMatch(CJK);
    expect(zh.body.error.message).toContain('room_name');
    const en = await callWith('create_room', { room_name: '1 starts with a digit' }, person.token, 'en-US');
    expect(en.body.error.code).toBe('validation_error');
    expect(en.body.error.message).not.toMatch(CJK);
    expect(en.body.error.message).toContain('room_name');
    // zod's own messages too (a missing argument).
    const missing = await callWith('create_room', {}, person.token);
    expect(missing.body.error.code).toBe('validation_error');
    expect(missing.body.error.message).toMatch(CJK);
    // Errors outside a tool: the token check and a malformed body.
    const unknownToken = await callWith('list_rooms', {}, 'not-a-real-token', 'en');
    expect(unknownToken.body.error).toMatchObject({ code: 'unauthorized' });
    expect(unknownToken.body.error.message).not.toMatch(CJK);
    const unknownTokenZh = await callWith('list_rooms', {}, 'not-a-real-token');
    expect(unknownTokenZh.body.error.code).toBe('unauthorized');
    expect(unknownTokenZh.body.error.message).toMatch(CJK);
    const malformed = await fetch(`${server.url}/api/v1/tools/list_rooms`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{' });
    const body = (await malformed.json()) as any;
    expect(body.error.code).toBe('validation_error');
    expect(body.error.message).toMatch(CJK);
  });

  it('WebSocket calls use the upgrade request Accept-Language', async () => {
    const { roomId, b } = await roomWithTurn('zh-CN', 'Ws');
    const ws = new WebSocket(wsUrl(server.url), { headers: { 'accept-language': 'en' } });
    const frames: any[] = [];
    ws.on('message', (data) => frames.push(JSON.parse(data.toString())));
    await new Promise((resolve, reject) => {
      ws.once('open', resolve);
      ws.once('error', reject);
    });
    ws.send(JSON.stringify({ type: 'auth', token: b.token }));
    await expect.poll(() => frames.some((f) => f.type === 'auth_ok')).toBe(true);
    ws.send(JSON.stringify({ type: 'call', id: 7, tool: 'send_message', args: { room_id: roomId, text_content: 'me' } }));
    await expect.poll(() => frames.find((f) => f.type === 'result' && f.id === 7)).toBeTruthy();
    const result = frames.find((f) => f.type === 'result' && f.id === 7);
    expect(result.ok).toBe(false);
    expect(result.error.code).toBe('not_your_turn');
    expect(result.error.message).toBe('It is not your turn');
    ws.close();
  });
});

describe('texts the server writes into an English room', () => {
  it('skip and timeout records and the guard notice are English; the PDF footer reads "Page 1 of 1"', async () => {
    const person = await registerUser(server, 'EnglishHost');
    const solo = await registerAgent(server, 'EnglishSolo');
    const { room } = await server.ok('create_room', { room_name: 'English texts', language: 'en' }, person.token);
    const roomId = room.room_id as string;
    await server.ok('join_room', { room_id: roomId }, solo.token);
    await server.ok('update_room', { room_id: roomId, max_auto_rounds: 1, turn_timeout_ms: 1000 }, person.token);

    // A skip: "(skipped)"; with a reason: "(skipped: reason)".
    await server.ok('send_message', { room_id: roomId, text_content: 'first question' }, person.token);
    await server.ok('skip_response', { room_id: roomId, reason: 'no idea' }, solo.token);
    // A timeout: the agent stays silent for the 1 s deadline.
    await server.ok('send_message', { room_id: roomId, text_content: 'second question' }, person.token);
    await expect
      .poll(async () => (await server.ok('get_messages', { room_id: roomId }, person.token)).messages.filter((m: any) => m.skip_reason === 'timeout').length, { timeout: 10_000 })
      .toBe(1);
    // An answer trips the guard (1 round × 1 agent).
    await server.ok('send_message', { room_id: roomId, text_content: 'third question' }, person.token);
    await expect.poll(async () => (await server.ok('get_context', { room_id: roomId }, solo.token)).your_turn).not.toBeNull();
    await server.ok('send_message', { room_id: roomId, text_content: 'an answer' }, solo.token);

    const { messages } = await server.ok('get_messages', { room_id: roomId }, person.token);
    const skip = messages.find((m: any) => m.skip_reason === 'skip');
    expect(skip.text_content).toBe('(skipped: no idea)');
    const timeout = messages.find((m: any) => m.skip_reason === 'timeout');
    expect(timeout.text_content).toBe('(timed out)');
    const guard = messages.find((m: any) => m.role === 'system');
    expect(guard.text_content).toMatch(/round limit/i);
    for (const m of messages) expect(m.text_content).not.toMatch(CJK);
    const after = await server.ok('get_room', { room_id: roomId }, person.token);
    expect(after.room.announcement.system_announcement).toMatch(/round limit/i);

    const data = await server.ok('export_chat_history', { room_id: roomId, format: 'pdf' }, person.token);
    const res = await fetch(server.url + data.url.split('?')[0], { headers: { authorization: `Bearer ${person.token}` } });
    expect(res.status).toBe(200);
    const dir = await mkdtemp(path.join(os.tmpdir(), 'pdf-en-'));
    try {
      const file = path.join(dir, 'out.pdf');
      await writeFile(file, Buffer.from(await res.arrayBuffer()));
      const text = execFileSync('pdftotext', [file, '-']).toString();
      expect(text).toMatch(/Page\s+1\s+of\s+1/);
      expect(text).not.toContain('页');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('a Chinese room keeps the Chinese records', async () => {
    const person = await registerUser(server, 'ChineseHost');
    const solo = await registerAgent(server, 'ChineseSolo');
    const { room } = await server.ok('create_room', { room_name: 'Chinese texts' }, person.token);
    await server.ok('join_room', { room_id: room.room_id }, solo.token);
    await server.ok('send_message', { room_id: room.room_id, text_content: '你好' }, person.token);
    await server.ok('skip_response', { room_id: room.room_id }, solo.token);
    const { messages } = await server.ok('get_messages', { room_id: room.room_id }, person.token);
    expect(messages.find((m: any) => m.skip_reason === 'skip').text_content).toBe('（跳过）');
  });
});
