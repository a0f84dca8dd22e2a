// "Acknowledged means durable": SIGKILL the real server right after acks, restart, compare (the
// 300-send test is in test/suites/durability.ts, shared with the PostgreSQL run); the file
// store's start-up checks.
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { CLI, restCall, runCli, spawnServer, userWithRoom } from '../helpers/process.js';
import { durabilitySuites } from '../suites/durability.js';

durabilitySuites();

async function tempDir() {
  return mkdtemp(path.join(os.tmpdir(), 'chatroom-durable-'));
}

describe('durability', () => {
  it('answers a client_msg_id retry after a restart with the first message and writes nothing', async () => {
    const dataDir = await tempDir();
    const first = await spawnServer({ DATA_DIR: dataDir });
    const { user, room } = await userWithRoom(first.url, 'Retry', 'Retry');
    const sent = await restCall(first.url, 'send_message', { room_id: room.room_id, text_content: 'once', client_msg_id: 'retry-1' }, user.token);
    // The acknowledgement was lost with the server: the client retries on the next one.
    first.child.kill('SIGKILL');
    await first.exited;
    const log = path.join(dataDir, 'room_messages', `${room.room_id}.jsonl`);
    const before = await readFile(log, 'utf8');

    const second = await spawnServer({ DATA_DIR: dataDir });
    try {
      const retry = await restCall(second.url, 'send_message', { room_id: room.room_id, text_content: 'once again', client_msg_id: 'retry-1' }, user.token);
      expect(retry.body.data.message).toEqual(sent.body.data.message);
      expect(await readFile(log, 'utf8')).toBe(before);
      const page = await restCall(second.url, 'get_messages', { room_id: room.room_id, after_seq: 0 }, user.token);
      expect(page.body.data.messages.map((m: { text_content: string }) => m.text_content)).toEqual(['once']);
    } finally {
      second.child.kill('SIGTERM');
      await second.exited;
    }
  });

  it('cuts a torn last line with a warning and keeps the rest', async () => {
    const dataDir = await tempDir();
    const first = await spawnServer({ DATA_DIR: dataDir });
    const { user, room } = await userWithRoom(first.url, 'Torn', 'Torn');
    await restCall(first.url, 'send_message', { room_id: room.room_id, text_content: 'kept' }, user.token);
    first.child.kill('SIGTERM');
    await first.exited;
    const log = path.join(dataDir, 'room_messages', `${room.room_id}.jsonl`);
    await writeFile(log, (await readFile(log, 'utf8')) + '{"message_id":"half-writ');

    const second = await spawnServer({ DATA_DIR: dataDir });
    try {
      expect(second.output()).toMatch(/torn|truncat/i);
      const page = await restCall(second.url, 'get_messages', { room_id: room.room_id, after_seq: 0 }, user.token);
      expect(page.body.data.messages.map((m: { text_content: string }) => m.text_content)).toEqual(['kept']);
      expect(await readFile(log, 'utf8')).not.toContain('half-writ');
    } finally {
      second.child.kill('SIGTERM');
      await second.exited;
    }
  });

  it('refuses to start on a corrupt snapshot, naming the file and leaving it untouched', async () => {
    const dataDir = await tempDir();
    await writeFile(path.join(dataDir, 'rooms.json'), '{broken');
    const result = await runCli({ DATA_DIR: dataDir });
    expect(result.code).not.toBe(0);
    expect(result.output).toContain('rooms.json');
    expect(await readFile(path.join(dataDir, 'rooms.json'), 'utf8')).toBe('{broken');
  });

  it('refuses a second server on the same DATA_DIR', async () => {
    const dataDir = await tempDir();
    const first = await spawnServer({ DATA_DIR: dataDir });
    try {
      const second = await runCli({ DATA_DIR: dataDir });
      expect(second.code).not.toBe(0);
      expect(second.output).toMatch(/in use|lock/i);
    } finally {
      first.child.kill('SIGTERM');
      await first.exited;
    }
  });

  it('stops start-up with one line naming an invalid variable', async () => {
    const result = await runCli({ TURN_TIMEOUT_MS: '5' });
    expect(result.code).toBe(1);
    expect(result.output.trim().split('\n')).toHaveLength(1);
    expect(result.output).toContain('TURN_TIMEOUT_MS');
    // LOG_FORMAT too: json or human, nothing else (issue 41).
    const format = await runCli({ LOG_FORMAT: 'yaml' });
    expect(format.code).toBe(1);
    expect(format.output.trim().split('\n')).toHaveLength(1);
    expect(format.output).toContain('LOG_FORMAT');
    const port = await runCli({ PORT: 'abc' });
    expect(port.code).toBe(1);
    expect(port.output).toContain('PORT');
    // A DATA_DIR that is a file cannot hold the store.
    const file = path.join(await tempDir(), 'not-a-directory');
    await writeFile(file, 'x');
    const dataDir = await runCli({ DATA_DIR: file });
    expect(dataDir.code).toBe(1);
    expect(dataDir.output.trim().split('\n')).toHaveLength(1);
    expect(dataDir.output).toContain('DATA_DIR');
    // Under /proc, where Node's own recursive mkdir loops forever: an error, not a hang.
    if (process.platform === 'linux') {
      const proc = await runCli({ DATA_DIR: '/proc/agent-chatroom-test/data' });
      expect(proc.code).toBe(1);
      expect(proc.output.trim().split('\n')).toHaveLength(1);
      expect(proc.output).toContain('DATA_DIR');
    }
  });

  it('logs the port it picked for PORT=0 and exits 0 on SIGTERM', async () => {
    const dataDir = await tempDir();
    const server = await spawnServer({ DATA_DIR: dataDir });
    expect(server.port).toBeGreaterThan(0);
    const health = await fetch(`${server.url}/api/v1/health`);
    expect(health.status).toBe(200);
    server.child.kill('SIGTERM');
    expect((await server.exited).code).toBe(0);
  });

  it('exits 0 on a SIGTERM that comes while the store is still opening, and the next start serves', async () => {
    // A log with no persisted index is scanned at start: ~80 MB keeps the store opening a while.
    const dataDir = await tempDir();
    const roomId = 'big-20260101000000-abcdefgh';
    await mkdir(path.join(dataDir, 'room_messages'));
    const line = (seq: number) =>
      JSON.stringify({
        message_id: randomUUID(), room_id: roomId, seq, timestamp: '2026-01-01T00:00:00.000Z', sender: 'a', sender_id: 'a', role: 'user',
        text_content: 'x'.repeat(100), text_content_i18n: null, source_language: 'en', file_url: '', file_type: '', mentions: [], visible: true,
        processed: false, response_to: null, display_timezone: 'UTC', round_id: null, skip_reason: null, deleted: false,
      });
    await writeFile(path.join(dataDir, 'room_messages', `${roomId}.jsonl`), Array.from({ length: 150_000 }, (_, i) => line(i + 1)).join('\n') + '\n');
    const child = spawn(process.execPath, [CLI, 'start'], { env: { ...process.env, PORT: '0', LOG_LEVEL: 'info', DATA_DIR: dataDir }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    await new Promise<void>((resolve) =>
      child.stdout.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        if (out.includes('"msg":"opening storage"')) resolve();
      }),
    );
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(out).toContain('stopped during start-up');
    expect(out).not.toContain('listening on');
    // Nothing was lost by stopping there: the next start scans the log and serves it.
    const again = await spawnServer({ DATA_DIR: dataDir });
    try {
      expect((await fetch(`${again.url}/api/v1/health`)).status).toBe(200);
      expect(again.output()).toMatch(/"messages":150000/);
    } finally {
      again.child.kill('SIGTERM');
      expect((await again.exited).code).toBe(0);
    }
  });
});
