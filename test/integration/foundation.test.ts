// Identity, rooms and messages over real HTTP against the real server.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerAgent, registerUser, startTestServer, type TestServer } from '../helpers/server.js';

let server: TestServer;

beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server.stop();
});

async function expectError(promise: ReturnType<TestServer['call']>, status: number, code: string) {
  const answer = await promise;
  expect(answer.status).toBe(status);
  expect(answer.body.ok).toBe(false);
  if (!answer.body.ok) {
    expect(answer.body.error.code).toBe(code);
    expect(JSON.stringify(answer.body.error)).not.toMatch(/at .*\.(ts|js):\d+/);
  }
}

describe('REST envelope', () => {
  it('serves health', async () => {
    const res = await fetch(`${server.url}/api/v1/health`);
    expect(res.status).toBe(200);
    expect(((await res.json()) as { ok: boolean }).ok).toBe(true);
  });

  it('answers malformed JSON with 400 validation_error', async () => {
    const res = await fetch(`${server.url}/api/v1/tools/register_agent`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"name": ',
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ ok: false, error: { code: 'validation_error' } });
  });

  it('answers an unknown tool with 404 unknown_tool', async () => {
    await expectError(server.call('no_such_tool', {}), 404, 'unknown_tool');
  });

  it('refuses calls without a token or with an unknown one', async () => {
    await expectError(server.call('list_rooms', {}), 401, 'unauthorized');
    await expectError(server.call('list_rooms', {}, 'act_nope'), 401, 'unauthorized');
  });

  it('refuses bodies over the limit with 413', async () => {
    const res = await fetch(`${server.url}/api/v1/tools/register_agent`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'x'.repeat(5_000_000) }),
    });
    expect(res.status).toBe(413);
    expect(await res.json()).toMatchObject({ ok: false, error: { code: 'payload_too_large' } });
  });
});

describe('HTTP hardening', () => {
  it('serves the page with a strict Content-Security-Policy and security headers', async () => {
    const res = await fetch(`${server.url}/`);
    expect(res.status).toBe(200);
    const csp = res.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("object-src 'none'");
    expect(csp).not.toContain('upgrade-insecure-requests');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('x-powered-by')).toBeNull();
  });

  it('refuses the page under a Host name that is not allowed, naming the setting', async () => {
    const http = await import('node:http');
    const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = http.request(`${server.url}/`, { headers: { host: 'evil.example:80' } }, (res) => {
        let body = '';
        res.on('data', (c) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      });
      req.on('error', reject);
      req.end();
    });
    expect(answer.status).toBe(403);
    expect(answer.body).toContain('ALLOWED_HOSTS');
  });

  it('serves the page libraries from their npm packages', async () => {
    for (const file of ['/vendor/marked.esm.js', '/vendor/purify.es.mjs']) {
      const res = await fetch(server.url + file);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/javascript/);
    }
  });
});

describe('identity', () => {
  it('registers agents and people with unique names, case-insensitively, and stores only token hashes', async () => {
    const agent = await server.ok('register_agent', { name: 'Claude', introduce: 'reviewer' });
    expect(agent.token).toMatch(/^act_[A-Za-z0-9_-]{40,}$/);
    expect(agent.agent.name).toBe('Claude');
    expect(agent.agent).not.toHaveProperty('token_hashes');
    await expectError(server.call('register_user', { name: 'claude' }), 409, 'name_taken');
    await expectError(server.call('register_agent', { name: 'CLAUDE' }), 409, 'name_taken');
    const user = await server.ok('register_user', { name: '小明', password: 'secret-pw' });
    expect(user.user.has_password).toBe(true);
    const agentsFile = await readFile(path.join(server.dataDir, 'agents.json'), 'utf8');
    const usersFile = await readFile(path.join(server.dataDir, 'users.json'), 'utf8');
    expect(agentsFile).not.toContain(agent.token);
    expect(usersFile).not.toContain(user.token);
    expect(usersFile).not.toContain('secret-pw');
    expect(usersFile).toMatch(/scrypt\$/);
  });

  it('rejects bad names', async () => {
    for (const name of ['', 'has space', 'at@sign', 'x'.repeat(33)]) {
      await expectError(server.call('register_agent', { name }), 400, 'validation_error');
    }
    await server.ok('register_agent', { name: 'Agent_1.b-c' });
  });

  it('logs in with a password, rotates tokens', async () => {
    const user = await registerUser(server, 'Lin', 'pw-123456');
    await expectError(server.call('login', { name: 'Lin', password: 'wrong' }), 403, 'wrong_password');
    const login = await server.ok('login', { name: 'lin', password: 'pw-123456' });
    expect(login.participant).toMatchObject({ name: 'Lin', kind: 'user' });
    expect(login.token).not.toBe(user.token);
    // Both browsers stay logged in.
    await server.ok('list_rooms', {}, user.token);
    await server.ok('list_rooms', {}, login.token);
    const rotated = await server.ok('rotate_token', {}, login.token);
    await expectError(server.call('list_rooms', {}, login.token), 401, 'unauthorized');
    await server.ok('list_rooms', {}, rotated.token);
    const check = await server.ok('login', { token: rotated.token });
    expect(check.participant.name).toBe('Lin');
    await expectError(server.call('login', { token: 'act_bad' }), 401, 'unauthorized');
    await expectError(server.call('login', {}), 400, 'validation_error');
  });
});

