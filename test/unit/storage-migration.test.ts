// Migration: a DATA_DIR written by the release before the Store seam v2 (fixtures/layout-v1,
// produced through that release's real server, see fixtures/layout-v1.json) opens without
// conversion and without loss, serves everything it holds, takes new writes, and stays in the
// SPEC §5 layout (snapshots compacted from the state journal, logs only appended to).
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { cp, readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { hashToken } from '../../src/identity/secrets.js';
import type { FileStore } from '../../src/storage/file-store.js';
import type { AgentRecord, Message, RoomRecord, UserRecord } from '../../src/types.js';
import { dumpStore } from './store-contract.js';
import { makeMessage, tempDir } from './storage-helpers.js';
import { storeOpener } from '../helpers/store.js';

const FIXTURE = fileURLToPath(new URL('./fixtures/layout-v1', import.meta.url));
const info = JSON.parse(await readFile(fileURLToPath(new URL('./fixtures/layout-v1.json', import.meta.url)), 'utf8')) as {
  roomId: string;
  otherId: string;
  tokens: Record<'alice' | 'bob' | 'claude' | 'gpt', string>;
  oldClaude: string;
};

let dir: string;
let cleanup: () => Promise<void>;
const stores: FileStore[] = [];

beforeEach(async () => {
  ({ dir, cleanup } = await tempDir());
  await cp(FIXTURE, dir, { recursive: true });
});
afterEach(async () => {
  await Promise.all(stores.splice(0).map((s) => s.close().catch(() => undefined)));
  await cleanup();
});

const openStore = storeOpener({ dataDir: () => dir, track: (s) => stores.push(s) });

const readJson = async <T>(file: string): Promise<T> => JSON.parse(await readFile(join(FIXTURE, file), 'utf8')) as T;

/** The messages of a fixture log as the old release defined them: latest line of an id wins, in seq order. */
async function expectedMessages(roomId: string): Promise<Message[]> {
  const text = await readFile(join(FIXTURE, 'room_messages', `${roomId}.jsonl`), 'utf8');
  const byId = new Map<string, Message>();
  for (const line of text.split('\n').filter(Boolean)) {
    const m = JSON.parse(line) as Message;
    byId.set(m.message_id, m);
  }
  return [...byId.values()].sort((a, b) => a.seq - b.seq);
}

describe('a DATA_DIR of the previous release', () => {
  it('serves every participant, room and message it holds, as the old files define them', async () => {
    const agents = await readJson<AgentRecord[]>('agents.json');
    const users = await readJson<UserRecord[]>('users.json');
    const rooms = await readJson<RoomRecord[]>('rooms.json');
    const s = await openStore();

    const participants = await s.listParticipants();
    expect(participants.filter((p) => p.kind === 'agent').map((p) => p.record)).toEqual(agents);
    expect(participants.filter((p) => p.kind === 'user').map((p) => p.record)).toEqual(users);
    for (const [name, token] of Object.entries(info.tokens)) {
      const found = await s.findParticipantByTokenHash(hashToken(token));
      expect(found?.record.name.toLowerCase(), name).toBe(name === 'bob' ? '李雷' : name);
    }
    expect(await s.findParticipantByTokenHash(hashToken(info.oldClaude))).toBeUndefined(); // rotated away
    for (const name of ['alice', '李雷', 'claude', 'gpt']) expect((await s.findParticipantByNameKey(name))?.record.name.toLowerCase(), name).toBe(name);

    expect((await s.listRoomIds()).sort()).toEqual(rooms.map((r) => r.room_id).sort());
    for (const room of rooms) {
      const messages = await expectedMessages(room.room_id);
      const loaded = await s.loadRoom(room.room_id);
      expect(loaded?.room).toEqual(room);
      expect(loaded?.lastSeq).toBe(messages.at(-1)!.seq);
      expect(await s.readMessages(room.room_id, { afterSeq: 0, limit: 1000 })).toEqual(messages);
      for (const m of messages) expect(await s.getMessage(m.message_id)).toEqual(m);
      // The derived rooms of a member agree with what the old release kept on the records.
      for (const member of room.members) expect(await s.roomsOf(member.participant_id)).toContain(room.room_id);
    }
    const alice = users.find((u) => u.name === 'Alice')!;
    expect((await s.roomsOf(alice.user_id)).sort()).toEqual([...alice.rooms].sort());
    expect((await s.listRoomSummaries(false)).map((r) => r.room_id)).toEqual([info.roomId]); // the other is archived

    const design = await expectedMessages(info.roomId);
    expect(design.find((m) => m.deleted)?.text_content).toBe('');
    expect(design.some((m) => m.text_content === 'fixed text')).toBe(true);
    expect((await s.findByClientMsgId(info.roomId, alice.user_id, 'alice-1'))?.message_id).toBe(design[0]!.message_id);
    expect(await s.lastSeqBySender(info.roomId, alice.user_id)).toBe(
      Math.max(...design.filter((m) => m.sender_id === alice.user_id && m.visible).map((m) => m.seq)),
    );
    expect(await s.lastPersonSeq(info.roomId)).toBe(
      Math.max(...design.filter((m) => m.role === 'user' && m.visible && !m.deleted).map((m) => m.seq)),
    );
    expect(await s.messageCount()).toBe(design.length + (await expectedMessages(info.otherId)).length);
  });

  it('takes new writes, keeps the old bytes of every log, and stays in the SPEC layout after a restart', async () => {
    const s = await openStore();
    const before = await dumpStore(s);
    const loaded = (await s.loadRoom(info.roomId))!;
    const next = makeMessage(info.roomId, loaded.lastSeq + 1);
    await s.commitRoom(info.roomId, {
      room: { ...loaded.room, room_description: 'migrated' },
      messages: [next],
      expectedVersion: loaded.version,
    });
    await s.close();

    const oldLog = await readFile(join(FIXTURE, 'room_messages', `${info.roomId}.jsonl`), 'utf8');
    const newLog = await readFile(join(dir, 'room_messages', `${info.roomId}.jsonl`), 'utf8');
    expect(newLog).toBe(oldLog + JSON.stringify(next) + '\n');
    const rooms = JSON.parse(await readFile(join(dir, 'rooms.json'), 'utf8')) as RoomRecord[];
    expect(rooms.find((r) => r.room_id === info.roomId)?.room_description).toBe('migrated');
    expect(await readdir(join(dir, 'journal'))).toEqual([]); // compacted on close

    const again = await openStore();
    const after = await dumpStore(again);
    expect(after.participants).toEqual(before.participants);
    expect(after.messageCount).toBe(before.messageCount + 1);
    expect((await again.getMessage(next.message_id))).toEqual(next);
  });
});
