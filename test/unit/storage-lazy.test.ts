// Lazy start-up: open scans the room logs (ids, last seq, recovery) without parsing them; a room
// is parsed on first need, and a background warm-up parses the rest after open.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { silentLogger, type Logger } from '../../src/logger.js';
import { FileStore } from '../../src/storage/file-store.js';
import type { Message } from '../../src/types.js';
import { makeMessage, memoryLogger, tempDir } from './storage-helpers.js';

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

function store(opts: { logger?: Logger; warmUp?: boolean } = {}): FileStore {
  const s = new FileStore({ dataDir: dir, logger: opts.logger ?? silentLogger, warmUp: opts.warmUp ?? false });
  stores.push(s);
  return s;
}

const jsonl = (messages: Message[]) => messages.map((m) => JSON.stringify(m) + '\n').join('');

async function writeRoom(roomId: string, count: number): Promise<Message[]> {
  const messages = Array.from({ length: count }, (_, i) => makeMessage(roomId, i + 1));
  await writeFile(join(logDir, `${roomId}.jsonl`), jsonl(messages));
  return messages;
}

describe('lazy room logs', () => {
  it('parses a room on its first roomMessages, and knows counts and next seqs before that', async () => {
    const r1 = await writeRoom('r1', 5);
    await writeRoom('r2', 3);
    const s = store();
    await s.open();
    expect(s.stats().unparsedLogs).toBe(2);
    expect(s.messageCount()).toBe(8);
    expect(s.nextSeq('r1')).toBe(6);
    expect(s.nextSeq('r2')).toBe(4);
    expect(s.stats().unparsedLogs).toBe(2); // none of that parsed anything

    expect(s.roomMessages('r1')).toEqual(r1);
    expect(s.stats().unparsedLogs).toBe(1);
    expect(s.roomMessages('r1')).toBe(s.roomMessages('r1')); // parsed once
    expect(s.messageCount()).toBe(8);
  });

  it('getMessage finds a message of a room not parsed yet (and parses only that room)', async () => {
    const r1 = await writeRoom('r1', 4);
    await writeRoom('r2', 4);
    const s = store();
    await s.open();
    expect(s.getMessage(r1[2]!.message_id)).toEqual(r1[2]);
    expect(s.stats().unparsedLogs).toBe(1);
    expect(s.getMessage('no-such-id')).toBeUndefined();
  });

  it('an append to a room not parsed yet continues its seqs, in memory and after a reopen', async () => {
    const r1 = await writeRoom('r1', 3);
    const s = store();
    await s.open();
    const next = makeMessage('r1', s.nextSeq('r1'));
    expect(next.seq).toBe(4);
    await s.appendMessages('r1', [next]);
    expect(s.roomMessages('r1')).toEqual([...r1, next]);
    expect(s.nextSeq('r1')).toBe(5);
    await s.close();

    const again = store();
    await again.open();
    expect(again.roomMessages('r1').map((m) => m.seq)).toEqual([1, 2, 3, 4]);
    expect(again.messageCount()).toBe(4);
  });

  it('rejects an append that reuses the id of a message in another room not parsed yet', async () => {
    const r1 = await writeRoom('r1', 2);
    await writeRoom('r2', 1);
    const s = store();
    await s.open();
    s.roomMessages('r2');
    const stolen = { ...r1[0]!, room_id: 'r2', seq: s.nextSeq('r2') };
    await expect(s.appendMessages('r2', [stolen])).rejects.toThrow(/belongs to room r1/);
  });

  it('warms every room up in the background after open', async () => {
    for (let r = 0; r < 20; r++) await writeRoom(`room-${r}`, 50);
    const { logger, lines } = memoryLogger();
    const s = store({ logger, warmUp: true });
    await s.open();
    expect(s.stats().unparsedLogs).toBeGreaterThan(0); // open did not parse them
    await s.warmedUp();
    expect(s.stats().unparsedLogs).toBe(0);
    expect(s.messageCount()).toBe(1000);
    expect(s.roomMessages('room-7').map((m) => m.seq)).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
    expect(lines.some((l) => l.msg === 'storage warm-up done' && l.rooms === 20)).toBe(true);
  });

  it('close stops the warm-up', async () => {
    for (let r = 0; r < 20; r++) await writeRoom(`room-${r}`, 10);
    const s = store({ warmUp: true });
    await s.open();
    await s.close();
    await s.warmedUp(); // resolves although rooms were left
    expect(s.stats().unparsedLogs).toBeGreaterThan(0);
  });

  it('serves the latest version of an edited message after a lazy load, in its original position', async () => {
    const [m1, m2, m3] = [makeMessage('r1', 1), makeMessage('r1', 2), makeMessage('r1', 3)];
    const m2v2 = { ...m2!, text_content: 'edited 编辑' };
    const m2v3 = { ...m2!, text_content: 'edited again', deleted: true };
    await writeFile(join(logDir, 'r1.jsonl'), jsonl([m1!, m2!, m3!, m2v2, m2v3]));
    const s = store();
    await s.open();
    expect(s.messageCount()).toBe(3); // distinct ids, before any parsing
    expect(s.getMessage(m2!.message_id)).toEqual(m2v3);
    expect(s.roomMessages('r1')).toEqual([m1, m2v3, m3]);
    expect(s.messageCount()).toBe(3);
  });

  it('reads lines the server did not write (other key order, CRLF) through the full parser', async () => {
    const m1 = makeMessage('r1', 1);
    const { seq, room_id, ...rest } = makeMessage('r1', 7);
    const reordered = JSON.stringify({ seq, room_id, ...rest });
    await writeFile(join(logDir, 'r1.jsonl'), JSON.stringify(m1) + '\r\n' + reordered + '\n');
    const s = store();
    await s.open();
    expect(s.nextSeq('r1')).toBe(8);
    expect(s.getMessage(rest.message_id)?.seq).toBe(7);
    expect(s.roomMessages('r1').map((m) => m.seq)).toEqual([1, 7]);
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
    expect(s.nextSeq('r1')).toBe(3);
    expect(s.messageCount()).toBe(2);
  });
});