describe('rooms', () => {
  it('creates a room with the contract id, joins and isolates', async () => {
    const owner = await registerUser(server, 'Owner1');
    const outsider = await registerUser(server, 'Outsider1');
    const { room } = await server.ok('create_room', { room_name: 'Design Review', room_description: '评审' }, owner.token);
    expect(room.room_id).toMatch(/^design-review-\d{14}-[a-z0-9]{8,}$/);
    expect(room.members).toHaveLength(1);
    expect(room.members[0]).toMatchObject({ name: 'Owner1', is_host: true, role: 'user' });
    expect(room).toMatchObject({ interaction_mode: 'default', user_participation: true, system_status: 'active', has_password: false, language: 'zh-CN', timezone: 'Asia/Shanghai' });
    expect(room.settings).toEqual({ display_time_format: '24h', display_date_format: 'yyyy-MM-dd', max_auto_rounds: 10, turn_timeout_ms: null });

    await expectError(server.call('get_room', { room_id: room.room_id }, outsider.token), 403, 'not_a_member');
    await expectError(server.call('send_message', { room_id: room.room_id, text_content: 'hi' }, outsider.token), 403, 'not_a_member');
    await expectError(server.call('get_context', { room_id: room.room_id }, outsider.token), 403, 'not_a_member');
    await expectError(server.call('search_messages', { room_id: room.room_id, query: 'a' }, outsider.token), 403, 'not_a_member');
    await expectError(server.call('get_room', { room_id: 'missing-room' }, outsider.token), 404, 'room_not_found');

    const list = await server.ok('list_rooms', {}, outsider.token);
    const summary = list.rooms.find((r: { room_id: string }) => r.room_id === room.room_id);
    expect(Object.keys(summary).sort()).toEqual(['archived', 'has_password', 'interaction_mode', 'member_count', 'room_description', 'room_id', 'room_name'].sort());
  });

  it('validates room names and descriptions', async () => {
    const owner = await registerUser(server, 'Owner2');
    for (const room_name of ['1abc', '中文名', 'a/b', 'x'.repeat(65), '']) {
      await expectError(server.call('create_room', { room_name }, owner.token), 400, 'validation_error');
    }
    await expectError(server.call('create_room', { room_name: 'Ok', room_description: '一二三四五六七八九十十' }, owner.token), 400, 'validation_error');
    await expectError(server.call('create_room', { room_name: 'Ok', room_description: 'x'.repeat(31) }, owner.token), 400, 'validation_error');
    await server.ok('create_room', { room_name: 'Ok', room_description: '一二三四五六七八九十' }, owner.token);
    await server.ok('create_room', { room_name: 'Ok', room_description: 'x'.repeat(30) }, owner.token);
  });

  it('keeps room passwords hashed, never returned, needed once to join', async () => {
    const owner = await registerUser(server, 'Owner3');
    const guest = await registerAgent(server, 'Guest3');
    const { room } = await server.ok('create_room', { room_name: 'Secret', password: 'open-sesame' }, owner.token);
    expect(room.has_password).toBe(true);
    expect(JSON.stringify(room)).not.toContain('open-sesame');
    expect(JSON.stringify(room)).not.toContain('password_hash');
    await expectError(server.call('join_room', { room_id: room.room_id }, guest.token), 403, 'wrong_password');
    await expectError(server.call('join_room', { room_id: room.room_id, password: 'nope' }, guest.token), 403, 'wrong_password');
    const joined = await server.ok('join_room', { room_id: room.room_id, password: 'open-sesame' }, guest.token);
    expect(joined.room.members.map((m: { name: string }) => m.name)).toEqual(['Owner3', 'Guest3']);
    // A member joins again without the password.
    await server.ok('join_room', { room_id: room.room_id }, guest.token);
    const rooms = await readFile(path.join(server.dataDir, 'rooms.json'), 'utf8');
    expect(rooms).not.toContain('open-sesame');
    expect(rooms).toContain('scrypt$');
  });

  it('lets admins pause and announce; others get forbidden', async () => {
    const owner = await registerUser(server, 'Owner4');
    const agent = await registerAgent(server, 'Agent4');
    const { room } = await server.ok('create_room', { room_name: 'Admin Room' }, owner.token);
    await server.ok('join_room', { room_id: room.room_id }, agent.token);
    await expectError(server.call('set_room_status', { room_id: room.room_id, system_status: 'paused' }, agent.token), 403, 'forbidden');
    await expectError(server.call('set_announcement', { room_id: room.room_id, user_announcement: 'x' }, agent.token), 403, 'forbidden');
    const paused = await server.ok('set_room_status', { room_id: room.room_id, system_status: 'paused' }, owner.token);
    expect(paused.room.system_status).toBe('paused');
    const announced = await server.ok('set_announcement', { room_id: room.room_id, user_announcement: '请简短发言' }, owner.token);
    expect(announced.room.announcement).toMatchObject({ user_announcement: '请简短发言', announcement_publisher: 'Owner4' });
    await expectError(server.call('set_room_status', { room_id: room.room_id, system_status: 'sleeping' }, owner.token), 400, 'validation_error');
  });

  it('hands the host flag to the longest-standing member when the host leaves', async () => {
    const a = await registerUser(server, 'HostA');
    const b = await registerAgent(server, 'HostB');
    const c = await registerAgent(server, 'HostC');
    const { room } = await server.ok('create_room', { room_name: 'Host Room', interaction_mode: 'host' }, a.token);
    await server.ok('join_room', { room_id: room.room_id }, b.token);
    await server.ok('join_room', { room_id: room.room_id }, c.token);
    await server.ok('leave_room', { room_id: room.room_id }, a.token);
    const after = await server.ok('get_room', { room_id: room.room_id }, c.token);
    expect(after.room.members.map((m: { name: string; is_host: boolean }) => [m.name, m.is_host])).toEqual([
      ['HostB', true],
      ['HostC', false],
    ]);
  });
});

