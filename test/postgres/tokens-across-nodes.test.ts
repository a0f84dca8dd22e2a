// Tokens and passwords on several nodes (SPEC §3, §11: every guarantee unchanged whichever node a
// client talks to). A token issued on node A works at its first use on node B through every path
// that takes a token (MCP header, `login {token}`, uploads and downloads), a person registered on
// A logs in with the password on B, a token rotated on A stops working on B at once (B's
// sockets that hold it close with 4401, its MCP sessions and REST calls are refused), and a name
// that looks like one registered on A (a confusable skeleton, UTS #39) is name_taken on B.
import { describe, expect, it } from 'vitest';
import type { RunningServer } from '../../src/server.js';
import { confusableKeys, nameKey } from '../../src/identity/names.js';
import { PgStore } from '../../src/storage/postgres/pg-store.js';
import { restCall } from '../helpers/process.js';
import { makeAgent } from '../unit/storage-helpers.js';
import { connectMcp } from '../helpers/mcp.js';
import { eventually, TestSocket } from '../helpers/ws.js';
import { cutFeeds, ok, useClusterNodes, wsUrlOf } from './cluster-nodes.js';
import { pgTestsEnabled } from './pg-server.js';

const enabled = pgTestsEnabled();
const cluster = useClusterNodes();

async function twoNodes(): Promise<[RunningServer, RunningServer, string]> {
  const site = await cluster.newSite();
  const a = await cluster.node(site);
  const b = await cluster.node(site);
  return [a, b, site.databaseUrl];
}

async function upload(node: RunningServer, roomId: string, token: string): Promise<Response> {
  const form = new FormData();
  form.append('file', new Blob([new Uint8Array(Buffer.from('notes'))]), 'notes.txt');
  return fetch(`${node.url}/api/v1/rooms/${roomId}/uploads`, { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: form });
}

