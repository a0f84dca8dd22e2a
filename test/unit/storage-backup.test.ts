// Backups of a live file store (src/backup.ts) with the state journal: the copy serves what the
// store served, including changes not compacted into the snapshots yet, and compaction keeps
// the journal files a running backup may still need.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { backupDataDir } from '../../src/backup.js';
import type { FileStore } from '../../src/storage/file-store.js';
import { dumpStore } from './store-contract.js';
import { makeAgent, makeMessage, makeRoom, makeUser, tempDir } from './storage-helpers.js';
import { storeOpener } from '../helpers/store.js';

let dir: string;
let cleanup: () => Promise<void>;
let target: { dir: string; cleanup: () => Promise<void> };
const stores: FileStore[] = [];

beforeEach(async () => {
  ({ dir, cleanup } = await tempDir());
  target = await tempDir();
});
afterEach(async () => {
  await Promise.all(stores.splice(0).map((s) => s.close().catch(() => undefined)));
  await cleanup();
  await target.cleanup();
});

// small: the state lives in the snapshots alone, each change replacing one (no journal).
const openStore = storeOpener({ dataDir: () => dir, track: (s) => stores.push(s) });

describe('backup of a live store', () => {
  it('copies the journal with the snapshots: the copy serves every change, compacted or not', async () => {
    const s = await openStore();
    await s.putParticipant({ kind: 'user', record: makeUser('u1', { name: 'Ann' }) }, 'ann');
    const v = await s.createRoom(makeRoom('r1'));
    await s.compact(); // some state in the snapshots…
    await s.commitRoom('r1', { room: makeRoom('r1', { room_description: 'journal only' }), messages: [makeMessage('r1', 1)], expectedVersion: v });
    await s.putParticipant({ kind: 'user', record: makeUser('u2', { name: 'Bo' }) }, 'bo'); // …and some only in the journal
    const served = await dumpStore(s, { keys: ['ann', 'bo'] });

    await backupDataDir(dir, target.dir);
    expect(await readdir(join(dir, 'journal'))).not.toContain('backup.hold'); // removed when done
    const copy = await openStore({ dataDir: target.dir });
    expect(await dumpStore(copy, { keys: ['ann', 'bo'] })).toEqual(served);
  });

  it('copies the three snapshots as they were at one moment, though a change replaced two of them mid-copy', async () => {
    const s = await openStore({ small: true });
    await s.putParticipant({ kind: 'user', record: makeUser('u1', { name: 'Ann' }) }, 'ann');
    await s.createRoom(makeRoom('r1'));
    const attempts: number[] = [];
    await backupDataDir(dir, target.dir, {
      afterSnapshotCopy: async (name, attempt) => {
        attempts.push(attempt);
        // After agents.json was copied, before rooms.json: an agent registers and makes a room.
        // Copied once each, the backup would hold the room and not its creator.
        if (name === 'agents.json' && attempt === 1) {
          await s.putParticipant({ kind: 'agent', record: makeAgent('a2', { name: 'Bot' }) }, 'bot');
          await s.createRoom(makeRoom('r2', { created_by: 'Bot', created_by_id: 'a2' }));
        }
      },
    });
    expect(attempts).toEqual([1, 1, 1, 2, 2, 2]); // copied again
    const served = await dumpStore(s, { keys: ['ann', 'bot'] });
    const copy = await openStore({ dataDir: target.dir });
    expect(await dumpStore(copy, { keys: ['ann', 'bot'] })).toEqual(served);
  });

  it('keeps compacted journal files while a backup holds them, and releases them afterwards', async () => {
    const s = await openStore();
    await s.createRoom(makeRoom('r1'));
    await writeFile(join(dir, 'journal', 'backup.hold'), 'test');
    await s.compact();
    expect((await readdir(join(dir, 'journal'))).filter((f) => f.endsWith('.jsonl'))).toHaveLength(1);
    const { rm } = await import('node:fs/promises');
    await rm(join(dir, 'journal', 'backup.hold'));
    await s.compact();
    expect((await readdir(join(dir, 'journal'))).filter((f) => f.endsWith('.jsonl'))).toHaveLength(0);
  });

  it('streams logs larger than a read chunk and leaves a torn last line behind', async () => {
    const { mkdir, readFile } = await import('node:fs/promises');
    await mkdir(join(dir, 'room_messages'), { recursive: true });
    let whole = '';
    for (let seq = 1; seq <= 2000; seq++) whole += JSON.stringify(makeMessage('r1', seq)) + '\n';
    await writeFile(join(dir, 'room_messages', 'r1.jsonl'), whole + '{"message_id":"torn');
    await backupDataDir(dir, target.dir);
    expect(whole.length).toBeGreaterThan(3 * 65536);
    expect(await readFile(join(target.dir, 'room_messages', 'r1.jsonl'), 'utf8')).toBe(whole);
  });
});
