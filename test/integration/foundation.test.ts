// Identity, rooms and messages over real HTTP against the real server.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRoomWith, expectError, registerAgent, roomWithNewMembers, registerUser, startTestServer, type TestServer } from '../helpers/server.js';
import { plainMessageFields } from '../helpers/message-fields.js';
import { storedRecords, storedStateText } from '../helpers/stored-state.js';

let server: TestServer;

beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server.stop();
});

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

  async function getPage(host: string): Promise<{ status: number; body: string }> {
    const http = await import('node:http');
    return new Promise((resolve, reject) => {
      const req = http.request(`${server.url}/`, { headers: { host } }, (res) => {
        let body = '';
        res.on('data', (c) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      });
      req.on('error', reject);
      req.end();
    });
  }

  it('refuses the page under a Host name that is not allowed, naming the setting', async () => {
    const answer = await getPage('evil.example:80');
    expect(answer.status).toBe(403);
    expect(answer.body).toContain('ALLOWED_HOSTS');
  });

  it('serves the page at both default host names, localhost and 127.0.0.1', async () => {
    for (const host of [`localhost:${server.port}`, `127.0.0.1:${server.port}`]) {
      const answer = await getPage(host);
      expect(answer.status).toBe(200);
      expect(answer.body).toContain('<html');
    }
  });

  it('serves the page libraries from their npm packages, as Node resolves them', async () => {
    const { createRequire } = await import('node:module');
    const require = createRequire(import.meta.url);
    // The ESM browser builds: marked's "." export, and dompurify's "." under the "import" condition.
    const purifyDir = path.dirname(path.dirname(require.resolve('dompurify')));
    const purifyPkg = JSON.parse(await readFile(path.join(purifyDir, 'package.json'), 'utf8'));
    const expected: Record<string, string> = {
      '/vendor/marked.esm.js': require.resolve('marked'),
      '/vendor/purify.es.mjs': path.join(purifyDir, purifyPkg.exports['.'].import.default),
    };
    for (const [route, file] of Object.entries(expected)) {
      const res = await fetch(server.url + route);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/javascript/);
      const served = Buffer.from(await res.arrayBuffer());
      expect(served.equals(await readFile(file))).toBe(true);
      expect(served.toString()).toMatch(/\bexport\s*\{/);
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
    // What is stored: the snapshots and the state journal they trail (SPEC §5).
    const stored = await storedStateText(server.dataDir);
    expect(stored).not.toContain(agent.token);
    expect(stored).not.toContain(user.token);
    expect(stored).not.toContain('secret-pw');
    const users = await storedRecords(server.dataDir, 'users');
    expect(JSON.stringify(users.find((u) => u.name === '小明'))).toMatch(/scrypt\$/);
  });

  it('rejects bad names', async () => {
    for (const name of ['', 'has space', 'at@sign', 'x'.repeat(33)]) {
      await expectError(server.call('register_agent', { name }), 400, 'validation_error');
    }
    await server.ok('register_agent', { name: 'Agent_1.b-c' });
  });

  it('counts characters as code points after NFC, as the contract does (emoji, decomposed letters)', async () => {
    // 32 letters once composed, 64 code points as typed (e + U+0301): a valid name, stored NFC.
    const decomposed = 'e\u0301'.repeat(32);
    const agent = await server.ok('register_agent', { name: decomposed });
    expect(agent.agent.name).toBe('\u00e9'.repeat(32));
    await expectError(server.call('register_agent', { name: 'e\u0301'.repeat(33) }), 400, 'validation_error');
    // introduce ≤ 500 characters, capabilities entries ≤ 50: an emoji is one character.
    const withEmoji = await server.ok('register_agent', { name: 'EmojiProfile', introduce: '😀'.repeat(500), capabilities: ['🚀'.repeat(50)] });
    expect([...withEmoji.agent.introduce]).toHaveLength(500);
    await expectError(server.call('register_agent', { name: 'EmojiProfile2', introduce: '😀'.repeat(501) }), 400, 'validation_error');
    await expectError(server.call('register_agent', { name: 'EmojiProfile3', capabilities: ['🚀'.repeat(51)] }), 400, 'validation_error');
    // skip_response reason ≤ 200 and set_activity note ≤ 100, in characters too.
    const owner = await registerUser(server, 'EmojiOwner');
    const room = await createRoomWith(server, owner, 'Emoji limits', [{ token: withEmoji.token }]);
    const note = await server.ok('set_activity', { room_id: room.room_id, activity: 'thinking', note: '🤔'.repeat(100) }, withEmoji.token);
    expect(note.member.note).toBe('🤔'.repeat(100));
    await expectError(server.call('set_activity', { room_id: room.room_id, activity: 'thinking', note: '🤔'.repeat(101) }, withEmoji.token), 400, 'validation_error');
    await expectError(server.call('skip_response', { room_id: room.room_id, reason: '😀'.repeat(201) }, withEmoji.token), 400, 'validation_error');
    const skip = await server.call('skip_response', { room_id: room.room_id, reason: '😀'.repeat(200) }, withEmoji.token);
    expect(skip.body.ok ? 'ok' : skip.body.error.code).not.toBe('validation_error');
  });

  it('logs in with a password, rotates tokens', async () => {
    const user = await registerUser(server, 'Lin', 'pw-123456');
    await expectError(server.call('login', { name: 'Lin', password: 'wrong' }), 403, 'wrong_password');
    const login = await server.ok('login', { name: 'lin', password: 'pw-123456' });
    expect(login.participant).toMatchObject({ name: 'Lin', kind: 'user', id: user.id, user_id: user.id });
    expect(login.token).not.toBe(user.token);
    // Both browsers stay logged in.
    await server.ok('list_rooms', {}, user.token);
    await server.ok('list_rooms', {}, login.token);
    const rotated = await server.ok('rotate_token', {}, login.token);
    await expectError(server.call('list_rooms', {}, login.token), 401, 'unauthorized');
    await server.ok('list_rooms', {}, rotated.token);
    const check = await server.ok('login', { token: rotated.token });
    expect(check.participant).toMatchObject({ name: 'Lin', user_id: user.id });
    await expectError(server.call('login', { token: 'act_bad' }), 401, 'unauthorized');
    await expectError(server.call('login', {}), 400, 'validation_error');
    // A client still sending the rotated token in its header may log in and register anew
    // (these tools take no token); the rotated token itself still opens nothing.
    const again = await server.ok('login', { name: 'Lin', password: 'pw-123456' }, login.token);
    expect(again.participant).toMatchObject({ name: 'Lin', user_id: user.id });
    expect((await server.ok('register_agent', { name: 'Lin_bot' }, login.token)).agent.name).toBe('Lin_bot');
    await expectError(server.call('login', { token: login.token }), 401, 'unauthorized');
  });

  it("login answers the participant's whole public record, with its rooms and status", async () => {
    const person = await registerUser(server, 'Lou', 'pw-123456');
    const agent = await server.ok('register_agent', { name: 'Lou_bot', introduce: 'reviews', capabilities: ['review'] });
    const room = await createRoomWith(server, person, 'Login room', [{ token: agent.token }]);
    const asAgent = await server.ok('login', { token: agent.token });
    expect(asAgent.participant).toMatchObject({
      kind: 'agent',
      id: agent.agent_id,
      agent_id: agent.agent_id,
      name: 'Lou_bot',
      role: 'ai_agent',
      introduce: 'reviews',
      capabilities: ['review'],
      rooms: [room.room_id],
      status: 'online', // it joined a room a moment ago (SPEC §6: a call within 90 s)
    });
    // SPEC §4: `busy` while it has reported an activity (set_activity), online again at idle.
    await server.ok('set_activity', { room_id: room.room_id, activity: 'working', note: 'tests' }, agent.token);
    expect((await server.ok('login', { token: agent.token })).participant.status).toBe('busy');
    await server.ok('set_activity', { room_id: room.room_id, activity: 'idle' }, agent.token);
    expect((await server.ok('login', { token: agent.token })).participant.status).toBe('online');
    const asPerson = await server.ok('login', { name: 'Lou', password: 'pw-123456' });
    expect(asPerson.participant).toMatchObject({ kind: 'user', user_id: person.id, name: 'Lou', has_password: true, rooms: [room.room_id] });
    // Secrets never leave the server.
    for (const answer of [asAgent, asPerson]) {
      expect(JSON.stringify(answer.participant)).not.toMatch(/token_hash|password_hash|tokenHash/);
    }
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
    expect(room.settings).toEqual({ display_time_format: '24h', display_date_format: 'yyyy-MM-dd', max_auto_rounds: 3, turn_timeout_ms: null });

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
    expect(await storedStateText(server.dataDir)).not.toContain('open-sesame');
    const rooms = await storedRecords(server.dataDir, 'rooms');
    expect(rooms.find((r) => r.room_id === room.room_id)?.password_hash).toMatch(/^scrypt\$/);
  });

  it('lets admins pause and announce; others get forbidden', async () => {
    const { room, members: [owner, agent] } = await roomWithNewMembers(server, 'Admin Room', { Owner4: 'user', Agent4: 'agent' });
    await expectError(server.call('set_room_status', { room_id: room.room_id, system_status: 'paused' }, agent.token), 403, 'forbidden');
    await expectError(server.call('set_announcement', { room_id: room.room_id, user_announcement: 'x' }, agent.token), 403, 'forbidden');
    const paused = await server.ok('set_room_status', { room_id: room.room_id, system_status: 'paused' }, owner.token);
    expect(paused.room.system_status).toBe('paused');
    const announced = await server.ok('set_announcement', { room_id: room.room_id, user_announcement: '请简短发言' }, owner.token);
    expect(announced.room.announcement).toMatchObject({ user_announcement: '请简短发言', announcement_publisher: 'Owner4' });
    await expectError(server.call('set_room_status', { room_id: room.room_id, system_status: 'sleeping' }, owner.token), 400, 'validation_error');
  });

  it('hands the host flag to the longest-standing member when the host leaves', async () => {
    const { room, members: [a, b, c] } = await roomWithNewMembers(server, { room_name: 'Host Room', interaction_mode: 'host' }, { HostA: 'user', HostB: 'agent', HostC: 'agent' });
    // SPEC §7 lists `password?` for leave_room too: accepted (and not needed).
    await server.ok('leave_room', { room_id: room.room_id, password: 'unused' }, a.token);
    const after = await server.ok('get_room', { room_id: room.room_id }, c.token);
    expect(after.room.members.map((m: { name: string; is_host: boolean }) => [m.name, m.is_host])).toEqual([
      ['HostB', true],
      ['HostC', false],
    ]);
  });
});

