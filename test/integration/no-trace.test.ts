// SPEC v2 §5 "a failed call leaves no trace", for every tool that writes: with every disk write
// failing (FsOps seam), the call answers internal_error, no event is published for it, the
// state the server serves equals what a restart loads, and the same call succeeds once the disk
// is back.
import { afterEach, describe, expect, it } from 'vitest';
import { testConfig } from '../../src/config.js';
import { silentLogger } from '../../src/logger.js';
import { startServer, type RunningServer } from '../../src/server.js';
import { FileStore } from '../../src/storage/index.js';
import { defaultFsOps, type FsOps } from '../../src/storage/fs-ops.js';
import { restCall, restOk as ok } from '../helpers/process.js';
import { tempDataDir } from '../helpers/server.js';
import { TestSocket } from '../helpers/ws.js';

let running: RunningServer | undefined;
afterEach(async () => {
  await running?.close();
  running = undefined;
});

interface World {
  url: string;
  roomId: string;
  owner: { token: string; name: string };
  agentA: { token: string; name: string };
  agentB: { token: string; name: string };
  guest: { token: string; name: string };
  /** A message of the owner, one of agent A and the skip record of B. */
  ownerMessageId: string;
  /** The room exported as JSON (for import_chat_history). */
  exported?: unknown;
}

/** Each writing tool with the call that fails and then succeeds. */
const cases: Array<{ tool: string; call: (w: World) => [args: unknown, token?: string] }> = [
  { tool: 'register_agent', call: () => [{ name: 'Newbot' }] },
  { tool: 'register_user', call: () => [{ name: 'Newperson', password: 'a long password' }] },
  { tool: 'login', call: (w) => [{ name: w.owner.name, password: 'owner password' }] },
  { tool: 'rotate_token', call: (w) => [{}, w.guest.token] },
  { tool: 'create_room', call: (w) => [{ room_name: 'Second room' }, w.guest.token] },
  { tool: 'join_room', call: (w) => [{ room_id: w.roomId }, w.guest.token] },
  { tool: 'leave_room', call: (w) => [{ room_id: w.roomId }, w.agentB.token] },
  { tool: 'set_room_status', call: (w) => [{ room_id: w.roomId, system_status: 'paused' }, w.owner.token] },
  { tool: 'set_announcement', call: (w) => [{ room_id: w.roomId, user_announcement: '新公告' }, w.owner.token] },
  { tool: 'update_room', call: (w) => [{ room_id: w.roomId, max_auto_rounds: 7, password: 'room password' }, w.owner.token] },
  { tool: 'remove_member', call: (w) => [{ room_id: w.roomId, name: w.agentB.name }, w.owner.token] },
  { tool: 'archive_room', call: (w) => [{ room_id: w.roomId }, w.owner.token] },
  { tool: 'pass_turn', call: (w) => [{ room_id: w.roomId }, w.owner.token] },
  { tool: 'extend_turn', call: (w) => [{ room_id: w.roomId }, w.agentA.token] },
  { tool: 'send_message', call: (w) => [{ room_id: w.roomId, text_content: 'answer', client_msg_id: 'k1' }, w.agentA.token] },
  { tool: 'skip_response', call: (w) => [{ room_id: w.roomId, reason: 'model down' }, w.agentA.token] },
  { tool: 'set_activity', call: (w) => [{ room_id: w.roomId, activity: 'thinking', note: 'reading' }, w.agentA.token] },
  { tool: 'edit_message', call: (w) => [{ message_id: w.ownerMessageId, text_content: 'edited' }, w.owner.token] },
  { tool: 'delete_message', call: (w) => [{ message_id: w.ownerMessageId }, w.owner.token] },
  { tool: 'start_round', call: (w) => [{ room_id: w.roomId }, w.owner.token], },
  { tool: 'import_chat_history', call: (w) => [{ data: w.exported, room_name: 'Imported copy' }, w.guest.token] },
];

/** A room with a person owner, two agents (A holds the turn) and a guest outside it. */
async function buildWorld(url: string, tool: string): Promise<World> {
  const forStartRound = tool === 'start_round';
  const owner = { ...(await ok(url, 'register_user', { name: 'Owner', password: 'owner password' })), name: 'Owner' };
  const agentA = { ...(await ok(url, 'register_agent', { name: 'AgentA' })), name: 'AgentA' };
  const agentB = { ...(await ok(url, 'register_agent', { name: 'AgentB' })), name: 'AgentB' };
  const guest = { ...(await ok(url, 'register_user', { name: 'Guest' })), name: 'Guest' };
  const { room } = await ok(url, 'create_room', { room_name: 'Faulty room' }, owner.token);
  for (const agent of [agentA, agentB]) await ok(url, 'join_room', { room_id: room.room_id }, agent.token);
  const { message } = await ok(url, 'send_message', { room_id: room.room_id, text_content: 'hello agents' }, owner.token);
  if (forStartRound) {
    // start_round needs an idle room: A and B answer, the guard of 3 rounds is far.
    await ok(url, 'skip_response', { room_id: room.room_id }, agentA.token);
    await ok(url, 'skip_response', { room_id: room.room_id }, agentB.token);
  }
  const world: World = { url, roomId: room.room_id, owner, agentA, agentB, guest, ownerMessageId: message.message_id };
  if (tool === 'import_chat_history') {
    const { url: file } = await ok(url, 'export_chat_history', { room_id: room.room_id, format: 'json' }, owner.token);
    world.exported = await (await fetch(url + file)).json();
  }
  return world;
}

