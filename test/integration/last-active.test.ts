// The stored last_active of a caller is written after its call, off the call's own path: a
// journal or snapshot write made at the start of a call used to queue the call's own commit
// behind its fsync (a join or a status change then waited for two fsyncs in a row).
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { FileHandle } from 'node:fs/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { testConfig } from '../../src/config.js';
import { silentLogger } from '../../src/logger.js';
import { startServer, type RunningServer } from '../../src/server.js';
import { FileStore } from '../../src/storage/index.js';
import { defaultFsOps, type FsOps } from '../../src/storage/fs-ops.js';
import { restOk as ok } from '../helpers/process.js';
import { tempDataDir } from '../helpers/server.js';
import { eventually, TestSocket, wsUrl } from '../helpers/ws.js';
import { storedRecords } from '../helpers/stored-state.js';

let running: RunningServer | undefined;
afterEach(async () => {
  await running?.close();
  running = undefined;
});

/**
 * A server on a file store with `fsOps`, a person's room, and an agent `agentName` registered
 * but not yet in it.
 */
async function roomAndAgent(dataDir: string, fsOps: Partial<FsOps>, agentName: string) {
  running = await startServer(testConfig({ dataDir }), silentLogger, { store: new FileStore({ dataDir, logger: silentLogger, fsOps }) });
  const owner = await ok(running.url, 'register_user', { name: 'Owner' });
  const { room } = await ok(running.url, 'create_room', { room_name: 'Busy' }, owner.token);
  const agent = await ok(running.url, 'register_agent', { name: agentName });
  return { server: running, url: running.url, room, agent };
}

/** The agent's record as stored now: agents.json and the state journal it trails (SPEC §5). */
async function storedAgent(dataDir: string, name: string): Promise<{ name: string; last_active: string }> {
  const agents = await storedRecords<{ name: string; last_active: string }>(dataDir, 'agents');
  return agents.find((a) => a.name === name)!;
}

describe('stored last_active', () => {
  it("is written after the call's own commit, and is stored", async () => {
    const dataDir = await tempDataDir();
    // Every write, with the file it went to.
    const files = new WeakMap<FileHandle, string>();
    const writes: Array<{ file: string; text: string }> = [];
    const fsOps: Partial<FsOps> = {
      async open(file, flags) {
        const handle = await defaultFsOps.open(file, flags);
        files.set(handle, path.relative(dataDir, file));
        return handle;
      },
      async write(handle, data) {
        writes.push({ file: files.get(handle) ?? '?', text: data.toString('utf8') });
        return defaultFsOps.write(handle, data);
      },
    };
    const { server, url, room, agent } = await roomAndAgent(dataDir, fsOps, 'Latecomer');
    const registered = await storedAgent(dataDir, 'Latecomer');

    const from = writes.length;
    const before = Date.now();
    await ok(url, 'join_room', { room_id: room.room_id }, agent.token);
    // A record is written to its snapshot or, as the server does by default, to the journal.
    const of = (w: { file: string; text: string }, kind: 'agent' | 'room') =>
      (w.file.startsWith(`${kind}s`) || (w.file.startsWith('journal') && w.text.includes(`{"t":"${kind}"`))) && w.text.includes('Latecomer');
    const agentWrite = () => writes.findIndex((w, i) => i >= from && of(w, 'agent'));
    await expect.poll(agentWrite).toBeGreaterThanOrEqual(0);
    const roomWrite = writes.findIndex((w, i) => i >= from && of(w, 'room'));
    expect(roomWrite).toBeGreaterThanOrEqual(from);
    expect(agentWrite()).toBeGreaterThan(roomWrite);

    // Stored: a restart reads the new value.
    await server.close();
    running = undefined;
    const stored = await storedAgent(dataDir, 'Latecomer');
    expect(Date.parse(stored.last_active)).toBeGreaterThan(Date.parse(registered.last_active));
    expect(Date.parse(stored.last_active)).toBeGreaterThanOrEqual(before - 1000);
  });

  it('that fails to be written leaves the call answered and the stored record as it was', async () => {
    const dataDir = await tempDataDir();
    let failAgents = false;
    let refused = 0;
    // Writes of an agent record fail: to agents.json, or as a journal line (the default path).
    const fsOps: Partial<FsOps> = {
      async open(file, flags) {
        if (failAgents && path.basename(file).startsWith('agents')) {
          refused++;
          throw Object.assign(new Error('injected EIO'), { code: 'EIO' });
        }
        return defaultFsOps.open(file, flags);
      },
      async write(handle, data) {
        if (failAgents && data.includes('{"t":"agent"')) {
          refused++;
          throw Object.assign(new Error('injected EIO'), { code: 'EIO' });
        }
        return defaultFsOps.write(handle, data);
      },
    };
    const { server, url, room, agent } = await roomAndAgent(dataDir, fsOps, 'Unlucky');
    const registered = await storedAgent(dataDir, 'Unlucky');

    failAgents = true;
    // The call's own change (the room) is written; its caller's last_active write fails after it.
    const { room: joined } = await ok(url, 'join_room', { room_id: room.room_id }, agent.token);
    expect(joined.members.map((m: { name: string }) => m.name)).toContain('Unlucky');
    await expect.poll(() => refused).toBeGreaterThan(0);
    failAgents = false;
    // The refused value never reached the disk (the journal was cut back), and the next write
    // of the agent records is made from memory.
    await ok(url, 'register_agent', { name: 'Bystander' });
    expect((await storedAgent(dataDir, 'Unlucky')).last_active).toBe(registered.last_active);
    // The refused write is not taken as done: the shutdown stores the join's activity.
    await server.close();
    running = undefined;
    expect(Date.parse((await storedAgent(dataDir, 'Unlucky')).last_active)).toBeGreaterThan(Date.parse(registered.last_active));
  });
});

/** Date.now() once the clock has moved on from the millisecond it is called in. */
async function laterMillisecond(): Promise<number> {
  const start = Date.now();
  await eventually(() => Date.now() > start, 1000, 'the clock to move on');
  return Date.now();
}

describe('stored last_active at shutdown (SPEC §6: presence after a restart starts from it)', () => {
  it('holds the last call, and for a WebSocket held to the end, the moment the server stopped', async () => {
    const dataDir = await tempDataDir();
    const { url, agent } = await roomAndAgent(dataDir, {}, 'Caller');
    const listener = await ok(url, 'register_agent', { name: 'Listener' });
    await ok(url, 'list_rooms', {}, agent.token);
    // A second call right after the first, on a later millisecond (so the first call's time
    // cannot pass for it): between calls last_active is stored only now and then.
    const lastCall = await laterMillisecond();
    await ok(url, 'list_rooms', {}, agent.token);
    // An agent waiting on its socket makes no calls at all.
    const socket = await TestSocket.connect(wsUrl(url), listener.token);
    const beforeStop = await laterMillisecond(); // later than anything the socket did
    await running!.close();
    running = undefined;
    await socket.closed;
    expect(Date.parse((await storedAgent(dataDir, 'Caller')).last_active)).toBeGreaterThanOrEqual(lastCall);
    expect(Date.parse((await storedAgent(dataDir, 'Listener')).last_active)).toBeGreaterThanOrEqual(beforeStop);
  });
});
