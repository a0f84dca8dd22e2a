// What a node reads when another node committed a room (change-events.ts): the new messages up
// to the loaded seq, the rewritten older ones, and the room's last person seq after them.
import { describe, expect, it } from 'vitest';
import { lastPersonSeqAfter, readChanges } from '../../src/runtime/change-events.js';
import { MemoryStore } from '../../src/storage/memory-store.js';
import { makeMessage, makeRoom } from './storage-helpers.js';

async function roomWithPeople() {
  const store = new MemoryStore();
  let version = await store.createRoom(makeRoom('r'));
  const first = [makeMessage('r', 1, { role: 'user' }), makeMessage('r', 2, { role: 'ai_agent', sender_id: 'a1' })];
  version = await store.commitRoom('r', { messages: first, expectedVersion: version });
  return { store, version, first };
}

describe('readChanges and lastPersonSeqAfter', () => {
  it('reads the new messages through the loaded seq, and takes the last person seq from them', async () => {
    const { store, version } = await roomWithPeople();
    const from = { version, lastSeq: 2 };
    const later = [makeMessage('r', 3, { role: 'ai_agent', sender_id: 'a1' }), makeMessage('r', 4, { role: 'user' }), makeMessage('r', 5, { role: 'ai_agent', sender_id: 'a1' })];
    const to = await store.commitRoom('r', { messages: later, expectedVersion: version });
    const loaded = (await store.loadRoom('r'))!;
    // A commit after the load is left for the next refresh.
    await store.commitRoom('r', { messages: [makeMessage('r', 6, { role: 'user' })], expectedVersion: to });
    const changes = await readChanges(store, 'r', from, loaded);
    expect(changes.added.map((m) => m.seq)).toEqual([3, 4, 5]);
    expect(await lastPersonSeqAfter(store, 'r', 1, changes)).toBe(4);
    expect(await lastPersonSeqAfter(store, 'r', 1, { added: changes.added.slice(2), updated: [] })).toBe(1);
  });

  it('asks the store when a person message was rewritten (a deletion moves it back)', async () => {
    const { store, version, first } = await roomWithPeople();
    await store.commitRoom('r', { messages: [{ ...first[0]!, deleted: true }], expectedVersion: version });
    const deletion = { added: [], updated: [{ ...first[0]!, deleted: true }] };
    expect(await lastPersonSeqAfter(store, 'r', 1, deletion)).toBe(0);
  });
});
