// Start-up time of the FileStore with a large DATA_DIR (target: 1,000,000 messages in 1,000
// rooms under 5 s), plus append throughput with group commit.
//   npx tsx bench/storage-startup.ts [messages=1000000] [rooms=1000] [--mixed]
// --mixed writes the data set of bench/dataset.ts (mixed Chinese/English text) instead.
// Reports the time to open (the server answers after this) and the first read of a cold room.
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { silentLogger } from '../src/logger.js';
import { FileStore } from '../src/storage/file-store.js';
import type { Message } from '../src/types.js';
import { writeDataset } from './dataset.js';

const args = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const mixed = process.argv.includes('--mixed');
const total = Number(args[0] ?? 1_000_000);
const rooms = Number(args[1] ?? 1_000);
const perRoom = Math.ceil(total / rooms);

function message(roomId: string, seq: number): Message {
  return {
    message_id: randomUUID(),
    room_id: roomId,
    seq,
    timestamp: new Date(1_780_000_000_000 + seq * 1000).toISOString(),
    sender: seq % 2 ? 'claude' : 'alice',
    sender_id: seq % 2 ? 'agent-1' : 'user-1',
    role: seq % 2 ? 'ai_agent' : 'user',
    text_content: `Message number ${seq}: a typical chat line of moderate length, with a @mention and some words.`,
    text_content_i18n: null,
    source_language: 'en',
    file_url: '',
    file_type: '',
    mentions: seq % 5 ? [] : ['alice'],
    visible: true,
    processed: false,
    response_to: null,
    display_timezone: 'Asia/Shanghai',
    round_id: null,
    skip_reason: null,
    deleted: false,
  };
}

const dir = await mkdtemp(join(tmpdir(), 'chatroom-bench-'));
try {
  const logDir = join(dir, 'room_messages');
  await mkdir(logDir, { recursive: true });
  let bytes = 0;
  let roomIds = Array.from({ length: rooms }, (_, r) => `room-${r}`);
  if (mixed) {
    roomIds = (await writeDataset(dir, rooms, perRoom)).roomIds;
    const { stat, readdir } = await import('node:fs/promises');
    for (const f of await readdir(logDir)) bytes += (await stat(join(logDir, f))).size;
  }
  for (let r = 0; r < (mixed ? 0 : rooms); r++) {
    const roomId = `room-${r}`;
    const lines: string[] = [];
    for (let seq = 1; seq <= perRoom; seq++) lines.push(JSON.stringify(message(roomId, seq)));
    const text = lines.join('\n') + '\n';
    bytes += text.length;
    await writeFile(join(logDir, `${roomId}.jsonl`), text);
  }
  if (!mixed) {
    const { makeRoom } = await import('../test/unit/storage-helpers.js');
    await writeFile(join(dir, 'rooms.json'), JSON.stringify(roomIds.map((id) => makeRoom(id))));
  }
  console.log(`wrote ${rooms * perRoom} messages in ${rooms} rooms, ${(bytes / 1e6).toFixed(0)} MB`);

  const t0 = performance.now();
  const store = new FileStore({ dataDir: dir, logger: silentLogger });
  await store.open();
  const openMs = performance.now() - t0;
  console.log(`open: ${openMs.toFixed(0)} ms, ${await store.messageCount()} messages, heap ${(process.memoryUsage().heapUsed / 1e6).toFixed(0)} MB`);
  const tCold = performance.now();
  const cold = (await store.readMessages(roomIds[rooms - 1]!, { afterSeq: 0, limit: 50 })).length;
  console.log(`first page of a cold room: ${(performance.now() - tCold).toFixed(1)} ms (${cold} messages)`);

  // Commits to 50 rooms, one writer per room, the rooms concurrently.
  const n = 20_000;
  const t1 = performance.now();
  await Promise.all(
    roomIds.slice(0, 50).map(async (roomId) => {
      const loaded = (await store.loadRoom(roomId))!;
      let version = loaded.version;
      for (let seq = loaded.lastSeq + 1; seq <= loaded.lastSeq + n / 50; seq++) {
        version = await store.commitRoom(roomId, { messages: [message(roomId, seq)], expectedVersion: version });
      }
    }),
  );
  const appendMs = performance.now() - t1;
  const s = store.stats();
  console.log(`commit: ${n} messages to 50 rooms in ${appendMs.toFixed(0)} ms (${s.logFsyncs} fsyncs)`);
  await store.close();
} finally {
  await rm(dir, { recursive: true, force: true });
}