describe('messages', () => {
  it('stores every field of the contract, parses mentions, and is idempotent by client_msg_id', async () => {
    const owner = await registerUser(server, 'Mia');
    const bot = await registerAgent(server, 'Bot.One');
    const bot2 = await registerAgent(server, 'Bot');
    const { room } = await server.ok('create_room', { room_name: 'Msg Room' }, owner.token);
    await server.ok('join_room', { room_id: room.room_id }, bot.token);
    await server.ok('join_room', { room_id: room.room_id }, bot2.token);
    const { message } = await server.ok(
      'send_message',
      { room_id: room.room_id, text_content: '你好 @bot.one，还有@BOT。', client_msg_id: 'c-1' },
      owner.token,
    );
    expect(message).toMatchObject({
      room_id: room.room_id,
      seq: 1,
      sender: 'Mia',
      sender_id: owner.id,
      role: 'user',
      text_content_i18n: null,
      source_language: 'zh-CN',
      file_url: '',
      file_type: '',
      mentions: ['Bot.One', 'Bot'],
      visible: true,
      response_to: null,
      display_timezone: 'Asia/Shanghai',
      skip_reason: null,
      deleted: false,
    });
    expect(message.message_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(message.timestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(message).not.toHaveProperty('client_msg_id');
    const again = await server.ok('send_message', { room_id: room.room_id, text_content: 'different', client_msg_id: 'c-1' }, owner.token);
    expect(again.message.message_id).toBe(message.message_id);
    const page = await server.ok('get_messages', { room_id: room.room_id, after_seq: 0 }, owner.token);
    expect(page.messages.filter((m: { visible: boolean }) => m.visible)).toHaveLength(1);

    await expectError(server.call('send_message', { room_id: room.room_id, text_content: '' }, owner.token), 400, 'validation_error');
    await expectError(
      server.call('send_message', { room_id: room.room_id, text_content: 'x', mentions: ['Nobody'] }, owner.token),
      400,
      'validation_error',
    );
    await expectError(
      server.call('send_message', { room_id: room.room_id, text_content: 'x', response_to: '00000000-0000-4000-8000-000000000000' }, owner.token),
      404,
      'message_not_found',
    );
  });

  it('limits message size', async () => {
    const small = await startTestServer({ maxMessageChars: 10 });
    try {
      const owner = await registerUser(small, 'Size');
      const { room } = await small.ok('create_room', { room_name: 'Size' }, owner.token);
      await expectError(small.call('send_message', { room_id: room.room_id, text_content: '一二三四五六七八九十一' }, owner.token), 413, 'payload_too_large');
      await small.ok('send_message', { room_id: room.room_id, text_content: '一二三四五六七八九十' }, owner.token);
    } finally {
      await small.stop();
    }
  });

  it('edits, gets whole, searches (Chinese, case-insensitive) and builds context', async () => {
    const owner = await registerUser(server, 'Zoe');
    const other = await registerUser(server, 'Yan');
    const outsider = await registerUser(server, 'Xu');
    const { room } = await server.ok('create_room', { room_name: 'Search Room' }, owner.token);
    await server.ok('join_room', { room_id: room.room_id }, other.token);
    const first = (await server.ok('send_message', { room_id: room.room_id, text_content: 'Hello World' }, owner.token)).message;
    await server.ok('send_message', { room_id: room.room_id, text_content: '我们讨论一下架构设计' }, other.token);
    const long = 'L'.repeat(2500);
    const longMsg = (await server.ok('send_message', { room_id: room.room_id, text_content: long, response_to: first.message_id }, other.token)).message;

    const edited = await server.ok('edit_message', { message_id: first.message_id, text_content: 'Hello again' }, owner.token);
    expect(edited.message.text_content).toBe('Hello again');
    await expectError(server.call('edit_message', { message_id: first.message_id, text_content: 'hijack' }, other.token), 403, 'forbidden');
    await expectError(server.call('get_full_message', { message_id: first.message_id }, outsider.token), 404, 'message_not_found');
    await expectError(server.call('get_full_message', { message_id: 'not-a-uuid' }, owner.token), 400, 'validation_error');

    const found = await server.ok('search_messages', { room_id: room.room_id, query: '架构' }, owner.token);
    expect(found.messages.map((m: { text_content: string }) => m.text_content)).toEqual(['我们讨论一下架构设计']);
    const en = await server.ok('search_messages', { room_id: room.room_id, query: 'HELLO' }, owner.token);
    expect(en.messages).toHaveLength(1);
    expect(en.messages[0].text_content).toBe('Hello again');
    // Search sees later edits of messages it has already indexed.
    await server.ok('edit_message', { message_id: first.message_id, text_content: 'Goodbye' }, owner.token);
    expect((await server.ok('search_messages', { room_id: room.room_id, query: 'hello' }, owner.token)).messages).toHaveLength(0);
    expect((await server.ok('search_messages', { room_id: room.room_id, query: 'GOODBYE' }, owner.token)).messages).toHaveLength(1);
    await server.ok('edit_message', { message_id: first.message_id, text_content: 'Hello again' }, owner.token);

    const ctx = await server.ok('get_context', { room_id: room.room_id }, owner.token);
    // Since the caller's last message (seq 1): the two later ones.
    expect(ctx.messages.map((m: { seq: number }) => m.seq)).toEqual([2, 3]);
    const cut = ctx.messages[1];
    expect(cut.truncated).toBe(true);
    expect(cut.text_content).toHaveLength(2000);
    expect(cut.display_time).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/);
    expect(ctx.your_turn).toBeNull();
    expect(ctx.members.map((m: { name: string }) => m.name)).toEqual(['Zoe', 'Yan']);
    const whole = await server.ok('get_full_message', { message_id: longMsg.message_id }, owner.token);
    expect(whole.message.text_content).toBe(long);
  });

  it('forbids people when user participation is off, but not admins', async () => {
    const owner = await registerUser(server, 'Pat');
    const guest = await registerUser(server, 'Quinn');
    const { room } = await server.ok('create_room', { room_name: 'Agents Only', user_participation: false }, owner.token);
    await server.ok('join_room', { room_id: room.room_id }, guest.token);
    await expectError(server.call('send_message', { room_id: room.room_id, text_content: 'hi' }, guest.token), 403, 'forbidden');
    await server.ok('send_message', { room_id: room.room_id, text_content: 'admin speaks' }, owner.token);
  });
});
