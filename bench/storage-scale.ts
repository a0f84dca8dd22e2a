// The file store at scale (issue 14), storage level: start-up time and RSS with a large DATA_DIR,
// the oldest page of a cold big room, search with no match over it, get_context's "my last
// message" for a member who never posted, and RSS after a mixed read load.
//
//   npx tsx bench/storage-scale.ts --rooms 1000 --per-room 1000 [--big 1000000] [--agents N] [--owners] [--runs 3] [--dir DIR] [--keep]
// (--runs 0 only generates the data set, e.g. for bench/server-scale.ts. --link-logs DIR: the
// logs are hard links to those of DIR, a data set written with the same --big and --per-room:
// e.g. the 10M set without participants, or with --rooms 1 its big room alone.)
//
// Generates the data set (bench/dataset.ts) once, then measures each run in a fresh child
// process (so RSS and the message cache start cold; the OS page cache is warm after the first
// run, as on a server that restarts). Prints one JSON line per run and a summary of ranges.
import { spawn } from 'node:child_process';
import { mkdtemp, rm, stat, readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { silentLogger } from '../src/logger.js';
import { FileStore } from '../src/storage/file-store.js';
import { writeDataset } from './dataset.js';

function arg(name: string, fallback?: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : fallback;
}

const mb = (bytes: number): number => Math.round(bytes / 1e6);
const ms = (t0: number): number => Math.round((performance.now() - t0) * 10) / 10;

async function measure(dir: string): Promise<Record<string, unknown>> {
  const t0 = performance.now();
  const store = new FileStore({ dataDir: dir, logger: silentLogger, compactEveryMs: 0 });
  await store.open();
  const openMs = ms(t0);
  const rssAfterOpen = mb(process.memoryUsage().rss);
  const roomIds = (await store.listRoomIds()).sort((a, b) => a.localeCompare(b, 'en', { numeric: true }));
  const big = roomIds[0]!;
  const bigLast = (await store.loadRoom(big))!.lastSeq;

  let t = performance.now();
  const oldest = await store.readMessages(big, { afterSeq: 0, limit: 50 });
  const oldestPageMs = ms(t);
  if (oldest.length === 0) throw new Error('no messages');

  const searches: number[] = [];
  for (const q of ['no such phrase anywhere', 'zzqx', '不存在的词语']) {
    t = performance.now();
    const found = await store.searchMessages(big, q, 20);
    if (found.length > 0) throw new Error(`unexpected match for ${q}`);
    searches.push(ms(t));
  }

  const lastSeq: number[] = [];
  for (let i = 0; i < 2000; i++) {
    t = performance.now();
    await store.lastSeqBySender(big, `never-posted-${i}`);
    lastSeq.push(performance.now() - t);
  }
  lastSeq.sort((a, b) => a - b);

  // Mixed read load: random pages of random rooms (cold and cached), messages by id.
  t = performance.now();
  let reads = 0;
  const pageTimes: number[] = [];
  const byIdTimes: number[] = [];
  for (let i = 0; i < 3000; i++) {
    const roomId = roomIds[Math.floor(Math.random() * roomIds.length)]!;
    const last = (await store.loadRoom(roomId))!.lastSeq;
    let t1 = performance.now();
    const page = await store.readMessages(roomId, { beforeSeq: 1 + Math.floor(Math.random() * last), limit: 50 });
    pageTimes.push(performance.now() - t1);
    reads += page.length;
    t1 = performance.now();
    if (page[0]) await store.getMessage(page[0].message_id);
    byIdTimes.push(performance.now() - t1);
  }
  const mixedMs = ms(t);
  const p = (xs: number[], q: number) => Math.round(xs.sort((a, b) => a - b)[Math.floor(xs.length * q)]! * 100) / 100;
  const s = store.stats();
  const result = {
    messages: await store.messageCount(),
    rooms: roomIds.length,
    big_room_messages: bigLast,
    open_ms: openMs,
    rss_after_open_mb: rssAfterOpen,
    oldest_page_cold_ms: oldestPageMs,
    search_no_match_ms: searches,
    last_seq_by_sender_p99_ms: Math.round(lastSeq[Math.floor(lastSeq.length * 0.99)]! * 1000) / 1000,
    mixed_reads: reads,
    mixed_ms: mixedMs,
    page_p50_ms: p(pageTimes, 0.5),
    page_p99_ms: p(pageTimes, 0.99),
    get_message_p50_ms: p(byIdTimes, 0.5),
    get_message_p99_ms: p(byIdTimes, 0.99),
    rss_after_mixed_mb: mb(process.memoryUsage().rss),
    heap_mb: mb(process.memoryUsage().heapUsed),
    index_mb: mb(s.indexBytes),
    cached_messages: s.cachedMessages,
  };
  await store.close();
  return result;
}

if (process.argv.includes('--measure')) {
  console.log(JSON.stringify(await measure(arg('measure')!)));
  process.exit(0);
}

const rooms = Number(arg('rooms', '1000'));
const perRoom = Number(arg('per-room', '1000'));
const bigArg = arg('big');
const runs = Number(arg('runs', '3'));
const dir = arg('dir') ?? (await mkdtemp(join(tmpdir(), 'chatroom-scale-')));
const keep = process.argv.includes('--keep');
try {
  const existing = await readdir(join(dir, 'room_messages')).catch(() => []);
  if (existing.length === 0) {
    const t = performance.now();
    await writeDataset(dir, rooms, perRoom, { ...(bigArg ? { bigRoom: Number(bigArg) } : {}), agents: Number(arg('agents', '0')), owners: process.argv.includes('--owners'), ...(arg('link-logs') ? { linkLogsFrom: arg('link-logs')! } : {}) });
    let bytes = 0;
    for (const f of await readdir(join(dir, 'room_messages'))) bytes += (await stat(join(dir, 'room_messages', f))).size;
    console.error(`generated ${rooms} rooms (${bigArg ? `first ${bigArg}, others ` : ''}${perRoom} each), ${mb(bytes)} MB of logs in ${ms(t)} ms`);
  }
  const results: Record<string, unknown>[] = [];
  for (let r = 0; r < runs; r++) {
    const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), '--measure', dir], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    await new Promise((resolve) => child.once('exit', resolve));
    console.log(out.trim());
    results.push(JSON.parse(out) as Record<string, unknown>);
  }
  const range = (k: string) => {
    const v = results.map((x) => x[k]).flat() as number[];
    return `${Math.min(...v)}–${Math.max(...v)}`;
  };
  if (runs > 0) console.log(
    ['open_ms', 'rss_after_open_mb', 'oldest_page_cold_ms', 'search_no_match_ms', 'last_seq_by_sender_p99_ms', 'page_p99_ms', 'get_message_p99_ms', 'rss_after_mixed_mb', 'index_mb']
      .map((k) => `${k} ${range(k)}`)
      .join(' | '),
  );
} finally {
  if (!keep && !arg('dir')) await rm(dir, { recursive: true, force: true });
}
