// SPEC v3 §4 and §7: fields that do something. get_context reports `omitted`; `skip_list`
// phrases are skips; `capabilities` are shown in get_context members; `system_announcement`
// is the room's standing notice (paused by whom, guard tripped, no agent online).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerUser, startTestServer, type TestServer } from '../helpers/server.js';

let server: TestServer;

beforeAll(async () => {
  server = await startTestServer({ turnTimeoutMs: 60_000 });
});
afterAll(async () => {
  await server.stop();
});

async function agent(name: string, extra: Record<string, unknown> = {}) {
  const data = await server.ok('register_agent', { name, ...extra });
  return { token: data.token as string, name };
}

describe('get_context omitted', () => {
  it('70 unread: the newest 50 and omitted 20; limit 200: all 70 and omitted 0', async () => {
    const person = await registerUser(server, 'Talker');
    const reader = await agent('Reader');
    const { room } = await server.ok('create_room', { room_name: 'Long backlog' }, person.token);
    await server.ok('join_room', { room_id: room.room_id }, reader.token);
    // Paused: the reader's turns do not interleave with the backlog.
    await server.ok('set_room_status', { room_id: room.room_id, system_status: 'paused' }, person.token);
    for (let i = 1; i <= 70; i++) await server.ok('send_message', { room_id: room.room_id, text_content: `message ${i}` }, person.token);

    const ctx = await server.ok('get_context', { room_id: room.room_id }, reader.token);
    expect(ctx.messages).toHaveLength(50);
    expect(ctx.omitted).toBe(20);
    expect(ctx.messages[0].text_content).toBe('message 21');
    expect(ctx.messages[49].text_content).toBe('message 70');

    const all = await server.ok('get_context', { room_id: room.room_id, limit: 200 }, reader.token);
    expect(all.messages).toHaveLength(70);
    expect(all.omitted).toBe(0);

    // Since the caller's last message only: after it speaks, older ones are not counted.
    await server.ok('set_room_status', { room_id: room.room_id, system_status: 'active' }, person.token);
    await expect.poll(async () => (await server.ok('get_context', { room_id: room.room_id }, reader.token)).your_turn).not.toBeNull();
    await server.ok('send_message', { room_id: room.room_id, text_content: 'caught up' }, reader.token);
    await server.ok('send_message', { room_id: room.room_id, text_content: 'one more' }, person.token);
    const after = await server.ok('get_context', { room_id: room.room_id }, reader.token);
    expect(after.messages.map((m: any) => m.text_content)).toEqual(['one more']);
    expect(after.omitted).toBe(0);
  });

  it('wait_for_turn says how many earlier messages were not shown', async () => {
    const person = await registerUser(server, 'Waiter');
    const waiter = await agent('WaitAgent');
    const { room } = await server.ok('create_room', { room_name: 'Wait backlog', language: 'en' }, person.token);
    await server.ok('join_room', { room_id: room.room_id }, waiter.token);
    await server.ok('set_room_status', { room_id: room.room_id, system_status: 'paused' }, person.token);
    for (let i = 1; i <= 53; i++) await server.ok('send_message', { room_id: room.room_id, text_content: `m${i}` }, person.token);
    await server.ok('set_room_status', { room_id: room.room_id, system_status: 'active' }, person.token);
    const turn = await server.ok('wait_for_turn', { room_id: room.room_id, timeout_s: 10 }, waiter.token);
    expect(turn.your_turn).not.toBeNull();
    expect(turn.context.omitted).toBe(3);
    expect(turn.notice).toContain('3 earlier messages not shown');
    expect(turn.notice).toContain('get_messages');
  });
});