describe('messages', () => {
  it('stores every field of the contract, parses mentions, and is idempotent by client_msg_id', async () => {
    const { room, members: [owner, bot, bot2] } = await roomWithNewMembers(server, 'Msg Room', { Mia: 'user', 'Bot.One': 'agent', Bot: 'agent' });
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
      text_content: '你好 @bot.one，还有@BOT。',
      // The rest as a plain message (no translation, file, reply or round; visible, not deleted).
      // The mentions start a round at once, and a round marks every earlier message processed,
      // this one included; a person's message outside a running round belongs to no round.
      ...plainMessageFields(),
      mentions: ['Bot.One', 'Bot'],
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
      const { message } = await small.ok('send_message', { room_id: room.room_id, text_content: '一二三四五六七八九十' }, owner.token);
      await expectError(small.call('edit_message', { message_id: message.message_id, text_content: '一二三四五六七八九十一' }, owner.token), 413, 'payload_too_large');
    } finally {
      await small.stop();
    }
  });

  it('edits, gets whole, searches (Chinese, case-insensitive) and builds context', async () => {
    const { room, members: [owner, other] } = await roomWithNewMembers(server, 'Search Room', { Zoe: 'user', Yan: 'user' });
    const outsider = await registerUser(server, 'Xu');
    const first = (await server.ok('send_message', { room_id: room.room_id, text_content: 'Hello World' }, owner.token)).message;
    await server.ok('send_message', { room_id: room.room_id, text_content: '我们讨论一下架构设计' }, other.token);
    const long = 'L'.repeat(2500);
    const longMsg = (await server.ok('send_message', { room_id: room.room_id, text_content: long, response_to: first.message_id }, other.token)).message;

    const edited = await server.ok('edit_message', { message_id: first.message_id, text_content: 'Hello again' }, owner.token);
    expect(edited.message.text_content).toBe('Hello again');
    await expectError(server.call('edit_message', { message_id: first.message_id, text_content: 'hijack' }, other.token), 403, 'forbidden');
    await expectError(server.call('get_full_message', { message_id: first.message_id }, outsider.token), 404, 'message_not_found');
    await expectError(server.call('get_full_message', { message_id: 'not-a-uuid' }, owner.token), 404, 'message_not_found');

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

    // The 2000-character cut counts characters (code points), never splitting an emoji.
    const emoji = '🙂'.repeat(2100);
    await server.ok('send_message', { room_id: room.room_id, text_content: emoji }, owner.token);
    const exact = '🙂'.repeat(2000);
    await server.ok('send_message', { room_id: room.room_id, text_content: exact }, owner.token);
    const again = await server.ok('get_context', { room_id: room.room_id }, other.token);
    const [cutEmoji, whole2000] = again.messages.slice(-2);
    expect(cutEmoji.truncated).toBe(true);
    expect(cutEmoji.text_content).toBe('🙂'.repeat(2000));
    expect(whole2000.truncated).toBeUndefined();
    expect(whole2000.text_content).toBe(exact);
  });

  it('forbids people when user participation is off, but not admins', async () => {
    const { room, members: [owner, guest] } = await roomWithNewMembers(server, { room_name: 'Agents Only', user_participation: false }, { Pat: 'user', Quinn: 'user' });
    await expectError(server.call('send_message', { room_id: room.room_id, text_content: 'hi' }, guest.token), 403, 'forbidden');
    await server.ok('send_message', { room_id: room.room_id, text_content: 'admin speaks' }, owner.token);
  });
});

