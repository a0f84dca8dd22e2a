// Server start-up with 1,000,000 stored messages in 1,000 rooms (time until /health answers),
// and search over a room of 1,000,000 messages (p50/p99 over HTTP, Chinese and English).
//   npx tsx bench/startup-search.ts
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeDataset } from './dataset.js';
import { percentile, rest, startBenchServer } from './util.js';

export interface StartupSearchResult {
  startup: {
    messages: number;
    rooms: number;
    /** Process spawn → /health answers (room logs are indexed, not yet parsed). */
    ms: number;
    /** Right after start: the first read of a room whose log is not parsed yet. */
    coldReadMs: number;
    /** Start + reading every room once (every log parsed): the fully loaded server. */
    allRoomsReadMs: number;
  };
  search: { messages: number; query: string; hits: number; p50Ms: number; p99Ms: number }[];
}

async function timedStart(dataDir: string) {
  const started = performance.now();
  const server = await startBenchServer({ DATA_DIR: dataDir });
  return { server, ms: Math.round(performance.now() - started) };
}

export async function runStartupSearchBench(total = 1_000_000, rooms = 1_000, searches = 50): Promise<StartupSearchResult> {
  const manyRooms = await mkdtemp(join(tmpdir(), 'bench-startup-'));
  const oneRoom = await mkdtemp(join(tmpdir(), 'bench-search-'));
  try {
    const many = await writeDataset(manyRooms, rooms, Math.ceil(total / rooms));
    const first = await timedStart(manyRooms);
    const coldStarted = performance.now();
    await rest(first.server.url, 'get_messages', { room_id: many.roomIds[many.roomIds.length - 1], limit: 50 }, many.token);
    const coldReadMs = Math.round((performance.now() - coldStarted) * 100) / 100;
    for (const roomId of many.roomIds) await rest(first.server.url, 'get_messages', { room_id: roomId, limit: 1 }, many.token);
    const allRoomsReadMs = first.ms + Math.round(performance.now() - coldStarted);
    await first.server.stop();

    const data = await writeDataset(oneRoom, 1, total);
    const { server } = await timedStart(oneRoom);
    const search: StartupSearchResult['search'] = [];
    try {
      for (const query of ['设计 架构', 'HELLO agent', '不存在的词']) {
        const times: number[] = [];
        let hits = 0;
        for (let i = 0; i < searches; i++) {
          const t0 = performance.now();
          const answer = await rest(server.url, 'search_messages', { room_id: data.roomIds[0], query, limit: 50 }, data.token);
          times.push(performance.now() - t0);
          hits = answer.data.messages.length;
        }
        search.push({ messages: total, query, hits, p50Ms: percentile(times, 50), p99Ms: percentile(times, 99) });
      }
    } finally {
      await server.stop();
    }
    return { startup: { messages: total, rooms, ms: first.ms, coldReadMs, allRoomsReadMs }, search };
  } finally {
    await rm(manyRooms, { recursive: true, force: true });
    await rm(oneRoom, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(JSON.stringify(await runStartupSearchBench(Number(process.argv[2] ?? 1_000_000)), null, 2));
}