describe('skip_list', () => {
  it('"pass" from an agent whose skip_list holds "PASS" is one invisible skip record and the turn moves on', async () => {
    const person = await registerUser(server, 'Asker');
    const passer = await agent('Passer', { skip_list: ['PASS', '没有补充'] });
    const other = await agent('Other');
    const { room } = await server.ok('create_room', { room_name: 'Pass phrases' }, person.token);
    await server.ok('join_room', { room_id: room.room_id }, passer.token);
    await server.ok('join_room', { room_id: room.room_id }, other.token);
    await server.ok('send_message', { room_id: room.room_id, text_content: 'anyone?' }, person.token);
    expect((await server.ok('get_context', { room_id: room.room_id }, passer.token)).your_turn).not.toBeNull();

    const answer = await server.ok('send_message', { room_id: room.room_id, text_content: '  pass ' }, passer.token);
    expect(answer.skipped).toBe(true);
    expect(answer.message).toMatchObject({ visible: false, skip_reason: 'skip', sender: 'Passer' });
    const { messages } = await server.ok('get_messages', { room_id: room.room_id }, person.token);
    const fromPasser = messages.filter((m: any) => m.sender === 'Passer');
    expect(fromPasser).toHaveLength(1);
    expect(fromPasser[0]).toMatchObject({ visible: false, skip_reason: 'skip' });
    expect(messages.some((m: any) => /pass/i.test(m.text_content) && m.visible)).toBe(false);
    const ctx = await server.ok('get_context', { room_id: room.room_id }, other.token);
    expect(ctx.room.current_agent).toBe('Other');
    expect(ctx.your_turn).not.toBeNull();
  });

  it('a pass phrase in a turn that cannot be skipped answers cannot_skip and stores nothing', async () => {
    const person = await registerUser(server, 'Mentioner');
    const passer = await agent('MentionedPasser', { skip_list: ['pass'] });
    const { room } = await server.ok('create_room', { room_name: 'Cannot pass' }, person.token);
    await server.ok('join_room', { room_id: room.room_id }, passer.token);
    await server.ok('send_message', { room_id: room.room_id, text_content: '@MentionedPasser what do you think?' }, person.token);
    const before = (await server.ok('get_messages', { room_id: room.room_id }, person.token)).messages.length;
    const refused = await server.call('send_message', { room_id: room.room_id, text_content: 'PASS' }, passer.token);
    expect(refused.status).toBe(409);
    expect(refused.body.ok).toBe(false);
    if (!refused.body.ok) expect(refused.body.error.code).toBe('cannot_skip');
    expect((await server.ok('get_messages', { room_id: room.room_id }, person.token)).messages).toHaveLength(before);
    expect((await server.ok('get_context', { room_id: room.room_id }, passer.token)).your_turn).not.toBeNull();
    // A text that only contains the phrase is an ordinary answer.
    const posted = await server.ok('send_message', { room_id: room.room_id, text_content: 'I pass on that, but here is why' }, passer.token);
    expect(posted.message.visible).toBe(true);
  });
});

describe('capabilities', () => {
  it('are shown in get_context members; a room\'s members keep exactly the SPEC §4 fields', async () => {
    const person = await registerUser(server, 'CapPerson');
    const coder = await agent('Coder', { capabilities: ['typescript', 'code review'] });
    const { room } = await server.ok('create_room', { room_name: 'Capable' }, person.token);
    await server.ok('join_room', { room_id: room.room_id }, coder.token);
    const ctx = await server.ok('get_context', { room_id: room.room_id }, person.token);
    expect(ctx.members.find((m: any) => m.name === 'Coder').capabilities).toEqual(['typescript', 'code review']);
    expect(ctx.members.find((m: any) => m.name === 'CapPerson').capabilities).toEqual([]);
    const got = await server.ok('get_room', { room_id: room.room_id }, person.token);
    expect(got.room.members.find((m: any) => m.name === 'Coder')).not.toHaveProperty('capabilities');
  });
});

describe('system_announcement', () => {
  it('pausing sets it naming the person, resuming clears it, with room_update', async () => {
    const person = await registerUser(server, 'Pauser');
    const bot = await agent('PausedBot');
    const { room } = await server.ok('create_room', { room_name: 'Standing notice' }, person.token);
    await server.ok('join_room', { room_id: room.room_id }, bot.token);
    expect(room.announcement.system_announcement).toBe('');
    const paused = await server.ok('set_room_status', { room_id: room.room_id, system_status: 'paused' }, person.token);
    expect(paused.room.announcement.system_announcement).toContain('Pauser');
    expect(paused.room.announcement.system_announcement).toMatch(/[\u4e00-\u9fff]/);
    const ctx = await server.ok('get_context', { room_id: room.room_id }, bot.token);
    expect(ctx.room.announcement.system_announcement).toContain('Pauser');
    const resumed = await server.ok('set_room_status', { room_id: room.room_id, system_status: 'active' }, person.token);
    expect(resumed.room.announcement.system_announcement).toBe('');
  });

  it('is English in an English room and says when the guard tripped', async () => {
    const person = await registerUser(server, 'GuardPerson');
    const bot = await agent('GuardBot');
    const { room } = await server.ok('create_room', { room_name: 'Guard notice', language: 'en' }, person.token);
    await server.ok('join_room', { room_id: room.room_id }, bot.token);
    const paused = await server.ok('set_room_status', { room_id: room.room_id, system_status: 'paused' }, person.token);
    expect(paused.room.announcement.system_announcement).toBe('The room was paused by GuardPerson; agents do not speak until it is resumed.');
    await server.ok('set_room_status', { room_id: room.room_id, system_status: 'active' }, person.token);
    await server.ok('update_room', { room_id: room.room_id, max_auto_rounds: 1 }, person.token);
    await server.ok('send_message', { room_id: room.room_id, text_content: 'go' }, person.token);
    await server.ok('send_message', { room_id: room.room_id, text_content: 'done' }, bot.token);
    const tripped = await server.ok('get_room', { room_id: room.room_id }, person.token);
    expect(tripped.room.announcement.system_announcement).toMatch(/round limit/);
    // A person's message resets the guard: the notice goes.
    await server.ok('send_message', { room_id: room.room_id, text_content: 'again' }, person.token);
    const reset = await server.ok('get_room', { room_id: room.room_id }, person.token);
    expect(reset.room.announcement.system_announcement).toBe('');
  });
});