describe('error codes', () => {
  it('edit_message: forbidden on an engine record (SPEC v2 §7), conflict on a deleted message, message_not_found for a non-member, validation_error for empty text', async () => {
    const { room, members: [owner, agent] } = await roomWithNewMembers(server, 'Edit Errors', { EditOwner: 'user', EditBot: 'agent' });
    const outsider = await registerUser(server, 'EditOutsider');
    await server.ok('start_round', { room_id: room.room_id }, owner.token);
    await server.ok('skip_response', { room_id: room.room_id }, agent.token);
    const { messages } = await server.ok('get_messages', { room_id: room.room_id, after_seq: 0 }, owner.token);
    const record = messages.find((m: { skip_reason: string | null }) => m.skip_reason === 'skip');
    expect(record).toMatchObject({ sender: 'EditBot', visible: false });
    await expectError(server.call('edit_message', { message_id: record.message_id, text_content: 'rewritten' }, agent.token), 403, 'forbidden');
    await expectError(server.call('delete_message', { message_id: record.message_id }, owner.token), 403, 'forbidden');

    const { message } = await server.ok('send_message', { room_id: room.room_id, text_content: 'to delete' }, owner.token);
    await expectError(server.call('edit_message', { message_id: message.message_id, text_content: '' }, owner.token), 400, 'validation_error');
    await expectError(server.call('edit_message', { message_id: message.message_id, text_content: ' \n ' }, owner.token), 400, 'validation_error');
    await expectError(server.call('edit_message', { message_id: message.message_id, text_content: 'mine now' }, outsider.token), 404, 'message_not_found');
    await server.ok('delete_message', { message_id: message.message_id }, owner.token);
    await expectError(server.call('edit_message', { message_id: message.message_id, text_content: 'back' }, owner.token), 409, 'conflict');
  });

  it('join_room, leave_room, set_room_status and set_announcement name the room or membership problem', async () => {
    const owner = await registerUser(server, 'RoomErrOwner');
    const outsider = await registerUser(server, 'RoomErrOutsider');
    const { room } = await server.ok('create_room', { room_name: 'Room Errors' }, owner.token);
    await expectError(server.call('join_room', { room_id: 'missing-room-20250101000000-abcdefgh' }, outsider.token), 404, 'room_not_found');
    await expectError(server.call('leave_room', { room_id: room.room_id }, outsider.token), 403, 'not_a_member');
    await expectError(server.call('set_room_status', { room_id: room.room_id, system_status: 'paused' }, outsider.token), 403, 'not_a_member');
    await expectError(server.call('set_announcement', { room_id: room.room_id, user_announcement: 'x' }, outsider.token), 403, 'not_a_member');
    await expectError(
      server.call('set_announcement', { room_id: room.room_id, user_announcement: 'x'.repeat(2001) }, owner.token),
      400,
      'validation_error',
    );
    await expectError(server.call('search_messages', { room_id: room.room_id, query: '' }, owner.token), 400, 'validation_error');
  });

  it('answers an id that cannot exist like an unknown one (room_not_found, message_not_found); a missing or non-string id is a validation_error', async () => {
    const owner = await registerUser(server, 'IdShapeOwner');
    for (const room_id of ['does_not_exist', 'No-Such-Room', '../../etc/passwd', 'x'.repeat(500), '']) {
      await expectError(server.call('get_room', { room_id }, owner.token), 404, 'room_not_found');
      await expectError(server.call('join_room', { room_id }, owner.token), 404, 'room_not_found');
      await expectError(server.call('get_messages', { room_id }, owner.token), 404, 'room_not_found');
    }
    for (const message_id of ['fake-message', '123', '../x']) {
      await expectError(server.call('get_full_message', { message_id }, owner.token), 404, 'message_not_found');
      await expectError(server.call('edit_message', { message_id, text_content: 'x' }, owner.token), 404, 'message_not_found');
    }
    await expectError(server.call('get_room', {}, owner.token), 400, 'validation_error');
    await expectError(server.call('get_room', { room_id: 42 }, owner.token), 400, 'validation_error');
    // Another fault beside the id keeps it a validation_error (the argument is wrong whatever the id).
    await expectError(server.call('send_message', { room_id: 'does_not_exist', text_content: 42 }, owner.token), 400, 'validation_error');
    // The upload route answers the same.
    const upload = await fetch(`${server.url}/api/v1/rooms/does_not_exist/uploads`, { method: 'POST', headers: { authorization: `Bearer ${owner.token}` } });
    expect(upload.status).toBe(404);
    expect(((await upload.json()) as { error: { code: string } }).error.code).toBe('room_not_found');
  });

  it('register_user refuses bad names; login refuses unknown names and agents with wrong_password', async () => {
    for (const name of ['has space', 'at@sign', '', 'x'.repeat(33)]) {
      await expectError(server.call('register_user', { name }), 400, 'validation_error');
    }
    await registerAgent(server, 'LoginAgent');
    await expectError(server.call('login', { name: 'NeverRegistered', password: 'whatever' }), 403, 'wrong_password');
    await expectError(server.call('login', { name: 'LoginAgent', password: 'whatever' }), 403, 'wrong_password');
  });
});