describe('a malformed middle line', () => {
  it('that is clearly not a message line still makes open reject, naming file and line', async () => {
    const [a, b] = [makeMessage('r1', 1), makeMessage('r1', 2)];
    await writeFile(join(logDir, 'r1.jsonl'), JSON.stringify(a) + '\n{"message_id": truncated\n' + JSON.stringify(b) + '\n');
    await expect(store().open()).rejects.toThrow(/r1\.jsonl.*line 2/);
  });

  it('that looks like a server line is found on first use: logged, and the room reads and appends throw', async () => {
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
    expect(s.nextSeq('r1')).toBe(4);

    expect(() => s.roomMessages('r1')).toThrow(/r1\.jsonl.*corrupt at line 2/);
    const errors = lines.filter((l) => l.level === 50);
    expect(errors).toHaveLength(1);
    expect(errors[0]!.file).toBe(file);
    expect(String((errors[0]!.err as { message: string }).message)).toMatch(/line 2/);
    // Later reads throw the same error without parsing (or logging) again.
    expect(() => s.roomMessages('r1')).toThrow(/line 2/);
    expect(() => s.getMessage(a.message_id)).toThrow(/line 2/);
    await expect(s.appendMessages('r1', [makeMessage('r1', 4)])).rejects.toThrow(/line 2/);
    expect(lines.filter((l) => l.level === 50)).toHaveLength(1);
    // The file is left alone, and other rooms work.
    expect(await readFile(file, 'utf8')).toBe(content);
    expect(s.roomMessages('r2')).toEqual(ok);
  });

  it('found by the warm-up is logged and skipped; the other rooms are parsed', async () => {
    const b = makeMessage('r1', 2);
    await writeFile(
      join(logDir, 'r1.jsonl'),
      jsonl([makeMessage('r1', 1)]) + JSON.stringify(b).replace('"role":', '"role"') + '\n' + jsonl([makeMessage('r1', 3)]),
    );
    await writeRoom('r2', 2);
    await writeRoom('r3', 2);
    const { logger, lines } = memoryLogger();
    const s = store({ logger, warmUp: true });
    await s.open();
    await s.warmedUp();
    expect(s.stats().unparsedLogs).toBe(1);
    expect(lines.some((l) => l.level === 50 && String(l.file).endsWith('r1.jsonl'))).toBe(true);
    expect(lines.some((l) => l.msg === 'storage warm-up done' && l.failed === 1)).toBe(true);
    expect(s.roomMessages('r3')).toHaveLength(2);
    expect(() => s.roomMessages('r1')).toThrow(/line 2/);
  });
});
