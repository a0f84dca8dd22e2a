// Lazy start-up: open scans the room logs (ids, last seq, recovery) without parsing them; a room
// is parsed on first need.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { silentLogger, type Logger } from '../../src/logger.js';
import { FileStore } from '../../src/storage/file-store.js';
import type { Message } from '../../src/types.js';
import { makeMessage, makeRoom, memoryLogger, tempDir } from './storage-helpers.js';

let dir: string;
let cleanup: () => Promise<void>;
let logDir: string;
const stores: FileStore[] = [];

beforeEach(async () => {
  ({ dir, cleanup } = await tempDir());
  logDir = join(dir, 'room_messages');
  await mkdir(logDir, { recursive: true });
});
afterEach(async () => {
  await Promise.all(stores.splice(0).map((s) => s.close().catch(() => undefined)));
  await cleanup();
});

function store(opts: { logger?: Logger } = {}): FileStore {
  const s = new FileStore({ dataDir: dir, logger: opts.logger ?? silentLogger });
  stores.push(s);
  return s;
}

const jsonl = (messages: Message[]) => messages.map((m) => JSON.stringify(m) + '\n').join('');

async function writeRoom(roomId: string, count: number): Promise<Message[]> {
  const messages = Array.from({ length: count }, (_, i) => makeMessage(roomId, i + 1));
  await writeFile(join(logDir, `${roomId}.jsonl`), jsonl(messages));
  return messages;
}

const all = (s: FileStore, roomId: string) => s.readMessages(roomId, { afterSeq: 0, limit: 10_000 });
const lastSeq = async (s: FileStore, roomId: string) => (await s.loadRoom(roomId))?.lastSeq;

beforeEach(async () => {
  // Room states for the logs written by hand below.
  await writeFile(join(dir, 'rooms.json'), JSON.stringify(['r1', 'r2', 'r3'].map((r) => makeRoom(r))));
});

describe('lazy room logs', () => {
  it('parses a room on its first read, and knows counts and last seqs before that', async () => {
    const r1 = await writeRoom('r1', 5);
    await writeRoom('r2', 3);
    const s = store();
    await s.open();
    expect(s.stats().unparsedLogs).toBe(2);
    expect(await s.messageCount()).toBe(8);
    expect(await lastSeq(s, 'r1')).toBe(5);
    expect(await lastSeq(s, 'r2')).toBe(3);
    expect(s.stats().unparsedLogs).toBe(2); // none of that parsed anything

    expect(await all(s, 'r1')).toEqual(r1);
    expect(s.stats().unparsedLogs).toBe(1);
    expect(await s.messageCount()).toBe(8);
  });

  it('getMessage finds a message of a room not parsed yet (and parses only that room)', async () => {
    const r1 = await writeRoom('r1', 4);
    await writeRoom('r2', 4);
    const s = store();
    await s.open();
    expect(await s.getMessage(r1[2]!.message_id)).toEqual(r1[2]);
    expect(s.stats().unparsedLogs).toBe(1);
    expect(await s.getMessage('no-such-id')).toBeUndefined();
  });

  it('a commit to a room not parsed yet continues its seqs, in memory and after a reopen', async () => {
    const r1 = await writeRoom('r1', 3);
    const s = store();
    await s.open();
    const loaded = await s.loadRoom('r1');
    const next = makeMessage('r1', 4);
    await s.commitRoom('r1', { messages: [next], expectedVersion: loaded!.version });
    expect(await all(s, 'r1')).toEqual([...r1, next]);
    expect(await lastSeq(s, 'r1')).toBe(4);
    await s.close();

    const again = store();
    await again.open();
    expect((await all(again, 'r1')).map((m) => m.seq)).toEqual([1, 2, 3, 4]);
    expect(await again.messageCount()).toBe(4);
  });

  it('rejects a commit that reuses the id of a message in another room not parsed yet', async () => {
    const r1 = await writeRoom('r1', 2);
    await writeRoom('r2', 1);
    const s = store();
    await s.open();
    const loaded = await s.loadRoom('r2');
    const stolen = { ...r1[0]!, room_id: 'r2', seq: 2 };
    await expect(s.commitRoom('r2', { messages: [stolen], expectedVersion: loaded!.version })).rejects.toThrow(/belongs to room r1/);
  });

  it('serves the latest version of an edited message after a lazy load, in its original position', async () => {
    const [m1, m2, m3] = [makeMessage('r1', 1), makeMessage('r1', 2), makeMessage('r1', 3)];
    const m2v2 = { ...m2!, text_content: 'edited 编辑' };
    const m2v3 = { ...m2!, text_content: 'edited again', deleted: true };
    await writeFile(join(logDir, 'r1.jsonl'), jsonl([m1!, m2!, m3!, m2v2, m2v3]));
    const s = store();
    await s.open();
    expect(await s.messageCount()).toBe(3); // distinct ids, before any parsing
    expect(await s.getMessage(m2!.message_id)).toEqual(m2v3);
    expect(await all(s, 'r1')).toEqual([m1, m2v3, m3]);
    expect(await s.messageCount()).toBe(3);
  });

  it('reads lines the server did not write (other key order, CRLF) through the full parser', async () => {
    const m1 = makeMessage('r1', 1);
    const { seq, room_id, ...rest } = makeMessage('r1', 7);
    const reordered = JSON.stringify({ seq, room_id, ...rest });
    await writeFile(join(logDir, 'r1.jsonl'), JSON.stringify(m1) + '\r\n' + reordered + '\n');
    const s = store();
    await s.open();
    expect(await lastSeq(s, 'r1')).toBe(7);
    expect((await s.getMessage(rest.message_id))?.seq).toBe(7);
    expect((await all(s, 'r1')).map((m) => m.seq)).toEqual([1, 7]);
  });

  it('cuts a torn last line that looks like a server line but does not parse', async () => {
    const good = jsonl([makeMessage('r1', 1), makeMessage('r1', 2)]);
    const torn = JSON.stringify(makeMessage('r1', 3)).slice(0, 80) + '}\n';
    const file = join(logDir, 'r1.jsonl');
    await writeFile(file, good + torn);
    const { logger, warnings } = memoryLogger();
    const s = store({ logger });
    await s.open();
    expect(await readFile(file, 'utf8')).toBe(good);
    expect(warnings().some((w) => w.file === file && /line 3/.test(String(w.reason)))).toBe(true);
    expect(await lastSeq(s, 'r1')).toBe(2);
    expect(await s.messageCount()).toBe(2);
  });
});