describe('fields', () => {
  // SPEC §4 names the fields; the server adds only these (listed so that any new or missing
  // field fails here): members carry their participant id and join time (host succession),
  // participants their creation time, people their rooms, last_active and has_password.
  const ROOM = [
    'room_id', 'room_name', 'room_description', 'created_at', 'created_by', 'has_password', 'interaction_mode',
    'user_participation', 'system_status', 'language', 'timezone', 'members', 'announcement', 'current_round',
    'history_rounds', 'settings', 'archived',
  ];
  const MEMBER = [
    'name', 'role', 'introduce', 'status', 'last_active', 'is_host', 'skip_list', 'language_preference', 'timezone_preference',
    'participant_id', 'joined_at',
  ];
  const AGENT = [
    'agent_id', 'name', 'introduce', 'rooms', 'status', 'last_active', 'capabilities', 'skip_list', 'language_support',
    'preferred_language', 'timezone', 'created_at',
  ];
  const USER = ['user_id', 'name', 'language', 'timezone', 'has_password', 'rooms', 'last_active', 'created_at'];
  const keys = (o: object) => Object.keys(o).sort();

  it('returns exactly the SPEC §4 fields of rooms, members, agents and people', async () => {
    const agent = await server.ok('register_agent', { name: 'FieldsBot' });
    const user = await server.ok('register_user', { name: 'FieldsUser' });
    const { room } = await server.ok('create_room', { room_name: 'Fields' }, user.token);
    expect(keys(room)).toEqual([...ROOM].sort());
    expect(keys(room.members[0])).toEqual([...MEMBER].sort());
    expect(keys(room.announcement)).toEqual(['announcement_publisher', 'system_announcement', 'timestamp', 'user_announcement']);
    expect(keys(agent.agent)).toEqual([...AGENT].sort());
    expect(keys(user.user)).toEqual([...USER].sort());
  });
});

