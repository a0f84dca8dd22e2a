// The snapshots are checkpoints of the state journal (SPEC v3 §5): a change is durable as a
// journal line, and the snapshot files follow within `checkpointMs` (the server's default is
// 1 s), written atomically; the journal files a checkpoint covers are deleted.
import { describe, expect, it } from 'vitest';
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { silentLogger } from '../../src/logger.js';
import { fileStoresPerTest, makeRoom, makeUser } from './storage-helpers.js';

const files = fileStoresPerTest();

const usersOnDisk = async (): Promise<string[]> => (JSON.parse(await readFile(join(files.dir, 'users.json'), 'utf8')) as { name: string }[]).map((u) => u.name);
const journalBytes = async (): Promise<number> => {
  let bytes = 0;
  for (const f of await readdir(join(files.dir, 'journal'))) if (f.endsWith('.jsonl')) bytes += (await stat(join(files.dir, 'journal', f))).size;
  return bytes;
};

describe('snapshots as checkpoints of the state journal', () => {
  it('a change is a journal line at once, and in the snapshot within checkpointMs', async () => {
    const store = files.store(silentLogger, { checkpointMs: 200 });
    await store.open();
    await store.putParticipant({ kind: 'user', record: makeUser('u1', { name: 'ada' }) }, 'ada');
    // Durable as a journal line when the call resolves; the snapshot has not been rewritten yet.
    expect(await journalBytes()).toBeGreaterThan(0);
    expect(await usersOnDisk()).toEqual([]);
    await expect.poll(usersOnDisk, { timeout: 5_000 }).toEqual(['ada']);
    await expect.poll(journalBytes, { timeout: 5_000 }).toBe(0);
    // A later change schedules the next checkpoint.
    await store.putParticipant({ kind: 'user', record: makeUser('u2', { name: 'bob' }) }, 'bob');
    await expect.poll(async () => (await usersOnDisk()).sort(), { timeout: 5_000 }).toEqual(['ada', 'bob']);
  });

  it('with checkpoints off the snapshot trails until the checkpoint of a clean shutdown', async () => {
    const store = files.store(silentLogger, { checkpointMs: 0, compactEveryMs: 0 });
    await store.open();
    await store.createRoom(makeRoom('r1'));
    expect(JSON.parse(await readFile(join(files.dir, 'rooms.json'), 'utf8'))).toEqual([]);
    await store.close();
    expect((JSON.parse(await readFile(join(files.dir, 'rooms.json'), 'utf8')) as { room_id: string }[]).map((r) => r.room_id)).toEqual(['r1']);
  });
});
