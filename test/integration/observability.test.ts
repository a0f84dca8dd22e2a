// Metrics, room statistics and what the logs may contain.
import { afterEach, describe, expect, it } from 'vitest';
import { restCall, spawnServer } from '../helpers/process.js';
import { registerAgent, registerUser, startTestServer, tempDataDir, type TestServer } from '../helpers/server.js';

let server: TestServer | undefined;
afterEach(async () => {
  await server?.stop();
  server = undefined;
});

const until = async (check: () => Promise<boolean> | boolean, ms = 5000) => {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 25));
  }
};

describe('metrics and room stats', () => {
  it('counts turns by outcome and reports per-agent stats', async () => {
    const s = (server = await startTestServer({ turnTimeoutMs: 1000 }));
    const user = await registerUser(s, 'Watcher');
    const [a, b, c] = [await registerAgent(s, 'A'), await registerAgent(s, 'B'), await registerAgent(s, 'C')];
    const { room } = await s.ok('create_room', { room_name: 'Stats' }, user.token);
    for (const agent of [a, b, c]) await s.ok('join_room', { room_id: room.room_id }, agent.token);
    await s.ok('send_message', { room_id: room.room_id, text_content: 'go' }, user.token);
    await new Promise((r) => setTimeout(r, 120));
    await s.ok('send_message', { room_id: room.room_id, text_content: 'UNIQUE-ANSWER-TEXT' }, a.token);
    await s.ok('skip_response', { room_id: room.room_id }, b.token);
    await until(async () => {
      const page = await s.ok('get_messages', { room_id: room.room_id }, user.token);
      return page.messages.some((m: { skip_reason: string }) => m.skip_reason === 'timeout');
    });

    const text = await (await fetch(`${s.url}/api/v1/metrics`)).text();
    expect(text).toMatch(/chatroom_turns_total\{outcome="answered"\} 1/);
    expect(text).toMatch(/chatroom_turns_total\{outcome="skipped"\} 1/);
    expect(text).toMatch(/chatroom_turns_total\{outcome="timed_out"\} 1/);
    expect(text).toMatch(/chatroom_turns_total\{outcome="issued"\} [3-9]/);
    expect(text).toMatch(/chatroom_storage_append_seconds_count \d+/);
    expect(text).toMatch(/chatroom_broadcast_seconds_bucket/);
    expect(text).toMatch(/chatroom_tool_calls_total\{tool="send_message",transport="rest",outcome="ok"\} 2/);
    expect(text).toMatch(/chatroom_messages \d+/);
    expect(text).not.toContain('UNIQUE-ANSWER-TEXT');

    const { stats } = await s.ok('get_room_stats', { room_id: room.room_id }, user.token);
    const byName = Object.fromEntries(stats.agents.map((x: { name: string }) => [x.name, x]));
    expect(byName.A).toMatchObject({ turns_answered: 1, turns_skipped: 0, turns_timed_out: 0 });
    expect(byName.A.median_answer_ms).toBeGreaterThanOrEqual(100);
    expect(byName.B).toMatchObject({ turns_answered: 0, turns_skipped: 1 });
    expect(byName.C).toMatchObject({ turns_timed_out: 1 });
    const outsider = await registerUser(s, 'Outsider');
    expect((await s.call('get_room_stats', { room_id: room.room_id }, outsider.token)).status).toBe(403);
  });
});

describe('logs', () => {
  it('are JSON lines with request ids, and hold no message texts or tokens at info level', async () => {
    const proc = await spawnServer({ DATA_DIR: await tempDataDir(), LOG_LEVEL: 'info' });
    try {
      const reg = await restCall(proc.url, 'register_user', { name: 'Logger', password: 'hunter2-secret' });
      const token = reg.body.data.token as string;
      const room = (await restCall(proc.url, 'create_room', { room_name: 'Logs' }, token)).body.data.room;
      await restCall(proc.url, 'send_message', { room_id: room.room_id, text_content: 'TOP-SECRET-TEXT-42' }, token);
      await restCall(proc.url, 'send_message', { room_id: 'no-such-room', text_content: 'TOP-SECRET-TEXT-43' }, token);
      await new Promise((r) => setTimeout(r, 200));
      const lines = proc.output().trim().split('\n');
      for (const line of lines) expect(() => JSON.parse(line)).not.toThrow();
      const calls = lines.map((l) => JSON.parse(l)).filter((l) => l.msg === 'call');
      expect(calls.length).toBeGreaterThanOrEqual(4);
      expect(calls.every((c) => typeof c.reqId === 'string' && c.reqId.length > 0)).toBe(true);
      expect(calls.some((c) => c.tool === 'send_message' && c.outcome === 'room_not_found')).toBe(true);
      const all = proc.output();
      expect(all).not.toContain('TOP-SECRET-TEXT');
      expect(all).not.toContain(token);
      expect(all).not.toContain('hunter2-secret');
    } finally {
      proc.child.kill('SIGTERM');
      await proc.exited;
    }
  });
});