describe('display times', () => {
  it('shows get_context display_time in the room timezone', async () => {
    const owner = await registerUser(server, 'TzOwner');
    const guest = await registerUser(server, 'TzGuest');
    // Zones without daylight saving, so the expected time is the UTC time plus a literal offset
    // (no time-zone library in the expectation): the default Asia/Shanghai (+8) and Asia/Kolkata
    // (+5:30, a half hour that a whole-hour mistake cannot match).
    const offsets = new Map<string | undefined, [string, number]>([
      [undefined, ['Asia/Shanghai', 8 * 60]],
      ['Asia/Kolkata', ['Asia/Kolkata', 5 * 60 + 30]],
    ]);
    for (const [timezone, [zone, offsetMinutes]] of offsets) {
      const { room } = await server.ok('create_room', { room_name: 'Time Zone', ...(timezone ? { timezone } : {}) }, owner.token);
      expect(room.timezone).toBe(zone);
      await server.ok('join_room', { room_id: room.room_id }, guest.token);
      const { message } = await server.ok('send_message', { room_id: room.room_id, text_content: 'what time is it' }, guest.token);
      const ctx = await server.ok('get_context', { room_id: room.room_id }, owner.token);
      const shown = ctx.messages.find((m: { message_id: string }) => m.message_id === message.message_id);
      expect(shown.display_timezone).toBe(zone);
      const local = new Date(Date.parse(message.timestamp) + offsetMinutes * 60_000).toISOString(); // yyyy-MM-ddTHH:mm:ss.sssZ
      expect(shown.display_time).toBe(`${local.slice(0, 10)} ${local.slice(11, 19)}`);
    }
  });
});

