// Metrics, room statistics and what the logs may contain.
import { afterEach, describe, expect, it } from 'vitest';
import { connectMcp } from '../helpers/mcp.js';
import { restCall, spawnServer, type ServerProcess } from '../helpers/process.js';
import { registerAgent, registerUser, startTestServer, tempDataDir, type TestServer } from '../helpers/server.js';
import { ManualClock } from '../helpers/clock.js';
import { eventually, TestSocket, wsUrl } from '../helpers/ws.js';

let server: TestServer | undefined;
afterEach(async () => {
  await server?.stop();
  server = undefined;
});


describe('metrics and room stats', () => {
  it('counts turns by outcome and reports per-agent stats', async () => {
    // A manual clock: A answers exactly 120 ms into its turn, C's silence times out at 1000 ms.
    const clock = new ManualClock(Date.now());
    const s = (server = await startTestServer({ turnTimeoutMs: 1000 }, { now: clock.now, timers: clock }));
    const user = await registerUser(s, 'Watcher');
    const [a, b, c] = [await registerAgent(s, 'A'), await registerAgent(s, 'B'), await registerAgent(s, 'C')];
    const { room } = await s.ok('create_room', { room_name: 'Stats' }, user.token);
    for (const agent of [a, b, c]) await s.ok('join_room', { room_id: room.room_id }, agent.token);
    await s.ok('send_message', { room_id: room.room_id, text_content: 'go' }, user.token);
    clock.advance(120);
    await s.ok('send_message', { room_id: room.room_id, text_content: 'UNIQUE-ANSWER-TEXT' }, a.token);
    await s.ok('skip_response', { room_id: room.room_id }, b.token);
    clock.advance(1000);
    await eventually(async () => {
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
    expect(byName.A.median_answer_ms).toBe(120);
    expect(byName.B).toMatchObject({ turns_answered: 0, turns_skipped: 1 });
    expect(byName.C).toMatchObject({ turns_timed_out: 1 });
    const outsider = await registerUser(s, 'Outsider');
    expect((await s.call('get_room_stats', { room_id: room.room_id }, outsider.token)).status).toBe(403);
  });
});

describe('socket metrics', () => {
  const gauge = async (s: TestServer, name: string) => {
    const text = await (await fetch(`${s.url}/api/v1/metrics`)).text();
    const match = new RegExp(`^${name} (\\d+)$`, 'm').exec(text);
    if (!match) throw new Error(`no ${name} in the metrics`);
    return Number(match[1]);
  };

  it('counts an open WebSocket and the stored rooms, and drops the socket when it closes', async () => {
    const s = (server = await startTestServer());
    const user = await registerUser(s, 'Gauge');
    expect(await gauge(s, 'chatroom_sockets')).toBe(0);
    expect(await gauge(s, 'chatroom_rooms')).toBe(0);
    await s.ok('create_room', { room_name: 'Counted' }, user.token);
    const socket = await TestSocket.connect(wsUrl(s.url), user.token);
    expect(await gauge(s, 'chatroom_sockets')).toBe(1);
    expect(await gauge(s, 'chatroom_rooms')).toBe(1);
    await socket.close();
    await eventually(async () => (await gauge(s, 'chatroom_sockets')) === 0, 5000, 'chatroom_sockets back to 0');
    expect(await gauge(s, 'chatroom_rooms')).toBe(1);
  });

  it('reports the process memory by kind', async () => {
    const s = (server = await startTestServer());
    const text = await (await fetch(`${s.url}/api/v1/metrics`)).text();
    const kind = (k: string) => {
      const match = new RegExp(`^chatroom_memory_bytes\\{kind="${k}"\\} (\\d+)$`, 'm').exec(text);
      if (!match) throw new Error(`no chatroom_memory_bytes{kind="${k}"} in the metrics`);
      return Number(match[1]);
    };
    expect(kind('rss')).toBeGreaterThan(kind('heap_used'));
    expect(kind('heap_used')).toBeGreaterThan(0);
    expect(kind('heap_used')).toBeLessThanOrEqual(kind('heap_total'));
    expect(kind('array_buffers')).toBeLessThanOrEqual(kind('external'));
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
      // The call log lines are written after the answers: wait for the fourth.
      await expect.poll(() => proc.output().split('\n').filter((l) => l.includes('"msg":"call"')).length).toBeGreaterThanOrEqual(4);
      const lines = proc.output().trim().split('\n');
      for (const line of lines) expect(() => JSON.parse(line)).not.toThrow();
      const calls = lines.map((l) => JSON.parse(l)).filter((l) => l.msg === 'call');
      expect(calls.length).toBeGreaterThanOrEqual(4);
      expect(calls.every((c) => typeof c.requestId === 'string' && c.requestId.length > 0)).toBe(true);
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

  it('name the port PORT=0 picked even at LOG_LEVEL=warn and error (SPEC §2), and log no call lines there', async () => {
    for (const level of ['warn', 'error']) {
      const proc = await spawnServer({ DATA_DIR: await tempDataDir(), LOG_LEVEL: level });
      try {
        expect(proc.port).toBeGreaterThan(0);
        expect((await fetch(`${proc.url}/api/v1/health`)).status).toBe(200);
        await restCall(proc.url, 'register_user', { name: `Quiet_${level}` });
        const lines = proc.output().trim().split('\n').map((l) => JSON.parse(l));
        expect(lines.filter((l) => l.msg?.startsWith('listening on'))).toHaveLength(1);
        expect(lines.filter((l) => l.msg === 'call')).toEqual([]);
      } finally {
        proc.child.kill('SIGTERM');
        await proc.exited;
      }
    }
  });

  it('carry a unique request id for WebSocket and MCP calls, without texts or tokens', async () => {
    const proc = await spawnServer({ DATA_DIR: await tempDataDir(), LOG_LEVEL: 'info' });
    try {
      const token = (await restCall(proc.url, 'register_user', { name: 'Wired' })).body.data.token as string;
      const room = (await restCall(proc.url, 'create_room', { room_name: 'Wire' }, token)).body.data.room;
      const socket = await TestSocket.connect(wsUrl(proc.url), token);
      const sent = await socket.call('send_message', { room_id: room.room_id, text_content: 'WS-SECRET-TEXT-7' });
      expect(sent.ok).toBe(true);
      await socket.close();
      // Two sessions whose JSON-RPC ids are the same: the request ids must still differ.
      const sessions = [await connectMcp(proc.url, { token }), await connectMcp(proc.url, { token })];
      const sessionIds: string[] = [];
      for (const mcp of sessions) {
        await mcp.ok('send_message', { room_id: room.room_id, text_content: 'MCP-SECRET-TEXT-8' });
        sessionIds.push(mcp.transport.sessionId!);
        await mcp.close();
      }

      const callLines = () => logLines(proc).filter((l) => l.msg === 'call' && l.tool === 'send_message');
      await eventually(() => callLines().length >= 3, 5000, 'the call log lines');
      const ws = callLines().filter((l) => l.transport === 'ws');
      const mcp = callLines().filter((l) => l.transport === 'mcp');
      expect(ws).toHaveLength(1);
      expect(ws[0].requestId).toMatch(/^ws-.+-t1$/);
      expect(mcp.map((l) => l.requestId)).toEqual(sessionIds.map((id) => expect.stringMatching(new RegExp(`^mcp-${id}-\\d+$`))));
      expect(new Set(mcp.map((l) => l.requestId)).size).toBe(2);
      for (const line of [...ws, ...mcp]) expect(line.outcome).toBe('ok');
      const all = proc.output();
      expect(all).not.toContain('SECRET-TEXT');
      expect(all).not.toContain(token);
    } finally {
      proc.child.kill('SIGTERM');
      await proc.exited;
    }
  });
});

/** The complete JSON log lines a server process printed so far. */
function logLines(proc: ServerProcess): any[] {
  const output = proc.output();
  return output
    .slice(0, output.lastIndexOf('\n'))
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line));
}

describe('process, event-loop and disk metrics (SPEC §2)', () => {
  it('carries CPU seconds, event-loop delay and the free bytes of the DATA_DIR disk', async () => {
    const s = (server = await startTestServer());
    const text = await (await fetch(`${s.url}/api/v1/metrics`)).text();
    const value = (name: string): number => {
      const match = new RegExp(`^${name} ([0-9.e+-]+)$`, 'm').exec(text);
      if (!match) throw new Error(`no ${name} in the metrics`);
      return Number(match[1]);
    };
    expect(value('process_cpu_seconds_total')).toBeGreaterThan(0);
    expect(value('process_cpu_user_seconds_total')).toBeGreaterThan(0);
    expect(text).toMatch(/^nodejs_eventloop_lag_p99_seconds [0-9.e+-]+$/m);
    expect(text).toMatch(/^nodejs_eventloop_lag_seconds [0-9.e+-]+$/m);
    const free = value('chatroom_data_dir_free_bytes');
    const { statfs } = await import('node:fs/promises');
    const disk = await statfs(s.dataDir);
    expect(free).toBeGreaterThan(0);
    // The same disk: within what other writers on the machine change between the two reads.
    expect(Math.abs(free - disk.bavail * disk.bsize)).toBeLessThan(disk.blocks * disk.bsize * 0.05);
  });
});
