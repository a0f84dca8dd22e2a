// SPEC §6 across nodes (§11): "an agent whose last WebSocket closed and that has made no other
// call since goes offline 15 s after the close". The agent's socket is on node A, and it made a
// call through node B just before the socket closed; B must not keep it online for the whole
// presence window because of that earlier call.
import { describe, expect, it } from 'vitest';
import { TestSocket } from '../helpers/ws.js';
import { ok, useClusterNodes, wsUrlOf } from './cluster-nodes.js';
import { pgTestsEnabled } from './pg-server.js';

const enabled = pgTestsEnabled();
const cluster = useClusterNodes();
const WINDOW_MS = 20_000;
const GRACE_MS = 1000;

describe.skipIf(!enabled)('the last WebSocket closing, across nodes', () => {
  it('a call through node B before the socket on node A closed does not keep the agent online past the grace', async () => {
    const site = await cluster.newSite();
    const options = { presenceWindowMs: WINDOW_MS, socketGraceMs: GRACE_MS };
    const a = await cluster.node(site, {}, options);
    const b = await cluster.node(site, {}, options);
    const person = await ok(a.url, 'register_user', { name: 'Observer' });
    const agent = await ok(a.url, 'register_agent', { name: 'Leaver' });
    const { room } = await ok(a.url, 'create_room', { room_name: 'Leaving' }, person.token);
    await ok(a.url, 'join_room', { room_id: room.room_id }, agent.token);
    const status = async (): Promise<string> => {
      const { room: now } = await ok(b.url, 'get_room', { room_id: room.room_id }, person.token);
      return now.members.find((m: { name: string }) => m.name === 'Leaver').status;
    };

    const socket = await TestSocket.connect(wsUrlOf(a), agent.token);
    await ok(b.url, 'get_room', { room_id: room.room_id }, agent.token);
    await expect.poll(status).toBe('online');
    await socket.close();

    // Offline after the grace, well before the window would have run out (the poll gives up at
    // half of it: an agent kept online for the window fails here).
    await expect.poll(status, { timeout: Math.min(GRACE_MS + 5000, WINDOW_MS / 2), interval: 100 }).toBe('offline');
  });
});