describe('search, mentions, idempotency and processed', () => {
  async function roomWithAgent(prefix: string) {
    const owner = await registerUser(server, `${prefix}Owner`);
    const agent = await registerAgent(server, `${prefix}Bot`);
    const room = await createRoomWith(server, owner, prefix, [agent]);
    return { owner, agent, room };
  }
  const texts = (messages: { text_content: string }[]) => messages.map((m) => m.text_content);

  it('search_messages returns visible hits oldest first, honours limit, matches Chinese substrings and never skip records', async () => {
    const { owner, agent, room } = await roomWithAgent('Search');
    // A skip record's text is 「（跳过）」: searching 跳过 must find only the person's message.
    await server.ok('start_round', { room_id: room.room_id }, owner.token);
    await server.ok('skip_response', { room_id: room.room_id }, agent.token);
    const said = ['架构设计方案一', '无关的话', '我们不跳过这一步', '再谈设计', 'unrelated', '设计定稿'];
    for (const text_content of said) await server.ok('send_message', { room_id: room.room_id, text_content }, owner.token);

    const all = await server.ok('search_messages', { room_id: room.room_id, query: '设计' }, owner.token);
    expect(texts(all.messages)).toEqual(['架构设计方案一', '再谈设计', '设计定稿']);
    const seqs = all.messages.map((m: { seq: number }) => m.seq);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    const limited = await server.ok('search_messages', { room_id: room.room_id, query: '设计', limit: 2 }, owner.token);
    expect(texts(limited.messages)).toEqual(['架构设计方案一', '再谈设计']);
    const skipped = await server.ok('search_messages', { room_id: room.room_id, query: '跳过' }, owner.token);
    expect(texts(skipped.messages)).toEqual(['我们不跳过这一步']);
    expect(skipped.messages.every((m: { visible: boolean }) => m.visible)).toBe(true);
  });

  it('merges @mentions in the text with the mentions argument: text first, no duplicates', async () => {
    const { owner, room } = await roomWithAgent('Merge');
    const other = await registerAgent(server, 'MergeHelper');
    await server.ok('join_room', { room_id: room.room_id }, other.token);
    const { message } = await server.ok(
      'send_message',
      { room_id: room.room_id, text_content: '请 @mergehelper，看一下', mentions: ['MergeBot', '@MergeHelper'] },
      owner.token,
    );
    expect(message.mentions).toEqual(['MergeHelper', 'MergeBot']);
  });

  it('keys client_msg_id by sender: the same id from someone else is a new message', async () => {
    const { owner, room } = await roomWithAgent('Idem');
    const guest = await registerUser(server, 'IdemGuest');
    await server.ok('join_room', { room_id: room.room_id }, guest.token);
    const mine = await server.ok('send_message', { room_id: room.room_id, text_content: 'from owner', client_msg_id: 'shared-id' }, owner.token);
    const theirs = await server.ok('send_message', { room_id: room.room_id, text_content: 'from guest', client_msg_id: 'shared-id' }, guest.token);
    expect(theirs.message.message_id).not.toBe(mine.message.message_id);
    expect(theirs.message).toMatchObject({ sender: 'IdemGuest', text_content: 'from guest' });
    const { messages } = await server.ok('get_messages', { room_id: room.room_id, after_seq: 0 }, owner.token);
    expect(texts(messages.filter((m: { visible: boolean }) => m.visible))).toEqual(['from owner', 'from guest']);
  });

  it('reports processed from the room while the log line keeps processed:false (SPEC §5)', async () => {
    const { owner, room } = await roomWithAgent('Processed');
    // Mentioning an agent starts a round at once, which marks the message processed.
    const { message } = await server.ok('send_message', { room_id: room.room_id, text_content: '@ProcessedBot 开始' }, owner.token);
    const { room: running } = await server.ok('get_room', { room_id: room.room_id }, owner.token);
    expect(running.current_round).toMatchObject({ completed: false });
    const { message: reported } = await server.ok('get_full_message', { message_id: message.message_id }, owner.token);
    expect(reported.processed).toBe(true);
    const log = await readFile(path.join(server.dataDir, 'room_messages', `${room.room_id}.jsonl`), 'utf8');
    const lines = log.trim().split('\n').map((line) => JSON.parse(line) as { message_id: string; processed: boolean });
    const stored = lines.filter((line) => line.message_id === message.message_id);
    expect(stored).toHaveLength(1);
    expect(stored[0]!.processed).toBe(false);
  });
});
