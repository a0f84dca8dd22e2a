// Search over the log (log-search.ts): the raw-byte prefilters, the reused read buffer and the
// early stop must return exactly what a full parse returns. Every query is compared with the
// reference store (MemoryStore: every message lowered and compared) on a room holding tricky
// texts — mixed case, JSON escapes, Chinese, emoji, İ and K (which lower to ASCII), edits,
// deletes, invisible messages — with blocks and pieces so small that matches fall across
// every boundary, and with the production sizes.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/logger.js';
import { FileStore } from '../../src/storage/file-store.js';
import { candidateLines, searchTuning } from '../../src/storage/log-search.js';
import { MemoryStore } from '../../src/storage/memory-store.js';
import type { Store } from '../../src/storage/store.js';
import type { Message } from '../../src/types.js';
import { makeMessage, makeRoom, tempDir } from './storage-helpers.js';

const ROOM = 'search-room';
const TEXTS = [
  'Hello World',
  'hello world, again',
  'HELLO WORLD SHOUTED',
  'say "hi" to the \\ backslash',
  'line one\nline two\ttabbed',
  'control \u0001 char and \u001f',
  '架构设计评审 performance',
  '数据库 schema 迁移',
  'emoji 🎉 party 🚀 launch',
  'İstanbul is a city',
  'the \u212a (Kelvin) sign',
  'straße and STRASSE',
  'ÉTÉ été Été',
  'unicode escape \u2028 separator',
  'mixed 中文 and English Words',
  'x'.repeat(3000) + ' long line end-marker',
  'regex chars .*+?^${}()|[]/ here',
  'needle-at-end',
];
const QUERIES = [
  'hello', 'HELLO', 'Hello World', 'world', 'o w', '"hi"', '"', '\\', 'backslash', '\n', 'one\nline', '\t', '\u0001',
  '架构', '数据库 schema', '中文 and', '🎉', 'party 🚀', 'istanbul', 'i', 'i̇', 'k', 'kelvin', 'STRASSE', 'straße', 'été',
  'ÉTÉ', '\u2028', 'end-marker', 'xxxx', '.*+?', '[]', '$', 'needle', 'no such text', 'zzqx', '不存在的词语', 'edited', 'gone',
];

let dir: { dir: string; cleanup: () => Promise<void> };
let file: FileStore;
let reference: MemoryStore;
const saved = { ...searchTuning };

beforeAll(async () => {
  dir = await tempDir();
  file = new FileStore({ dataDir: dir.dir, logger: silentLogger, cacheMessages: 0, compactEveryMs: 0 });
  await file.open();
  reference = new MemoryStore();
  const stores: Store[] = [file, reference];
  const versions = new Map<Store, number>();
  for (const s of stores) versions.set(s, await s.createRoom(makeRoom(ROOM)));
  const commit = async (messages: Message[]) => {
    for (const s of stores) versions.set(s, await s.commitRoom(ROOM, { messages, expectedVersion: versions.get(s)! }));
  };
  let seq = 0;
  const all: Message[] = [];
  for (let round = 0; round < 6; round++) {
    const batch = TEXTS.map((text, i) =>
      makeMessage(ROOM, ++seq, { text_content: `${text} #${seq}`, visible: (seq + round) % 7 !== 0, sender_id: i % 2 ? 'a1' : 'u1' }),
    );
    await commit(batch);
    all.push(...batch);
  }
  // Later versions of old messages: edits (the old text must no longer match) and deletes.
  await commit([
    { ...all[0]!, text_content: 'edited Hello again' },
    { ...all[1]!, text_content: '', deleted: true },
    { ...all[8]!, text_content: 'gone 🎉', visible: false },
    { ...all[20]!, text_content: 'edited 架构' },
  ]);
});

afterAll(async () => {
  await file.close();
  await dir.cleanup();
});

afterEach(() => Object.assign(searchTuning, saved));

describe('search over the log equals a full parse', () => {
  it.each([
    ['production sizes', saved.blockBytes, saved.pieceBytes],
    ['blocks smaller than a line, tiny pieces', 256, 7],
    ['odd block and piece sizes', 4099, 61],
  ])('%s', async (_name, blockBytes, pieceBytes) => {
    Object.assign(searchTuning, { blockBytes, pieceBytes });
    for (const q of QUERIES) {
      for (const limit of [1, 3, 1000]) {
        const got = await file.searchMessages(ROOM, q, limit);
        expect(got, `${JSON.stringify(q)} limit ${limit}`).toEqual(await reference.searchMessages(ROOM, q, limit));
      }
    }
    expect((await file.searchMessages(ROOM, 'hello', 1000)).length).toBeGreaterThan(5);
  });
});

describe('candidate lines', () => {
  const lines = TEXTS.map((t) => JSON.stringify({ text_content: t }));
  const block = Buffer.from(lines.join('\n') + '\n', 'utf8');
  const candidates = (q: string, pieceBytes: number): string[] => {
    searchTuning.pieceBytes = pieceBytes;
    const out: string[] = [];
    candidateLines(q.toLowerCase())(block, (start, end) => out.push(block.toString('utf8', start, end)));
    return out;
  };

  it.each(QUERIES)('never drops a line whose text matches %j, at any piece size', (q) => {
    const matching = lines.filter((_, i) => TEXTS[i]!.toLowerCase().includes(q.toLowerCase()));
    for (const piece of [1, 5, 64, 65536]) expect(candidates(q, piece)).toEqual(expect.arrayContaining(matching));
  });

  it('passes on only the lines that hold an ASCII or Chinese query; İ or K in a block sends every line', () => {
    const plain = lines.filter((_, i) => !/[İ\u212a]/.test(TEXTS[i]!));
    const plainBlock = Buffer.from(plain.join('\n') + '\n', 'utf8');
    const found = (q: string): string[] => {
      const out: string[] = [];
      candidateLines(q)(plainBlock, (start, end) => out.push(plainBlock.toString('utf8', start, end)));
      return out;
    };
    searchTuning.pieceBytes = 16;
    expect(found('world')).toEqual(plain.slice(0, 3));
    expect(found('数据库')).toEqual([lines[7]]);
    expect(found('🚀')).toHaveLength(plain.length); // a block that may hold it: every line
    expect(found('no such')).toEqual([]);
    expect(candidates('world', 16)).toHaveLength(lines.length);
  });
});
