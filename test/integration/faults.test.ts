// Storage faults under the real server: a failing write, a failing fsync, a full disk.
import { afterEach, describe, expect, it } from 'vitest';
import { testConfig } from '../../src/config.js';
import { silentLogger } from '../../src/logger.js';
import { startServer, type RunningServer } from '../../src/server.js';
import { FileStore } from '../../src/storage/index.js';
import { defaultFsOps, type FsOps } from '../../src/storage/fs-ops.js';
import { restCall, userWithRoom } from '../helpers/process.js';
import { tempDataDir } from '../helpers/server.js';

type Fault = 'none' | 'write' | 'fsync' | 'enospc';

function faultyOps(current: () => Fault): Partial<FsOps> {
  const fail = (code: string) => Object.assign(new Error(`injected ${code}`), { code });
  return {
    async write(handle, data) {
      if (current() === 'write') throw fail('EIO');
      if (current() === 'enospc') {
        // A full disk: part of the data lands, then the write fails.
        await handle.write(data, 0, Math.floor(data.length / 2));
        throw fail('ENOSPC');
      }
      return defaultFsOps.write(handle, data);
    },
    async fsync(handle) {
      if (current() === 'fsync') throw fail('EIO');
      return defaultFsOps.fsync(handle);
    },
  };
}

let running: RunningServer | undefined;
afterEach(async () => {
  await running?.close();
  running = undefined;
});

describe('storage faults', () => {
  for (const fault of ['write', 'fsync', 'enospc'] as const) {
    it(`a ${fault} failure fails the call with internal_error, loses nothing acknowledged, and the server recovers`, async () => {
      const dataDir = await tempDataDir();
      let current: Fault = 'none';
      const store = new FileStore({ dataDir, logger: silentLogger, fsOps: faultyOps(() => current) });
      running = await startServer(testConfig({ dataDir }), silentLogger, { store });
      const url = running.url;
      const { user, room } = await userWithRoom(url, 'Faulty', 'Faults');
      const acked: string[] = [];
      const send = (text: string) => restCall(url, 'send_message', { room_id: room.room_id, text_content: text }, user.token);
      for (let i = 0; i < 5; i++) acked.push((await send(`ok ${i}`)).body.data.message.message_id);

      current = fault;
      const failed = await send('during the fault');
      expect(failed.status).toBe(500);
      // No detail, in the caller's language (DEFAULT_LANGUAGE zh-CN here; SPEC §7).
      expect(failed.body).toEqual({ ok: false, error: { code: 'internal_error', message: '服务器内部错误。' } });
      current = 'none';

      for (let i = 0; i < 5; i++) acked.push((await send(`after ${i}`)).body.data.message.message_id);
      const health = await fetch(`${url}/api/v1/health`);
      expect(health.status).toBe(200);
      await running.close();
      running = undefined;

      // Reopen with a clean store: every acknowledged message is there, seqs have no gap.
      running = await startServer(testConfig({ dataDir }), silentLogger);
      const { messages } = (await restCall(running.url, 'get_messages', { room_id: room.room_id, after_seq: 0 }, user.token)).body.data;
      const ids = messages.map((m: { message_id: string }) => m.message_id);
      for (const id of acked) expect(ids).toContain(id);
      expect(messages.map((m: { seq: number }) => m.seq)).toEqual(Array.from({ length: messages.length }, (_, i) => i + 1));
      // A failed call leaves no trace (SPEC v2 §5): the refused message is not there after a restart.
      expect(messages.length).toBe(acked.length);
      expect(messages.map((m: { text_content: string }) => m.text_content)).not.toContain('during the fault');
    });
  }
});
