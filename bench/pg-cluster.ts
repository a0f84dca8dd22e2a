// Three server nodes on one PostgreSQL (STORE=postgres, SPEC §11), all on this machine: a
// throwaway cluster with fsync on (production settings) and three server processes
// (`dist/src/cli.js start`, built first) sharing it. Measures, in this order:
//   1. durable send_message/s with 64 closed-loop senders spread over the nodes (sender i calls
//      node i % 3), into one room and into 64 rooms (one per sender);
//   2. cross-node delivery: 300 WebSocket subscribers (100 per node), a person sending 100
//      msg/s to node 1; latency from the scheduled send to each delivery, after 3 s of warm-up
//      (BENCH_DELIVERY_WARMUP_S); the subscribers use bench/ws.ts's minimal client
//      (BENCH_DELIVERY_CLIENT=ws: the `ws` package, each frame parsed);
//   3. turn hand-off across nodes: agent A on node 2, agent B on node 3, answering each other's
//      turns; answer sent → the other agent's agent_turn received;
//   4. fail-over: a client on node 3 whose node is SIGKILLed reconnects to node 1; the time from
//      the kill to its first answered call there (and to a live event from the room).
// Per-address rate limits are off (all clients share 127.0.0.1); per-token limits stay on
// (counted in PostgreSQL like in production; BENCH_TOKEN_LIMIT_OFF=1 turns them off too, to
// see what the shared counters cost).
//
//   npm run build && npx tsx bench/pg-cluster.ts [seconds-per-step=5]
import { readFileSync, readdirSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import WebSocket from 'ws';
import { startPgServer } from '../test/postgres/pg-server.js';
import { openRawAuthed } from './raw-ws-client.js';
import { percentile, rest, startBenchServer, type BenchServer } from './util.js';

const seconds = Number(process.argv[2] ?? 5);

interface Client {
  ws: WebSocket;
  frames: (frame: any, at: number) => void;
}

async function socket(url: string, token: string, onFrame: (frame: any, at: number) => void = () => undefined): Promise<Client> {
  const ws = new WebSocket(`${url.replace('http', 'ws')}/ws`);
  const client: Client = { ws, frames: onFrame };
  await new Promise((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
  });
  const authed = new Promise<void>((resolve) => {
    ws.on('message', (raw) => {
      const at = performance.now();
      const frame = JSON.parse(String(raw));
      if (frame.type === 'auth_ok') resolve();
      client.frames(frame, at);
    });
  });
  ws.send(JSON.stringify({ type: 'auth', token }));
  await authed;
  return client;
}

async function ok(url: string, tool: string, args: unknown, token?: string): Promise<any> {
  const answer = await rest(url, tool, args, token);
  if (!answer.ok) throw new Error(`${tool}: ${JSON.stringify(answer.error)}`);
  return answer.data;
}

/** CPU seconds (user + system) a process has used, from /proc (Linux); 0 once it is gone. */
function cpuSeconds(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return 0;
  }
}

