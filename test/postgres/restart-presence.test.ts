// Presence after a restart on PostgreSQL (SPEC §6, §11: one node on PostgreSQL behaves as the
// file store). An agent that does not come back after its node restarts shows `offline` when
// the presence window has passed since its stored last_active — not when the dead node's
// presence rows are swept, which happens after the short socket grace.
import { describe, expect, it } from 'vitest';
import type { RunningServer } from '../../src/server.js';
import { ok, useClusterNodes } from './cluster-nodes.js';
import { pgTestsEnabled } from './pg-server.js';
import { holdsUntil } from '../helpers/ws.js';

const enabled = pgTestsEnabled();
const cluster = useClusterNodes();
const WINDOW_MS = 5000;
const GRACE_MS = 300;

const statusOf = async (node: RunningServer, roomId: string, token: string, name: string): Promise<string> => {
  const { room } = await ok(node.url, 'get_room', { room_id: roomId }, token);
  return room.members.find((m: { name: string }) => m.name === name).status;
};

describe.skipIf(!enabled)('presence after a restart on PostgreSQL', () => {
  it('an agent that does not come back goes offline a presence window after its last call', async () => {
    const site = await cluster.newSite();
    const options = { presenceWindowMs: WINDOW_MS, socketGraceMs: GRACE_MS };
    const first = await cluster.node(site, {}, options);
    const person = await ok(first.url, 'register_user', { name: 'Watcher' });
    const agent = await ok(first.url, 'register_agent', { name: 'Gone' });
    const { room } = await ok(first.url, 'create_room', { room_name: 'Restart' }, person.token);
    await ok(first.url, 'join_room', { room_id: room.room_id }, agent.token);
    const lastCall = Date.now();
    await ok(first.url, 'get_room', { room_id: room.room_id }, agent.token);
    await expect.poll(() => statusOf(first, room.room_id, person.token, 'Gone')).toBe('online');
    await first.close();

    const second = await cluster.node(site, {}, options);
    // Online all through the grace (the first node's presence rows are swept by then), until 2 s
    // before the window ends.
    await holdsUntil(async () => (await statusOf(second, room.room_id, person.token, 'Gone')) === 'online', lastCall + WINDOW_MS - 2000, 'Gone online');
    await expect.poll(() => statusOf(second, room.room_id, person.token, 'Gone'), { timeout: 4000, interval: 100 }).toBe('offline');
    expect(Date.now() - lastCall).toBeGreaterThanOrEqual(WINDOW_MS - 100);
  });

  it('a rolling restart: an agent back on the restarted node is its client, so the other node never stores it offline', async () => {
    const site = await cluster.newSite();
    const options = { presenceWindowMs: 20_000, socketGraceMs: GRACE_MS };
    const a = await cluster.node(site, {}, options);
    const b = await cluster.node(site, {}, options);
    const person = await ok(a.url, 'register_user', { name: 'Steady' });
    const { room } = await ok(a.url, 'create_room', { room_name: 'Rolling' }, person.token);
    // The agent is node B's client only (node A never sees a call of it).
    const agent = await ok(b.url, 'register_agent', { name: 'Roamer' });
    await ok(b.url, 'join_room', { room_id: room.room_id }, agent.token);
    await b.close();
    const restarted = await cluster.node(site, {}, options); // seeded from last_active
    await ok(restarted.url, 'get_room', { room_id: room.room_id }, agent.token); // back, on the restarted node

    // Node A sweeps the old node B's rows (after the grace) and asks who serves the agent now.
    await holdsUntil(async () => (await statusOf(a, room.room_id, person.token, 'Roamer')) === 'online', Date.now() + GRACE_MS + 3000, 'Roamer online on node A');
  });
});
