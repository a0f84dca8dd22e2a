// The default file store (docs/storage.md): a change is acknowledged once its journal line is
// durable, and while the snapshots are small they follow the journal within `followDelayMs`
// of a change (one compaction at most that often), so a person reading agents.json,
// users.json and rooms.json sees every acknowledged change moments later, even under steady
// load.
import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/logger.js';
import type { RoomRecord } from '../../src/types.js';
import { fileStoresPerTest, makeRoom, makeUser } from './storage-helpers.js';

const files = fileStoresPerTest();
const roomsOnDisk = async (): Promise<RoomRecord[]> => JSON.parse(await readFile(join(files.dir, 'rooms.json'), 'utf8')) as RoomRecord[];
const journalLines = async (): Promise<number> => {
  let lines = 0;
  for (const name of await readdir(join(files.dir, 'journal'))) lines += (await readFile(join(files.dir, 'journal', name), 'utf8')).split('\n').filter(Boolean).length;
  return lines;
};

describe('small state: the snapshots follow the journal', () => {
  it('acknowledges from the journal, then the snapshot files catch up', async () => {
    const store = files.store(silentLogger, { compactEveryMs: 0, followDelayMs: 50 });
    await store.open();
    await store.createRoom(makeRoom('r1'));
    await store.putParticipant({ kind: 'user', record: makeUser('u1', { name: 'Ann' }) }, 'ann');
    // Acknowledged: in the journal; the snapshots catch up without another call.
    expect(await journalLines()).toBeGreaterThan(0);
    await expect.poll(async () => (await roomsOnDisk()).map((r) => r.room_id)).toEqual(['r1']);
    await expect.poll(async () => JSON.parse(await readFile(join(files.dir, 'users.json'), 'utf8'))).toMatchObject([{ user_id: 'u1' }]);
    await expect.poll(journalLines).toBe(0);
  });

  it('keeps them within a few compactions of the journal under steady changes', async () => {
    const store = files.store(silentLogger, { compactEveryMs: 0, followDelayMs: 30 });
    await store.open();
    // Changes every 10 ms for 400 ms: a compaction after each change would be reset forever
    // by a debounce; the store compacts at most every 30 ms instead, while the changes go on.
    const started = Date.now();
    let n = 0;
    let seenWhileBusy = 0;
    while (Date.now() - started < 400) {
      await store.createRoom(makeRoom(`r${n++}`));
      seenWhileBusy = Math.max(seenWhileBusy, (await roomsOnDisk()).length);
      await new Promise((r) => setTimeout(r, 10));
    }
    expect(seenWhileBusy).toBeGreaterThan(0);
    await expect.poll(async () => (await roomsOnDisk()).length).toBe(n);
  });

  it('leaves the small-state rewrite to the syncSnapshotBytes option', async () => {
    const store = files.store(silentLogger, { compactEveryMs: 0, followDelayMs: 0, syncSnapshotBytes: 256 * 1024 });
    await store.open();
    await store.createRoom(makeRoom('r1'));
    expect((await roomsOnDisk()).map((r) => r.room_id)).toEqual(['r1']);
    expect(await journalLines()).toBe(0);
  });
});
