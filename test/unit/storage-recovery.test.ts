// Start-up recovery (SPEC §5): torn last lines are cut with a warning, a bad line in the middle
// or a corrupt snapshot stops open with a message naming the file, and nothing is rewritten.
import { beforeEach, describe, expect, it } from 'vitest';
import { readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { FileStore } from '../../src/storage/file-store.js';
import { fileStoresPerTest, makeMessage, makeRoom, memoryLogger } from './storage-helpers.js';

const scratch = fileStoresPerTest({ withLogDir: true });
const store = scratch.store;
let dir: string;
let logDir: string;

beforeEach(async () => {
  ({ dir, logDir } = scratch);
  await writeFile(join(dir, 'rooms.json'), JSON.stringify([makeRoom('r1')]));
});

const line = (seq: number) => JSON.stringify(makeMessage('r1', seq)) + '\n';

/** The seqs a store serves for room r1 (the logs here are written by hand, with a room state). */
const seqs = async (s: FileStore) => (await s.readMessages('r1', { afterSeq: 0, limit: 100 })).map((m) => m.seq);

describe('torn room logs', () => {
  it('cuts a last line without a newline, keeps what precedes it, and warns naming the file', async () => {
    const good = line(1) + line(2);
    const file = join(logDir, 'r1.jsonl');
    await writeFile(file, good + line(3).slice(0, 40));
    const { logger, warnings } = memoryLogger();
    const s = store(logger);
    await s.open();
    expect(await seqs(s)).toEqual([1, 2]);
    expect(await readFile(file, 'utf8')).toBe(good);
    expect(warnings().some((w) => w.file === file && /torn/.test(w.msg))).toBe(true);

    // Commits continue cleanly after the cut.
    const loaded = await s.loadRoom('r1');
    expect(loaded?.lastSeq).toBe(2);
    await s.commitRoom('r1', { messages: [makeMessage('r1', 3)], expectedVersion: loaded!.version });
    await s.close();
    const again = store();
    await again.open();
    expect(await seqs(again)).toEqual([1, 2, 3]);
  });

  it('cuts a complete but unparsable last line (e.g. zero-filled after a crash)', async () => {
    const good = line(1);
    const file = join(logDir, 'r1.jsonl');
    await writeFile(file, good + '{"message_id":"x","seq":\n');
    const { logger, warnings } = memoryLogger();
    const s = store(logger);
    await s.open();
    expect(await s.messageCount()).toBe(1);
    expect(await readFile(file, 'utf8')).toBe(good);
    expect(warnings()).toHaveLength(1);
    expect(String(warnings()[0]!.reason)).toMatch(/line 2/);
  });

  it('handles a file that is nothing but a torn line', async () => {
    const file = join(logDir, 'r1.jsonl');
    await writeFile(file, Buffer.alloc(30)); // zeroes, no newline
    const s = store();
    await s.open();
    expect((await s.loadRoom('r1'))?.lastSeq).toBe(0);
    expect((await stat(file)).size).toBe(0);
  });

  it('refuses to open on a bad line in the middle, naming the file and line, without touching it', async () => {
    const file = join(logDir, 'r1.jsonl');
    const content = line(1) + 'not json\n' + line(3);
    await writeFile(file, content);
    const s = store();
    await expect(s.open()).rejects.toThrow(/r1\.jsonl.*line 2/);
    expect(await readFile(file, 'utf8')).toBe(content);
    // The failed open released the lock.
    await expect(stat(join(dir, 'server.lock'))).rejects.toThrow(/ENOENT/);
  });

  it('treats a line of another room as corrupt', async () => {
    await writeFile(join(logDir, 'r1.jsonl'), JSON.stringify(makeMessage('r2', 1)) + '\n' + line(2));
    await expect(store().open()).rejects.toThrow(/r1\.jsonl.*line 1.*room_id/);
  });

  it('orders a hand-edited log by seq and applies versions wherever they appear', async () => {
    const [m1, m2, m3] = [makeMessage('r1', 1), makeMessage('r1', 2), makeMessage('r1', 3)];
    const m1v2 = { ...m1!, text_content: 'edited' };
    const lines = [m2, m1, m1v2, m3].map((m) => JSON.stringify(m) + '\n').join('');
    await writeFile(join(logDir, 'r1.jsonl'), lines);
    const s = store();
    await s.open();
    expect(await s.readMessages('r1', { afterSeq: 0, limit: 10 })).toEqual([m1v2, m2, m3]);
    expect(await s.getMessage(m1!.message_id)).toEqual(m1v2);
    expect(await s.messageCount()).toBe(3);
  });

  it('loads blank lines and CRLF line ends without complaint', async () => {
    await writeFile(join(logDir, 'r1.jsonl'), line(1) + '\n' + line(2).replace('\n', '\r\n'));
    const s = store();
    await s.open();
    expect(await seqs(s)).toEqual([1, 2]);
  });
});

describe('corrupt snapshots', () => {
  it.each([
    ['rooms.json', '{broken'],
    ['agents.json', '{"agent_id":"a1"}'],
    ['users.json', '[{"name":"no id"}]'],
  ])('rejects open naming %s and leaves it byte-for-byte unchanged', async (file, content) => {
    await writeFile(join(dir, file), content);
    await expect(store().open()).rejects.toThrow(new RegExp(file.replace('.', '\\.')));
    expect(await readFile(join(dir, file), 'utf8')).toBe(content);
  });

  it('treats missing snapshot files as empty and creates them', async () => {
    await rm(join(dir, 'rooms.json'));
    const s = store();
    await s.open();
    expect([await s.listParticipants(), await s.listRoomIds()]).toEqual([[], []]);
    for (const f of ['agents.json', 'users.json', 'rooms.json']) expect(await readFile(join(dir, f), 'utf8')).toBe('[]\n');
  });
});
