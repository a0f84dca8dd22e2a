// What a server node reads from PostgreSQL when it takes up a room (SPEC §11): a room another
// node changed is read as one snapshot (its state, its new and rewritten messages of one
// version), even when yet another commit lands between the node's reads; and an imported room
// is set up from the messages in hand, without reading them back.
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { RoomEvent } from '../../src/events/bus.js';
import type { RunningServer } from '../../src/server.js';
import { PgStore } from '../../src/storage/postgres/pg-store.js';
import type { RoomChangesSince } from '../../src/storage/store.js';
import type { LoadedRoom } from '../../src/storage/store.js';
import type { Message } from '../../src/types.js';
import { newSite, ok, startNode, type ClusterSite } from './cluster-nodes.js';
import { pgTestsEnabled, usePgServerForFile } from './pg-server.js';

const enabled = pgTestsEnabled();
const { server: pgServer, cleanup } = usePgServerForFile();

/**
 * The node's store, which can run a step right after the node's next read of a room's state
 * (whichever way it reads it), and counts the `lastPersonSeq` reads `Rooms.adopt` makes. (The
 * node's own feed may load the new room on its creation's notification before `adopt` holds it;
 * that load reads the last person seq as every load does, and is not counted.)
 */
class WatchedStore extends PgStore {
  afterNextStateRead: (() => Promise<void>) | undefined;
  personSeqReadsByAdopt = 0;

  override async loadRoom(roomId: string): Promise<LoadedRoom | undefined> {
    const loaded = await super.loadRoom(roomId);
    await this.step();
    return loaded;
  }

  override async readChangesSince(roomId: string, from: { version: number; lastSeq: number }): Promise<RoomChangesSince | undefined> {
    const read = await super.readChangesSince(roomId, from);
    await this.step();
    return read;
  }

  override async lastPersonSeq(roomId: string): Promise<number> {
    if (new Error().stack?.includes('Rooms.adopt')) this.personSeqReadsByAdopt++;
    return super.lastPersonSeq(roomId);
  }

  private async step(): Promise<void> {
    const step = this.afterNextStateRead;
    this.afterNextStateRead = undefined;
    await step?.();
  }
}

async function startWatchedNode(site: ClusterSite): Promise<{ node: RunningServer; store: WatchedStore }> {
  const store = new WatchedStore({ connectionString: site.databaseUrl, poolSize: 5 });
  const node = await startNode(site, {}, { store });
  cleanup(() => node.close());
  return { node, store };
}

/** Another node writing the room directly, its notifications plain (`room:version:seq`): a node must read. */
async function otherWriter(site: ClusterSite): Promise<PgStore> {
  const writer = new PgStore({ connectionString: site.databaseUrl, poolSize: 2, notify: 'in-commit' });
  await writer.open();
  cleanup(() => writer.close());
  return writer;
}

describe.skipIf(!enabled)('a node reading rooms from PostgreSQL', () => {
  it('refreshes a room another node changed from one snapshot: a commit between its reads waits for the next refresh', async () => {
    const site = await newSite(pgServer());
    const { node, store } = await startWatchedNode(site);
    const writer = await otherWriter(site);
    const person = await ok(node.url, 'register_user', { name: 'Reader' });
    const { room } = await ok(node.url, 'create_room', { room_name: 'Snapshot room' }, person.token);
    const first = (await ok(node.url, 'send_message', { room_id: room.room_id, text_content: 'hello' }, person.token)).message;
    const seen: string[] = [];
    node.app.bus.subscribe((e: RoomEvent) => {
      if (e.room_id !== room.room_id) return;
      if (e.event === 'message_new') seen.push(`new ${e.data.message.seq}:${e.data.message.text_content}`);
      if (e.event === 'message_update') seen.push(`update ${e.data.message.seq}:${e.data.message.text_content}`);
    });

    // Another node posts message 2, and edits it right after this node read the room's state
    // for that post, before it could read anything else.
    const stored = (await writer.getMessage(first.message_id))!;
    const { client_msg_id: _unused, ...base } = stored;
    const posted: Message = { ...base, message_id: randomUUID(), seq: 2, text_content: 'original', timestamp: new Date().toISOString() };
    const before = (await writer.loadRoom(room.room_id))!;
    store.afterNextStateRead = async () => {
      const edited = { ...posted, text_content: 'edited', edited_at: new Date().toISOString() };
      await writer.commitRoom(room.room_id, { messages: [edited], expectedVersion: before.version + 1 });
    };
    expect(await writer.commitRoom(room.room_id, { messages: [posted], expectedVersion: before.version })).toBe(before.version + 1);

    // The post is published as it was at its version, then the edit as an update: never the
    // edited text as the new message (a state of one version with messages of the next).
    await expect.poll(() => seen, { timeout: 5_000 }).toEqual(['new 2:original', 'update 2:edited']);
    expect(store.afterNextStateRead).toBeUndefined();
    expect(node.app.rooms.loaded(room.room_id)!.committedSeq).toBe(2);
  });

  it('sets up an imported room from its messages: no read of the last person message', async () => {
    const site = await newSite(pgServer());
    const { node, store } = await startWatchedNode(site);
    const person = await ok(node.url, 'register_user', { name: 'Importer' });
    const { room } = await ok(node.url, 'create_room', { room_name: 'Source' }, person.token);
    await ok(node.url, 'send_message', { room_id: room.room_id, text_content: 'kept' }, person.token);
    const gone = (await ok(node.url, 'send_message', { room_id: room.room_id, text_content: 'deleted later' }, person.token)).message;
    await ok(node.url, 'delete_message', { message_id: gone.message_id }, person.token);
    const link = await ok(node.url, 'export_chat_history', { room_id: room.room_id, format: 'json' }, person.token);
    const data = await (await fetch(node.url + link.url)).json();

    const imported = (await ok(node.url, 'import_chat_history', { data, room_name: 'Copy' }, person.token)).room;
    expect(store.personSeqReadsByAdopt).toBe(0);
    // The runtime's last person seq is the one the store holds (the deleted message does not count).
    const runtime = node.app.rooms.loaded(imported.room_id)!;
    const held = (runtime as unknown as { lastPersonSeq: number }).lastPersonSeq;
    expect(held).toBe(await store.lastPersonSeq(imported.room_id));
    expect(held).toBe(1);
  });
});