/** The PostgreSQL server and its backends: the postmaster (first line of postmaster.pid) and its children. */
function postgresPids(dataDir: string): number[] {
  let postmaster: number;
  try {
    postmaster = Number(readFileSync(join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
  } catch {
    return [];
  }
  const pids = [postmaster];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (Number(readFileSync(`/proc/${entry}/stat`, 'utf8').split(') ')[1]!.split(' ')[1]) === postmaster) pids.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

/**
 * CPU seconds of the PostgreSQL server: its live processes, plus what its exited children used
 * (the postmaster's cutime + cstime: backends and autovacuum workers that ended between two
 * readings would otherwise drop out of the sum and make it go down).
 */
function postgresCpuSeconds(dataDir: string): number {
  const [postmaster, ...children] = postgresPids(dataDir);
  if (postmaster === undefined) return 0;
  let exited = 0;
  try {
    const fields = readFileSync(`/proc/${postmaster}/stat`, 'utf8').split(') ')[1]!.split(' ');
    exited = (Number(fields[13]) + Number(fields[14])) / 100;
  } catch {
    // gone
  }
  return cpuSeconds(postmaster) + exited + children.reduce((sum, pid) => sum + cpuSeconds(pid), 0);
}

/** CPU used per process group since `start()`, read with `stop(count)` as ms per item. */
function cpuMeter(nodes: BenchServer[]) {
  const read = () => ({
    nodes: nodes.map((n) => cpuSeconds(n.child.pid!)),
    postgres: postgresCpuSeconds(pg.dataDir),
    client: process.cpuUsage(),
  });
  const before = read();
  return (count: number) => {
    const after = read();
    const ms = (seconds: number) => Math.round((seconds * 1000 * 1000) / count) / 1000;
    return {
      nodes: after.nodes.map((s, i) => ms(s - before.nodes[i]!)),
      postgres: ms(after.postgres - before.postgres),
      client: ms((after.client.user + after.client.system - before.client.user - before.client.system) / 1e6),
    };
  };
}

async function sends(nodes: BenchServer[], rooms: 'one' | 'per-sender') {
  const senders = 64;
  const people = await Promise.all(Array.from({ length: senders }, (_, i) => ok(nodes[i % nodes.length]!.url, 'register_user', { name: `S${rooms}${i}` })));
  const shared = (await ok(nodes[0]!.url, 'create_room', { room_name: 'Sends' }, people[0].token)).room.room_id;
  const roomOf: string[] = [];
  for (const [i, p] of people.entries()) {
    if (rooms === 'one') {
      if (i > 0) await ok(nodes[i % nodes.length]!.url, 'join_room', { room_id: shared }, p.token);
      roomOf.push(shared);
    } else {
      roomOf.push((await ok(nodes[i % nodes.length]!.url, 'create_room', { room_name: `Own ${i}` }, p.token)).room.room_id);
    }
  }
  const latencies: number[] = [];
  /** Sends answered per node (senders are spread evenly: a node that loses the room's races shows here). */
  const byNode = nodes.map(() => 0);
  let failed = 0;
  const cpu = cpuMeter(nodes);
  const end = performance.now() + seconds * 1000;
  const t0 = performance.now();
  await Promise.all(
    people.map(async (p, i) => {
      for (let n = 0; performance.now() < end; n++) {
        const started = performance.now();
        const answer = await rest(nodes[i % nodes.length]!.url, 'send_message', { room_id: roomOf[i], text_content: `bench ${i}/${n} 基准测试` }, p.token);
        if (answer.ok) {
          latencies.push(performance.now() - started);
          byNode[i % nodes.length]! += 1;
        } else failed++;
      }
    }),
  );
  const elapsed = (performance.now() - t0) / 1000;
  const cpuMsPerSend = cpu(latencies.length);
  return {
    rooms,
    senders,
    perSecond: Math.round(latencies.length / elapsed),
    perSecondByNode: byNode.map((n) => Math.round(n / elapsed)),
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    failed,
    cpuMsPerSend,
  };
}

/** BENCH_DELIVERY_CLIENT=ws: the delivery step's subscribers use the `ws` package and parse each frame. */
const RAW_SUBSCRIBERS = process.env.BENCH_DELIVERY_CLIENT !== 'ws';
/** BENCH_DELIVERY_WARMUP_S: seconds sent before the delivery step measures (default 3). */
const DELIVERY_WARMUP_S = Number(process.env.BENCH_DELIVERY_WARMUP_S ?? 3);
const FAN_OUT = Buffer.from('"fan-out ');
const MESSAGE_NEW = Buffer.from('"message_new"');
const SEQ = Buffer.from('"seq":');

/** The decimal digits of `frame` from `at` on, as a number (-1 when `at` is not a match). */
function digitsAt(frame: Buffer, at: number): number {
  if (at < 0) return -1;
  let value = 0;
  for (let i = at, c = frame[i]!; c >= 48 && c <= 57; c = frame[++i]!) value = value * 10 + (c - 48);
  return value;
}

async function delivery(nodes: BenchServer[]) {
  const person = await ok(nodes[0]!.url, 'register_user', { name: 'Broadcaster' });
  const roomId = (await ok(nodes[0]!.url, 'create_room', { room_name: 'Fan-out' }, person.token)).room.room_id;
  /** Scheduled send time by message number k (its text says `fan-out k`). */
  const sentAt = new Map<number, number>();
  const latencies: number[] = [];
  const perNode = [[], [], []] as number[][];
  let received = 0;
  let reordered = 0;
  const closers: (() => void)[] = [];
  const subscribers = Number(process.env.BENCH_SUBSCRIBERS ?? 300);
  // The first seconds are sent but not measured (JIT warm-up, pools filling), as in bench/ws.ts.
  const warmup = 100 * DELIVERY_WARMUP_S;
  // Each delivery: its seq (the server's order) and the message number k of `fan-out k`.
  const deliver = (node: number, seq: number, k: number, at: number, last: { seq: number }): void => {
    if (seq <= last.seq) reordered++;
    last.seq = seq;
    const sent = sentAt.get(k);
    if (sent === undefined) return;
    received++;
    if (k < warmup) return;
    latencies.push(at - sent);
    perNode[node]!.push(at - sent);
  };
  for (let i = 0; i < subscribers; i++) {
    const last = { seq: 0 };
    const node = i % nodes.length;
    if (RAW_SUBSCRIBERS) {
      // The minimal client of bench/ws.ts: no stream, event or JSON parse per frame, so 30,000
      // frames/s in this one process measure the nodes rather than the load generator.
      const raw = await openRawAuthed(nodes[node]!.url, person.token, (frame) => {
        const at = performance.now();
        const mark = frame.indexOf(FAN_OUT);
        if (mark < 0 || frame.indexOf(MESSAGE_NEW) < 0 || frame.indexOf(roomId) < 0) return;
        const seqAt = frame.indexOf(SEQ);
        deliver(node, digitsAt(frame, seqAt < 0 ? -1 : seqAt + SEQ.length), digitsAt(frame, mark + FAN_OUT.length), at, last);
      });
      closers.push(() => raw.terminate());
    } else {
      const client = await socket(nodes[node]!.url, person.token, (frame, at) => {
        if (frame.type !== 'event' || frame.event !== 'message_new' || frame.room_id !== roomId) return;
        deliver(node, frame.data.message.seq as number, Number(/^fan-out (\d+) /.exec(frame.data.message.text_content)?.[1] ?? -1), at, last);
      });
      closers.push(() => client.ws.terminate());
    }
  }
  console.error(`${subscribers} subscribers connected`);
  const total = warmup + 100 * seconds;
  const t0 = performance.now();
  const pending: Promise<unknown>[] = [];
  for (let k = 0; k < total; k++) {
    const due = t0 + k * 10;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    sentAt.set(k, due);
    pending.push(rest(nodes[0]!.url, 'send_message', { room_id: roomId, text_content: `fan-out ${k} ${'x'.repeat(200)}` }, person.token));
  }
  await Promise.all(pending);
  const deadline = performance.now() + 10_000;
  while (received < total * subscribers && performance.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  for (const close of closers) close();
  return {
    subscribers,
    client: RAW_SUBSCRIBERS ? 'raw' : 'ws',
    warmupS: DELIVERY_WARMUP_S,
    measuredS: seconds,
    perSecond: 100,
    deliveries: received,
    expected: total * subscribers,
    reordered,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    p99ByNode: perNode.map((l) => percentile(l, 99)),
  };
}

async function handoff(nodes: BenchServer[], handoffs = 300) {
  const person = await ok(nodes[0]!.url, 'register_user', { name: 'HandoffHost' });
  const roomId = (await ok(nodes[0]!.url, 'create_room', { room_name: 'Hand-off' }, person.token)).room.room_id;
  await ok(nodes[0]!.url, 'update_room', { room_id: roomId, max_auto_rounds: 1000 }, person.token);
  const latencies: number[] = [];
  let sentAt = 0;
  let done: () => void = () => undefined;
  const finished = new Promise<void>((resolve) => (done = resolve));
  const agents: Record<string, Client> = {};
  let calls = 0;
  const answer = (name: string) => {
    sentAt = performance.now();
    agents[name]!.ws.send(JSON.stringify({ type: 'call', id: String(++calls), tool: 'send_message', args: { room_id: roomId, text_content: `${name} answers` } }));
  };
  let first = true;
  for (const [name, node] of [['A', 1], ['B', 2]] as const) {
    const reg = await ok(nodes[node]!.url, 'register_agent', { name: `Hand${name}` });
    await ok(nodes[node]!.url, 'join_room', { room_id: roomId }, reg.token);
    agents[name] = await socket(nodes[node]!.url, reg.token, (frame, at) => {
      if (frame.type !== 'event' || frame.event !== 'agent_turn' || frame.data.agent_name !== `Hand${name}`) return;
      if (!first) latencies.push(at - sentAt);
      first = false;
      if (latencies.length >= handoffs) return done();
      answer(name);
    });
  }
  await ok(nodes[0]!.url, 'send_message', { room_id: roomId, text_content: 'Start the hand-offs.' }, person.token);
  await finished;
  for (const c of Object.values(agents)) c.ws.terminate();
  return { handoffs: latencies.length, p50Ms: percentile(latencies, 50), p99Ms: percentile(latencies, 99) };
}

async function failover(nodes: BenchServer[]) {
  const person = await ok(nodes[0]!.url, 'register_user', { name: 'Mover' });
  const talker = await ok(nodes[1]!.url, 'register_user', { name: 'Talker' });
  const roomId = (await ok(nodes[0]!.url, 'create_room', { room_name: 'Fail-over' }, person.token)).room.room_id;
  await ok(nodes[1]!.url, 'join_room', { room_id: roomId }, talker.token);
  await socket(nodes[2]!.url, person.token);
  const killedAt = performance.now();
  nodes[2]!.child.kill('SIGKILL');
  // The client notices (its socket closes) and reconnects to the next node.
  let liveAt = 0;
  let lastSeq = 0;
  const moved = await socket(nodes[0]!.url, person.token, (frame, at) => {
    if (frame.type === 'event' && frame.event === 'message_new' && frame.data.message.text_content === 'after the kill') liveAt = at;
    if (frame.type === 'event' && frame.event === 'message_new') lastSeq = frame.data.message.seq;
  });
  const connectedAt = performance.now();
  const answered = await ok(nodes[0]!.url, 'get_room', { room_id: roomId }, person.token);
  const servedAt = performance.now();
  await ok(nodes[1]!.url, 'send_message', { room_id: roomId, text_content: 'after the kill' }, talker.token);
  while (liveAt === 0) await new Promise((r) => setTimeout(r, 1));
  moved.ws.terminate();
  return {
    reconnectedMs: Math.round((connectedAt - killedAt) * 10) / 10,
    firstAnswerMs: Math.round((servedAt - killedAt) * 10) / 10,
    liveEventMs: Math.round((liveAt - killedAt) * 10) / 10,
    roomOk: answered.room.room_id === roomId && lastSeq > 0,
  };
}

// BENCH_PG_STATS=1: pg_stat_statements on, and the statements' calls and time printed at the end
// (where the database's time goes per step: run one step at a time with BENCH_STEPS).
const pgStats = process.env.BENCH_PG_STATS === '1';
/** The statements that took the database's time, with calls per send_message sent. */
async function printStatements(databaseUrl: string): Promise<void> {
  const { default: pgClient } = await import('pg');
  const client = new pgClient.Client({ connectionString: databaseUrl });
  await client.connect();
  await client.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
  const { rows } = await client.query(
    `SELECT calls, round(total_exec_time::numeric, 0) AS ms, round(mean_exec_time::numeric, 3) AS mean_ms, left(regexp_replace(query, '\\s+', ' ', 'g'), 110) AS query
     FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT 25`,
  );
  console.table(rows);
  await client.end();
}

const pg = await startPgServer({ fsync: true, ...(pgStats ? { settings: { shared_preload_libraries: 'pg_stat_statements', 'pg_stat_statements.track': 'all' } } : {}) });
const nodes: BenchServer[] = [];
// Stopped from outside (a timeout): stop the nodes and the cluster rather than leave them behind.
process.once('SIGTERM', () => {
  for (const node of nodes) node.child.kill('SIGKILL');
  void pg.stop().finally(() => process.exit(1));
});
try {
  const databaseUrl = await pg.createDatabase();
  const dataDir = await mkdtemp(join(tmpdir(), 'bench-pg-cluster-'));
  const env = {
    STORE: 'postgres',
    DATABASE_URL: databaseUrl,
    DATABASE_POOL_SIZE: '20',
    DATA_DIR: dataDir,
    LINK_SECRET: 'bench-link-secret-bench-link-secret',
    RATE_LIMIT_PER_ADDRESS: '0',
    ...(process.env.BENCH_TOKEN_LIMIT_OFF ? { RATE_LIMIT_PER_TOKEN: '0' } : {}),
    // 300 subscribers share one person's token.
    MAX_SOCKETS_PER_TOKEN: '1000',
    TURN_TIMEOUT_MS: '60000',
  };
  // One at a time: the first applies the migrations.
  const count = Number(process.env.BENCH_NODES ?? 3);
  for (let i = 0; i < count; i++) nodes.push(await startBenchServer(env));
  console.error(`${new Date().toISOString()} ${count} nodes up`);
  const step = async <T>(name: string, run: () => Promise<T>): Promise<T> => {
    console.error(`${new Date().toISOString()} ${name}…`);
    const result = await run();
    console.error(JSON.stringify(result));
    return result;
  };
  // BENCH_STEPS=sends,delivery,handoff,failover picks steps (default: all, in this order).
  const only = new Set((process.env.BENCH_STEPS ?? 'sends,delivery,handoff,failover').split(','));
  const results = {
    sendsPerSender: only.has('sends') ? await step('sends, 64 rooms', () => sends(nodes, 'per-sender')) : null,
    sendsOneRoom: only.has('sends') ? await step('sends, one room', () => sends(nodes, 'one')) : null,
    delivery: only.has('delivery') ? await step('delivery', () => delivery(nodes)) : null,
    handoff: only.has('handoff') ? await step('hand-off', () => handoff(nodes)) : null,
    failover: only.has('failover') ? await step('fail-over', () => failover(nodes)) : null,
  };
  console.log(JSON.stringify(results, null, 2));
  if (pgStats) await printStatements(databaseUrl);
} finally {
  await Promise.all(nodes.map((n) => n.stop()));
  await pg.stop();
}
process.exit(0);