/** What the server serves, as the owner sees it (presence-derived fields left out). */
async function served(w: World, url: string) {
  const { room } = await ok(url, 'get_room', { room_id: w.roomId }, w.owner.token);
  const members = room.members.map(({ status: _s, last_active: _l, activity: _a, activity_note: _n, ...m }: Record<string, unknown>) => m);
  const { messages } = await ok(url, 'get_messages', { room_id: w.roomId, after_seq: 0, limit: 200 }, w.owner.token);
  const tokens: Record<string, number> = {};
  for (const who of [w.owner, w.agentA, w.agentB, w.guest]) tokens[who.name] = (await restCall(url, 'get_room', { room_id: w.roomId }, who.token)).status;
  const rooms = (await ok(url, 'list_rooms', { include_archived: true }, w.owner.token)).rooms.map((r: { room_name: string }) => r.room_name).sort();
  const login = (await restCall(url, 'login', { name: w.owner.name, password: 'owner password' })).status;
  // A restart gives the holder a fresh full deadline (SPEC §6.1.10): the one field that may differ.
  if (room.current_round?.turn) room.current_round.turn.deadline = 'restarted';
  return { room: { ...room, members }, messages, tokens, rooms, login };
}

describe('a failed call leaves no trace (SPEC v2 §5)', () => {
  for (const { tool, call } of cases) {
    it(`${tool}: internal_error, no event, served state = restarted state, retry succeeds`, async () => {
      const dataDir = await tempDataDir();
      let failing = false;
      const fail = () => Object.assign(new Error('injected EIO'), { code: 'EIO' });
      const fsOps: Partial<FsOps> = {
        async write(handle, data) {
          if (failing) throw fail();
          return defaultFsOps.write(handle, data);
        },
        async fsync(handle) {
          if (failing) throw fail();
          return defaultFsOps.fsync(handle);
        },
      };
      running = await startServer(testConfig({ dataDir }), silentLogger, { store: new FileStore({ dataDir, logger: silentLogger, fsOps }) });
      const w = await buildWorld(running.url, tool);
      const watcher = await TestSocket.connect(running.url.replace('http', 'ws') + '/ws', w.owner.token);
      await watcher.barrier();
      const mark = watcher.mark();
      const [args, token] = call(w);

      failing = true;
      const failed = await restCall(running.url, tool, args, token);
      failing = false;
      expect(failed.status, JSON.stringify(failed.body)).toBe(500);
      expect(failed.body.error.code).toBe('internal_error');
      await watcher.barrier();
      expect(watcher.since(mark).filter((f) => f.type === 'event')).toEqual([]);

      const before = await served(w, running.url);
      await watcher.close();
      await running.close();
      running = await startServer(testConfig({ dataDir }), silentLogger);
      const after = await served(w, running.url);
      expect(after).toEqual(before);

      const retried = await restCall(running.url, tool, args, token);
      expect(retried.body.ok, JSON.stringify(retried.body)).toBe(true);
    });
  }

  it('a registration whose write failed leaves no ghost: the retry on the same server succeeds, one record on disk', async () => {
    const dataDir = await tempDataDir();
    let failing = false;
    const fsOps: Partial<FsOps> = {
      async fsync(handle) {
        if (failing) throw Object.assign(new Error('injected ENOSPC'), { code: 'ENOSPC' });
        return defaultFsOps.fsync(handle);
      },
    };
    running = await startServer(testConfig({ dataDir }), silentLogger, { store: new FileStore({ dataDir, logger: silentLogger, fsOps }) });
    failing = true;
    expect((await restCall(running.url, 'register_agent', { name: 'Ghost' })).status).toBe(500);
    expect((await restCall(running.url, 'register_user', { name: 'Phantom', password: 'pw pw pw pw' })).status).toBe(500);
    failing = false;
    const agent = await ok(running.url, 'register_agent', { name: 'Ghost' });
    await ok(running.url, 'register_user', { name: 'Phantom', password: 'pw pw pw pw' });
    // rotate_token that fails keeps the old token working, and the retry replaces it.
    failing = true;
    expect((await restCall(running.url, 'rotate_token', {}, agent.token)).status).toBe(500);
    failing = false;
    expect((await restCall(running.url, 'list_rooms', {}, agent.token)).status).toBe(200);
    const { token } = await ok(running.url, 'rotate_token', {}, agent.token);
    await running.close();
    running = await startServer(testConfig({ dataDir }), silentLogger);
    const { readFile } = await import('node:fs/promises');
    const agents = JSON.parse(await readFile(`${dataDir}/agents.json`, 'utf8')) as Array<{ name: string }>;
    const users = JSON.parse(await readFile(`${dataDir}/users.json`, 'utf8')) as Array<{ name: string }>;
    expect(agents.filter((a) => a.name === 'Ghost')).toHaveLength(1);
    expect(users.filter((u) => u.name === 'Phantom')).toHaveLength(1);
    expect((await restCall(running.url, 'rotate_token', {}, token)).status).toBe(200);
    expect((await restCall(running.url, 'rotate_token', {}, agent.token)).status).toBe(401);
  });
});