describe.skipIf(!enabled)('tokens and passwords across nodes', () => {
  it('a token issued on node A works at its first use on node B: MCP header, login {token}, upload, download', async () => {
    const [a, b] = await twoNodes();
    const person = await ok(a.url, 'register_user', { name: 'Writer' });
    const agent = await ok(a.url, 'register_agent', { name: 'Helper' });
    const { room } = await ok(a.url, 'create_room', { room_name: 'Notes' }, person.token);
    await ok(a.url, 'join_room', { room_id: room.room_id }, agent.token);

    // Each check is the token's first use on B (nothing else on B has seen it).
    const uploaded = await upload(b, room.room_id, person.token);
    expect(uploaded.status).toBe(200);
    const { file_url } = ((await uploaded.json()) as { data: { file_url: string } }).data;

    const mcp = await connectMcp(b.url, { token: agent.token });
    try {
      const rooms = await mcp.ok<{ rooms: Array<{ room_id: string }> }>('list_rooms');
      expect(rooms.rooms.map((r) => r.room_id)).toContain(room.room_id);
    } finally {
      await mcp.close();
    }

    const other = await ok(a.url, 'register_agent', { name: 'Second' });
    const login = await restCall(b.url, 'login', { token: other.token });
    expect(login.status).toBe(200);
    expect(login.body.data.participant.name).toBe('Second');

    const reader = await ok(a.url, 'register_agent', { name: 'Reader' });
    await ok(a.url, 'join_room', { room_id: room.room_id }, reader.token);
    const download = await fetch(`${b.url}${file_url}`, { headers: { authorization: `Bearer ${reader.token}` } });
    expect(download.status).toBe(200);
    expect(await download.text()).toBe('notes');
  });

  it('a person registered on node A logs in with the password on node B', async () => {
    const [a, b] = await twoNodes();
    await ok(a.url, 'register_user', { name: 'Pat', password: 'correct horse battery' });
    const login = await restCall(b.url, 'login', { name: 'Pat', password: 'correct horse battery' });
    expect(login.status).toBe(200);
    expect(login.body.data.participant.name).toBe('Pat');
    const wrong = await restCall(b.url, 'login', { name: 'Pat', password: 'wrong password!' });
    expect(wrong.body.error.code).toBe('wrong_password');
    const nobody = await restCall(b.url, 'login', { name: 'Nobody', password: 'correct horse battery' });
    expect(nobody.body.error.code).toBe('wrong_password');
  });

  it('a token rotated on node A stops working on node B: its socket closes with 4401, MCP and REST refuse it', async () => {
    const [a, b] = await twoNodes();
    const person = await ok(a.url, 'register_user', { name: 'Owner' });
    const agent = await ok(a.url, 'register_agent', { name: 'Rotor' });
    const { room } = await ok(a.url, 'create_room', { room_name: 'Rotation' }, person.token);
    await ok(a.url, 'join_room', { room_id: room.room_id }, agent.token);

    // B knows the old token through every kind of client before the rotation.
    const socket = await TestSocket.connect(wsUrlOf(b), agent.token);
    const mcp = await connectMcp(b.url, { token: agent.token });
    await mcp.ok('list_rooms');
    await ok(b.url, 'get_room', { room_id: room.room_id }, agent.token);

    const rotated = await ok(a.url, 'rotate_token', {}, agent.token);
    try {
      const closed = await socket.closedWithin(2000);
      expect(closed.code).toBe(4401);
      await eventually(async () => (await restCall(b.url, 'get_room', { room_id: room.room_id }, agent.token)).status === 401, 1000, 'REST on B refuses the old token');
      const refused = await mcp.err('list_rooms');
      expect(refused.code).toBe('unauthorized');
      // The new token works on B.
      await ok(b.url, 'get_room', { room_id: room.room_id }, rotated.token);
    } finally {
      await mcp.close();
      await socket.close().catch(() => undefined);
    }
  });

  it('a rotation whose announcement a node missed (its listening connection was down) still closes that node\'s socket at its next call', async () => {
    const [a, b, databaseUrl] = await twoNodes();
    const person = await ok(a.url, 'register_user', { name: 'Keeper' });
    const agent = await ok(a.url, 'register_agent', { name: 'Missed' });
    const { room } = await ok(a.url, 'create_room', { room_name: 'Missed' }, person.token);
    await ok(a.url, 'join_room', { room_id: room.room_id }, agent.token);
    const socket = await TestSocket.connect(wsUrlOf(b), agent.token);
    expect((await socket.call('get_room', { room_id: room.room_id })).ok).toBe(true);

    // The nodes' LISTEN connections drop; the rotation's announcement goes out while they are away.
    await cutFeeds(databaseUrl);
    await ok(a.url, 'rotate_token', {}, agent.token);

    // B's feed reconnects by itself; the socket's next call is checked in the store.
    await eventually(async () => socket.ws.readyState !== socket.ws.OPEN || !(await socket.call('get_room', { room_id: room.room_id })).ok, 3000, 'a call with the old token is refused');
    const closed = await socket.closedWithin(2000);
    expect(closed.code).toBe(4401);
  });

  it('a socket that only listens closes too when its node missed the revocation: the heartbeat re-checks its token', async () => {
    const site = await cluster.newSite();
    const a = await cluster.node(site);
    const b = await cluster.node(site, {}, { ws: { heartbeatMs: 300 } });
    const person = await ok(a.url, 'register_user', { name: 'Quiet' });
    const agent = await ok(a.url, 'register_agent', { name: 'Listener' });
    const { room } = await ok(a.url, 'create_room', { room_name: 'Quiet' }, person.token);
    await ok(a.url, 'join_room', { room_id: room.room_id }, agent.token);
    const socket = await TestSocket.connect(wsUrlOf(b), agent.token);

    await cutFeeds(site.databaseUrl);
    await ok(a.url, 'rotate_token', {}, agent.token);

    const closed = await socket.closedWithin(3000);
    expect(closed.code).toBe(4401);
  });

  it('a name that looks like one registered on another node is name_taken, also when both register at once', async () => {
    const [a, b] = await twoNodes();
    await ok(a.url, 'register_agent', { name: 'Dave' });
    const lookAlike = await restCall(b.url, 'register_agent', { name: 'D\u0430ve' }); // Cyrillic а
    expect(lookAlike.body.error?.code).toBe('name_taken');

    for (let i = 0; i < 8; i++) {
      const [latin, cyrillic] = await Promise.all([
        restCall(a.url, 'register_agent', { name: `Alice${i}` }),
        restCall(b.url, 'register_user', { name: `\u0410lice${i}` }), // Cyrillic А
      ]);
      const outcomes = [latin, cyrillic].map((r) => (r.status === 200 ? 'ok' : r.body.error.code)).sort();
      expect(outcomes, `pair ${i}`).toEqual(['name_taken', 'ok']);
    }
  });

  it('participants stored before look-alike keys were kept get them when a node starts: an old name blocks its look-alike on every node', async () => {
    const site = await cluster.newSite();
    // Node B runs before the name exists, so only the database can tell it about it.
    const b = await cluster.node(site);
    // A store of the version before (no look-alike keys) writes the participant.
    const old = new PgStore({ connectionString: site.databaseUrl, poolSize: 2 });
    await old.open();
    await old.putParticipant({ kind: 'agent', record: makeAgent('old-agent', { name: 'Carol' }) }, nameKey('Carol'));
    await old.close();
    // Node A starts (an upgraded node): it stores the missing keys.
    await cluster.node(site);
    const lookAlike = await restCall(b.url, 'register_agent', { name: 'C\u0430rol' });
    expect(lookAlike.body.error?.code).toBe('name_taken');
  });

  it('over MCP, a client over its address limit is refused before its unknown header token is looked up in the database', async () => {
    const site = await cluster.newSite();
    // Node B's store counts the token lookups that reach the database.
    let lookups = 0;
    class CountingStore extends PgStore {
      override findParticipantByTokenHash(hash: string) {
        lookups += 1;
        return super.findParticipantByTokenHash(hash);
      }
    }
    const store = new CountingStore({ connectionString: site.databaseUrl, poolSize: 2, lookAlikeKeysOf: confusableKeys });
    const b = await cluster.node(site, { rateLimitPerAddress: 3, rateLimitPerToken: 0 }, { store });
    const mcp = await connectMcp(b.url, { token: 'act_guessed-token' });
    try {
      for (let i = 0; i < 3; i++) expect((await mcp.err('list_rooms')).code).toBe('unauthorized');
      const before = lookups;
      expect(before).toBeGreaterThanOrEqual(3);
      for (let i = 0; i < 5; i++) expect((await mcp.err('list_rooms')).code).toBe('rate_limited');
      expect(lookups).toBe(before);
    } finally {
      await mcp.close();
    }
  });
});
