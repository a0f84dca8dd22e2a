// An export of a data set's big room through the built server (SPEC §5: exports read old
// messages from disk on demand; the server never holds the room):
//
//   npx tsx bench/export-server.ts DIR [markdown|html|json|pdf]
//
// DIR is a data set written by bench/dataset.ts (room 0 is its big room; on the 10M set,
// 3,000,000 messages). Waits 15 s for the start-up's background work, then exports room 0 and
// prints the time, the file's size and the server's RSS before and at its peak (sampled every
// 100 ms). RSS counts garbage V8 has not collected yet; to see that the live memory stays
// bounded, cap the heap: BENCH_SERVER_NODE_ARGS=--max-old-space-size=600 (the export fails with
// the server out of memory if it holds the room).
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DATASET_FILE, type Dataset } from './dataset.js';
import { rest, startBenchServer } from './util.js';

const dir = process.argv[2];
if (!dir) throw new Error('usage: bench/export-server.ts DIR [format]');
const format = process.argv[3] ?? 'markdown';
const data = JSON.parse(await readFile(join(dir, DATASET_FILE), 'utf8')) as Dataset;
const server = await startBenchServer({ DATA_DIR: dir, RATE_LIMIT_PER_TOKEN: '0', RATE_LIMIT_PER_ADDRESS: '0' });
const rssMb = () => Math.round(Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${server.child.pid}/status`, 'utf8'))![1]) / 1024);
try {
  await new Promise((resolve) => setTimeout(resolve, 15_000));
  const before = rssMb();
  let peak = before;
  const sampler = setInterval(() => (peak = Math.max(peak, rssMb())), 100);
  const started = performance.now();
  const answer = await rest(server.url, 'export_chat_history', { room_id: data.roomIds[0], format }, data.token);
  clearInterval(sampler);
  console.log(
    JSON.stringify({ format, ok: answer.ok, error: answer.error, bytes: answer.data?.bytes, ms: Math.round(performance.now() - started), rss_before_mb: before, rss_peak_mb: peak }),
  );
} finally {
  await server.stop();
}