describe('a malformed middle line', () => {
  it('that is clearly not a message line still makes open reject, naming file and line', async () => {
    const [a, b] = [makeMessage('r1', 1), makeMessage('r1', 2)];
    await writeFile(join(logDir, 'r1.jsonl'), JSON.stringify(a) + '\n{"message_id": truncated\n' + JSON.stringify(b) + '\n');
    await expect(store().open()).rejects.toThrow(/r1\.jsonl.*line 2/);
  });

  it('that looks like a server line is found on first use: logged, and the room reads and commits reject', async () => {
    const [a, b, c] = [makeMessage('r1', 1), makeMessage('r1', 2), makeMessage('r1', 3)];
    // Right shape (prefix, seq, closing brace) but not JSON: only the full parse notices.
    const broken = JSON.stringify(b).replace('"sender":', '"sender"');
    const file = join(logDir, 'r1.jsonl');
    const content = JSON.stringify(a) + '\n' + broken + '\n' + JSON.stringify(c) + '\n';
    await writeFile(file, content);
    const ok = await writeRoom('r2', 2);
    const { logger, lines } = memoryLogger();
    const s = store({ logger });
    await s.open(); // the cheap scan at open does not see it
    expect(await lastSeq(s, 'r1')).toBe(3);

    await expect(all(s, 'r1')).rejects.toThrow(/r1\.jsonl.*corrupt at line 2/);
    const errors = lines.filter((l) => l.level === 50);
    expect(errors).toHaveLength(1);
    expect(errors[0]!.file).toBe(file);
    expect(String((errors[0]!.err as { message: string }).message)).toMatch(/line 2/);
    // Later reads reject with the same error without parsing (or logging) again.
    await expect(all(s, 'r1')).rejects.toThrow(/line 2/);
    await expect(s.getMessage(a.message_id)).rejects.toThrow(/line 2/);
    await expect(s.searchMessages('r1', 'x', 5)).rejects.toThrow(/line 2/);
    const loaded = await s.loadRoom('r1');
    await expect(s.commitRoom('r1', { messages: [makeMessage('r1', 4)], expectedVersion: loaded!.version })).rejects.toThrow(/line 2/);
    expect(lines.filter((l) => l.level === 50)).toHaveLength(1);
    // The file is left alone, and other rooms work.
    expect(await readFile(file, 'utf8')).toBe(content);
    expect(await all(s, 'r2')).toEqual(ok);
  });
});
