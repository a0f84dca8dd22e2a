// Durable room commits per second on PostgreSQL (SPEC §11 scale-out): 64 concurrent committers
// spread over 3 PgStore instances ("nodes", each with its own pool) on one throwaway cluster
// with fsync on, as in production. Each committer owns a room (the room runtime keeps one
// writer per room) and commits one message plus the room's new state per commit, awaiting each
// commit before the next (closed loop): every counted commit is durable, NOTIFY included.
// A last run puts all 64 committers into 8 rooms: each node runs one commit per room at a
// time like the room runtime, so the three nodes race for the same rooms and commits go
// through the stale-retry path.
//
//   npx tsx bench/pg-commits.ts            # 10 s per run
//   BENCH_QUICK=1 npx tsx bench/pg-commits.ts
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { PgStore } from '../src/storage/postgres/pg-store.js';
import { commitWithRetry } from '../src/storage/postgres/stale-retry.js';
import { makeMessage, makeRoom } from '../test/unit/storage-helpers.js';
import { startPgServer } from '../test/postgres/pg-server.js';
import { percentile } from './util.js';

export interface PgCommitResult {
  notify: 'after-commit' | 'in-commit';
  committers: number;
  nodes: number;
  rooms: number;
  seconds: number;
  commits: number;
  commitsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  staleRetries: number;
  /** CPU time this process (the three nodes' JavaScript) spent per commit. */
  nodeCpuMsPerCommit: number;
  /** CPU time the PostgreSQL cluster's processes spent per commit. */
  pgCpuMsPerCommit: number;
}

const TICKS_PER_MS = 100 / 1000; // USER_HZ = 100 on Linux

/** CPU ms used so far by the postmaster, its reaped children and its live children (Linux /proc). */
function clusterCpuMs(dataDir: string): number {
  const postmaster = Number(readFileSync(path.join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
  const fields = (pid: number | string) => readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /, '').split(' ');
  const own = fields(postmaster); // state ppid … utime(11) stime(12) cutime(13) cstime(14), counted after ")"
  let ticks = Number(own[11]) + Number(own[12]) + Number(own[13]) + Number(own[14]);
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const f = fields(entry);
      if (Number(f[1]) === postmaster) ticks += Number(f[11]) + Number(f[12]);
    } catch {
      // the process ended meanwhile; the postmaster's cutime has it now
    }
  }
  return ticks / TICKS_PER_MS;
}

/**
 * Like the room runtime, a node runs one commit per room at a time (later ones queue behind
 * it), so only different nodes race for a room. Latency includes that queueing.
 */
const queues = new Map<string, Promise<unknown>>();
function onePerRoom<T>(key: string, fn: () => Promise<T>): Promise<T> {
  const next = (queues.get(key) ?? Promise.resolve()).then(fn, fn);
  queues.set(key, next.catch(() => undefined));
  return next;
}
async function run(
  dataDir: string,
  nodes: PgStore[],
  notify: PgCommitResult['notify'],
  committers: number,
  rooms: number,
  seconds: number,
  tag: string,
): Promise<PgCommitResult> {
  const stores = nodes;
  const roomIds = Array.from({ length: rooms }, (_, i) => `${tag}-${i}`);
  for (const id of roomIds) await stores[0]!.createRoom(makeRoom(id));
  const latencies: number[] = [];
  let staleRetries = 0;
  const end = performance.now() + seconds * 1000;
  const started = performance.now();
  const cpuBefore = process.cpuUsage();
  const pgBefore = clusterCpuMs(dataDir);
  await Promise.all(
    Array.from({ length: committers }, async (_, c) => {
      const store = stores[c % stores.length]!;
      const roomId = roomIds[c % rooms]!;
      let loaded = rooms === committers ? await store.loadRoom(roomId) : undefined;
      while (performance.now() < end) {
        const t0 = performance.now();
        const result = await onePerRoom(`${c % stores.length}/${roomId}`, () => commitWithRetry(
          store,
          roomId,
          (room) => {
            const message = makeMessage(roomId, room.lastSeq + 1, { text_content: `committer ${c}: 你好, message ${room.lastSeq + 1}` });
            return { room: { ...room.room, processed_through_seq: message.seq }, messages: [message] };
          },
          { loaded },
        ));
        latencies.push(performance.now() - t0);
        staleRetries += result!.attempts - 1;
        // A room's only writer goes on from its own result; shared rooms reload every time.
        loaded =
          rooms === committers
            ? { room: result!.commit.room!, lastSeq: result!.loaded.lastSeq + 1, version: result!.version }
            : undefined;
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  const pgCpu = clusterCpuMs(dataDir) - pgBefore;
  return {
    notify,
    committers,
    nodes: stores.length,
    rooms,
    seconds: Math.round(elapsed * 10) / 10,
    commits: latencies.length,
    commitsPerSecond: Math.round(latencies.length / elapsed),
    p50Ms: Math.round(percentile(latencies, 50) * 10) / 10,
    p99Ms: Math.round(percentile(latencies, 99) * 10) / 10,
    staleRetries,
    nodeCpuMsPerCommit: Math.round(((cpu.user + cpu.system) / 1000 / Math.max(1, latencies.length)) * 100) / 100,
    pgCpuMsPerCommit: Math.round((pgCpu / Math.max(1, latencies.length)) * 100) / 100,
  };
}

export async function runPgCommitBench(seconds = 10): Promise<PgCommitResult[]> {
  const server = await startPgServer({ fsync: true });
  try {
    const results: PgCommitResult[] = [];
    const plan = [
      ['after-commit', 64, 'own'],
      ['in-commit', 64, 'own'],
      ['after-commit', 8, 'shared'],
    ] as const;
    for (const [notify, rooms, tag] of plan) {
      const url = await server.createDatabase(`bench_${tag}_${notify.replace('-', '_')}`);
      const stores = [1, 2, 3].map(() => new PgStore({ connectionString: url, poolSize: 22, notify }));
      await Promise.all(stores.map((s) => s.open()));
      try {
        const result = await run(server.dataDir, stores, notify, 64, rooms, seconds, tag);
        // Every commit landed: seqs are gapless and add up to the commits counted.
        const stored = await stores[1]!.messageCount();
        if (stored !== result.commits) throw new Error(`stored ${stored} messages, counted ${result.commits} commits`);
        results.push(result);
        console.error(JSON.stringify(result));
      } finally {
        await Promise.all(stores.map((s) => s.close()));
      }
    }
    return results;
  } finally {
    await server.stop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const results = await runPgCommitBench(process.env.BENCH_QUICK === '1' ? 3 : 10);
  console.log(JSON.stringify(results, null, 2));
}
