// A deadline whose notification was lost (SPEC §11: "a deadline that passes while its node is
// dead still fires within 5 s"). Node A commits a turn and dies between its COMMIT and its
// after-commit NOTIFY, so node B never hears of the turn and does not hold the room; B still
// fires the deadline within 5 s of it, picked up from the stored `deadlines` table, without any
// client touching the room on B.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningServer } from '../../src/server.js';
import type { ServerProcess } from '../helpers/process.js';
import { eventually, TestSocket, wsUrl } from '../helpers/ws.js';
import { kill, newSite, ok, spawnNode, startNode } from './cluster-nodes.js';
import { startCutProxy, type CutProxy } from './cut-proxy.js';
import { pgTestsEnabled, startPgServer, type PgServer } from './pg-server.js';

const enabled = pgTestsEnabled();
let pgServer: PgServer | undefined;
let nodeA: ServerProcess | undefined;
let nodeB: RunningServer | undefined;
let proxy: CutProxy | undefined;
let db: pg.Client | undefined;

if (enabled) {
  beforeAll(async () => {
    pgServer = await startPgServer();
  });
  afterAll(async () => {
    nodeA?.child.kill('SIGKILL');
    await nodeB?.close().catch(() => undefined);
    await proxy?.close();
    await db?.end().catch(() => undefined);
    await pgServer?.stop();
  });
}

describe.skipIf(!enabled)('a turn whose notification was lost with its node', () => {
  it('fires on a node that never held the room, within 5 s of its deadline', async () => {
    const site = await newSite(pgServer!);
    db = new pg.Client({ connectionString: site.databaseUrl });
    await db.connect();
    // Node A reaches the database through a proxy that can hold back its NOTIFY; B connects directly.
    proxy = await startCutProxy(pgServer!.port, decodeURIComponent(new URL(site.databaseUrl).pathname.slice(1)));
    nodeB = await startNode(site);
    nodeA = await spawnNode(site, { DATABASE_URL: proxy.url });
    const a = nodeA.url;

    // Everything happens on A: B has no client in the room and no reason to load it.
    const person = await ok(a, 'register_user', { name: 'Dana' });
    const bot = await ok(a, 'register_agent', { name: 'Silent' });
    const { room } = await ok(a, 'create_room', { room_name: 'Lost notification' }, person.token);
    const roomId: string = room.room_id;
    await ok(a, 'update_room', { room_id: roomId, turn_timeout_ms: 2000 }, person.token);
    await ok(a, 'join_room', { room_id: roomId }, bot.token);
    const botSocket = await TestSocket.connect(wsUrl(a), bot.token);
    const botStatus = async () => {
      const { room: current } = await ok(a, 'get_room', { room_id: roomId }, person.token);
      return current.members.find((m: { name: string }) => m.name === 'Silent')?.status;
    };
    await expect.poll(botStatus).toBe('online');

    // A dies between COMMIT and NOTIFY: its next notification never reaches the database (and,
    // sent one batch at a time, none after it does either); then it is killed.
    const notifyHeld = proxy.holdWhen((chunk) => chunk.includes("pg_notify('room_changes'"));
    const sent = await ok(a, 'send_message', { room_id: roomId, text_content: 'Silent, your turn.' }, person.token);
    await notifyHeld;
    await kill(nodeA);
    await botSocket.close();

    // The turn is committed, with its deadline stored; B has not loaded the room.
    const stored = await db.query<{ deadline: Date; turn_key: string }>('SELECT deadline, turn_key FROM deadlines WHERE room_id = $1', [roomId]);
    expect(stored.rows).toHaveLength(1);
    expect(stored.rows[0]!.turn_key).toContain('/Silent/');
    const deadline = stored.rows[0]!.deadline.getTime();
    expect(Date.now()).toBeLessThan(deadline);
    expect(nodeB.app.rooms.loaded(roomId)).toBeUndefined();

    // Watch the table only (no client call on B) until the timeout record appears.
    const timeouts = async () => {
      const { rows } = await db!.query<{ record: string }>('SELECT record::text AS record FROM messages WHERE room_id = $1 ORDER BY seq', [roomId]);
      return rows.map((r) => JSON.parse(r.record) as { sender: string; skip_reason: string | null; timestamp: string; seq: number }).filter((m) => m.skip_reason === 'timeout');
    };
    // B's sweep of the deadlines table finds it: within 5 s of the deadline, not never.
    await eventually(async () => (await timeouts()).length > 0, deadline + 5000 - Date.now(), 'the timeout record, by 5 s after the deadline');
    const [timedOut, ...more] = await timeouts();
    expect(more).toEqual([]);
    expect(timedOut!.sender).toBe('Silent');
    expect(timedOut!.seq).toBe(sent.message.seq + 1);
    expect(Date.parse(timedOut!.timestamp)).toBeGreaterThanOrEqual(deadline);
    // B fired it (the only live node), and its deadline row went with the turn.
    expect(nodeB.app.rooms.loaded(roomId)).toBeDefined();
    expect((await db.query('SELECT turn_key FROM deadlines WHERE room_id = $1', [roomId])).rows).not.toContainEqual({ turn_key: stored.rows[0]!.turn_key });
  });
});
