// Logs of any size (issue 14): a room log over 2 GiB — past what one Buffer read can hold — is
// opened, indexed, paged at both ends, searched and appended to, all streaming or by position.
// The file is generated (2.3 GB of real lines: versions of 50 big messages, then new ones past
// the 2 GiB mark), so this test needs that much free disk and takes a few seconds.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { open, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { silentLogger } from '../../src/logger.js';
import { FileStore } from '../../src/storage/file-store.js';
import type { Message } from '../../src/types.js';
import { makeMessage, makeRoom, tempDir } from './storage-helpers.js';

const ROOM = 'huge-room';
const TWO_GIB = 2 ** 31;
let dir: string;
let cleanup: () => Promise<void>;
let firstVersions: Message[];
let tail: Message[];

beforeAll(async () => {
  ({ dir, cleanup } = await tempDir());
  const { mkdir } = await import('node:fs/promises');
  await mkdir(join(dir, 'room_messages'), { recursive: true });
  await writeFile(join(dir, 'rooms.json'), JSON.stringify([makeRoom(ROOM)]));
  // 50 messages of ~45 KB; the block of their lines is written again and again (each repeat is
  // a new version of the same messages, as an edit would append) until the file passes 2 GiB.
  const big = 'x'.repeat(45_000);
  firstVersions = Array.from({ length: 50 }, (_, i) => makeMessage(ROOM, i + 1, { text_content: `first ${i + 1} ${big}` }));
  const block = Buffer.from(firstVersions.map((m) => JSON.stringify(m) + '\n').join(''), 'utf8');
  const handle = await open(join(dir, 'room_messages', `${ROOM}.jsonl`), 'w');
  try {
    let written = 0;
    while (written <= TWO_GIB + block.length) {
      await handle.write(block, 0, block.length, written);
      written += block.length;
    }
    tail = Array.from({ length: 3 }, (_, i) => makeMessage(ROOM, 51 + i, { text_content: `needle-past-2GiB ${i}`, client_msg_id: `tail-${i}` }));
    await handle.write(Buffer.from(tail.map((m) => JSON.stringify(m) + '\n').join('')), 0, undefined, written);
  } finally {
    await handle.close();
  }
}, 300_000);

afterAll(async () => {
  await cleanup();
});

describe('a room log over 2 GiB', () => {
  it('opens, pages at both ends, finds by id and client id, searches and appends', async () => {
    expect((await stat(join(dir, 'room_messages', `${ROOM}.jsonl`))).size).toBeGreaterThan(TWO_GIB);
    const s = new FileStore({ dataDir: dir, logger: silentLogger, cacheMessages: 10, compactEveryMs: 0 });
    await s.open();
    try {
      expect(await s.messageCount()).toBe(53);
      const loaded = (await s.loadRoom(ROOM))!;
      expect(loaded.lastSeq).toBe(53);
      const oldest = await s.readMessages(ROOM, { afterSeq: 0, limit: 2 });
      expect(oldest.map((m) => m.message_id)).toEqual(firstVersions.slice(0, 2).map((m) => m.message_id));
      expect(await s.readMessages(ROOM, { limit: 3 })).toEqual(tail); // lines past 2 GiB, read by position
      expect(await s.getMessage(tail[1]!.message_id)).toEqual(tail[1]);
      expect(await s.findByClientMsgId(ROOM, tail[2]!.sender_id!, 'tail-2')).toEqual(tail[2]);
      expect((await s.searchMessages(ROOM, 'NEEDLE-past', 10)).map((m) => m.seq)).toEqual([51, 52, 53]);
      const next = makeMessage(ROOM, 54);
      await s.commitRoom(ROOM, { messages: [next], expectedVersion: loaded.version });
      expect(await s.readMessages(ROOM, { afterSeq: 53, limit: 5 })).toEqual([next]);
    } finally {
      await s.close();
    }
  }, 300_000);
});
