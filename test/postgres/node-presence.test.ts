// Presence on PostgreSQL (SPEC §6, §11): a node's presence rows follow its clients whatever the
// database does meanwhile, the question "does another live node serve this participant?" is
// asked again when it fails (the offline change waiting on it is never dropped), and one
// participant's quick offline/online changes are stored in the order they happened.
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import type { RoomEvent } from '../../src/events/bus.js';
import { NodePresence } from '../../src/storage/postgres/node-presence.js';
import { PgStore } from '../../src/storage/postgres/pg-store.js';
import { newSite, ok, startNode } from './cluster-nodes.js';
import { pgTestsEnabled, usePgServerForFile } from './pg-server.js';

const enabled = pgTestsEnabled();
const { server: pgServer, cleanup } = usePgServerForFile();

/** A migrated database, a node's pool on it, and an admin connection to break and mend tables. */
async function database(): Promise<{ pool: pg.Pool; admin: pg.Client; rows: (participantId: string) => Promise<string[]> }> {
  const url = await pgServer().createDatabase();
  const store = new PgStore({ connectionString: url, poolSize: 4 });
  await store.open();
  cleanup(() => store.close());
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  cleanup(() => admin.end());
  const rows = async (participantId: string): Promise<string[]> =>
    (await admin.query<{ node_id: string }>('SELECT node_id FROM chatroom_node_presence WHERE participant_id = $1', [participantId])).rows.map((r) => r.node_id);
  return { pool: store.connectionPool, admin, rows };
}

function node(pool: pg.Pool, nodeId: string, errors: Error[] = []): NodePresence {
  // No beats during the test (they would touch the tables the test breaks).
  const presence = new NodePresence({ pool, nodeId, deadAfterMs: 60_000, heartbeatMs: 600_000, onError: (err) => errors.push(err) });
  cleanup(() => presence.stop());
  return presence;
}

describe.skipIf(!enabled)('NodePresence on PostgreSQL', () => {
  it('asks again when the check fails, and answers once the database does', async () => {
    const { pool, admin, rows } = await database();
    const errors: Error[] = [];
    const here = node(pool, 'here', errors);
    const there = node(pool, 'there');
    await here.start();
    await there.start();
    there.setOnline('p1', true);
    await expect.poll(() => rows('p1')).toEqual(['there']);

    await admin.query('ALTER TABLE chatroom_nodes RENAME TO chatroom_nodes_away');
    let answer: boolean | Error | undefined;
    here.onlineElsewhere('p1').then(
      (served) => (answer = served),
      (err: Error) => (answer = err),
    );
    await expect.poll(() => errors.length > 0 || answer !== undefined).toBe(true);
    // Still waiting for an answer (not failed with the query's error), the failure reported.
    expect(answer).toBeUndefined();
    expect(errors[0]!.message).toMatch(/chatroom_nodes/);
    await admin.query('ALTER TABLE chatroom_nodes_away RENAME TO chatroom_nodes');
    await expect.poll(() => answer, { timeout: 5_000 }).toBe(true);
  });

  it('writes a presence row again when its write fails: the rows end as the last change left them', async () => {
    const { pool, admin, rows } = await database();
    const errors: Error[] = [];
    const here = node(pool, 'here', errors);
    await here.start();
    here.setOnline('p1', true);
    here.setOnline('p2', true);
    await expect.poll(() => rows('p1')).toEqual(['here']);
    await expect.poll(() => rows('p2')).toEqual(['here']);

    await admin.query('ALTER TABLE chatroom_node_presence RENAME TO chatroom_node_presence_away');
    here.setOnline('p1', false);
    // A quick disconnect and reconnect while the database refuses.
    here.setOnline('p2', false);
    here.setOnline('p2', true);
    here.setOnline('p3', true);
    await expect.poll(() => errors.length).toBeGreaterThan(0);
    await admin.query('ALTER TABLE chatroom_node_presence_away RENAME TO chatroom_node_presence');

    await expect.poll(() => rows('p1'), { timeout: 5_000 }).toEqual([]);
    await expect.poll(() => rows('p3'), { timeout: 5_000 }).toEqual(['here']);
    expect(await rows('p2')).toEqual(['here']);
  });
});

/** The server's store, holding the next `roomsOf` read until the test lets it go on. */
class GatedStore extends PgStore {
  private gate: { reached: () => void; release: Promise<void> } | undefined;

  /** Resolves when the next roomsOf read starts; that read waits for `release`. */
  holdNextRoomsOf(release: Promise<void>): Promise<void> {
    return new Promise((reached) => {
      this.gate = { reached, release };
    });
  }

  override async roomsOf(participantId: string): Promise<string[]> {
    const gate = this.gate;
    this.gate = undefined;
    if (gate) {
      gate.reached();
      await gate.release;
    }
    return super.roomsOf(participantId);
  }
}

describe.skipIf(!enabled)('a node storing its clients\' presence on PostgreSQL', () => {
  it('stores a quick offline → online in that order, even when the offline\'s reads finish last', async () => {
    const site = await newSite(pgServer());
    const store = new GatedStore({ connectionString: site.databaseUrl, poolSize: 5 });
    const server = await startNode(site, {}, { store, socketGraceMs: 50 });
    cleanup(() => server.close());
    const { app } = server;
    const registered = await ok(server.url, 'register_user', { name: 'Ann' });
    const ann = { token: registered.token as string, id: registered.user_id as string };
    const { room } = await ok(server.url, 'create_room', { room_name: 'Presence order' }, ann.token);
    const status = (): string | undefined => app.rooms.loaded(room.room_id)!.room.members.find((m) => m.participant_id === ann.id)?.status;
    expect(status()).toBe('online');
    const changes: string[] = [];
    app.bus.subscribe((e: RoomEvent) => {
      if (e.room_id === room.room_id && e.event === 'member_status_change' && e.data.member.name === 'Ann') changes.push(e.data.member.status);
    });

    // Ann's socket closes: after the grace she is offline, and the offline's room lookup is held.
    let release!: () => void;
    const held = store.holdNextRoomsOf(new Promise((resolve) => (release = resolve)));
    app.presence.socketOpened(ann.id);
    app.presence.socketClosed(ann.id);
    await held;
    expect(app.presence.isOnline(ann.id)).toBe(false);
    // She reconnects before that offline is stored; then the held read finishes.
    app.presence.socketOpened(ann.id);
    release();

    await expect.poll(() => changes, { timeout: 5_000 }).toContain('offline');
    await expect.poll(() => status(), { timeout: 5_000 }).toBe('online');
    expect(changes).toEqual(['offline', 'online']);
    const stored = (await store.loadRoom(room.room_id))!.room.members.find((m) => m.participant_id === ann.id)!;
    expect(stored.status).toBe('online');
    app.presence.socketClosed(ann.id);
  });
});
