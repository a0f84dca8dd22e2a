// The file store at scale, measured through the server (issue 14, "How it is checked"): the
// built server in its own process on a large DATA_DIR made by bench/dataset.ts
// (`npx tsx bench/storage-scale.ts ... --agents N --runs 0 --dir DIR` writes one).
//
//   npx tsx bench/server-scale.ts --dir DIR [--runs 3] [--handoffs 300] [--rate 50] [--seconds 20]
//   npx tsx bench/server-scale.ts --cpu [--people] [--runs 3] [--seconds 10] [--transport http|ws]
//   npx tsx bench/server-scale.ts --dir DIR --startup-only [--runs 3]
//   (--context-calls N: get_context calls of the never-posted member, default 500;
//    --phases cold,context,handoff,join,mixed: only these phases; --first-run N: see below;
//    --no-settle: the join phase without waiting for the server to fall idle first;
//    --settle-handoff: the hand-off phase after the server has fallen idle;
//    --handoff-at-ms N: the hand-off phase N ms after the server first answered (a fixed point
//    in the start-up's background work, the same for two builds compared);
//    --server-build DIR: the server of another checkout (built), e.g. an older commit;
//    --online-callers: the join phase's callers are online already, see there;
//    --dump FILE: the join phase's latency of every op, in op order;
//    --floor: the join phase's callers at the same rate calling get_room (no write), measured
//    right before and right after the join phase, see there)
//
// Each run, interleaved: a baseline server on an empty DATA_DIR (1 room) for the hand-off, then
// the server on DIR: start-up (spawn → /health answers), RSS; hand-off in a new room among
// DIR's rooms; join_room / set_room_status at a fixed rate (latency from the scheduled send);
// the cold big room (room 0): oldest page, searches with no match, get_context p99 of a member
// who never posted; a mixed read load over random rooms, then RSS; SIGTERM (a clean shutdown,
// so the next start uses the persisted indexes). A first start on DIR without them (a full
// scan) is run once before and reported apart. Server CPU is read from /proc per phase.
//
// --cpu: server CPU per acknowledged send_message with 64 closed-loop senders, over HTTP and
// over WebSocket, on a fresh DATA_DIR: one person's 64 concurrent calls (as bench/http-send.ts),
// or with --people 64 persons in the room, one sender and one socket each.
//
// Rate limits: RATE_LIMIT_PER_TOKEN=0 and RATE_LIMIT_PER_ADDRESS=0 (one client address opens
// every connection and exceeds them by design), registration limit off (bench/util.ts).
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { agentToken, DATASET_FILE, ownerToken, type Dataset } from './dataset.js';
import { closedLoop, cpuMs, percentile, rest, startBenchServer, type BenchServer } from './util.js';
import { Socket } from './ws-client.js';

function arg(name: string, fallback?: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : fallback;
}

/** `--phases cold,context,handoff,join,mixed` runs only these phases of a run (all by default). */
const PHASES = new Set((arg('phases') ?? 'cold,context,handoff,join,mixed').split(','));
const phase = (name: string): boolean => PHASES.has(name);
/** `--online-callers`: the join phase's callers each make a call first (see the phase). */
/** `--floor`: the machine's floor for the join phase, see there (implies `--online-callers`). */
const FLOOR = process.argv.includes('--floor');
const ONLINE_CALLERS = FLOOR || process.argv.includes('--online-callers');

/** `--server-build DIR`: the server of that checkout (its dist/), the bench of this one. */
const SERVER_BUILD = arg('server-build') ? { dir: arg('server-build') } : {};
const LIMITS_OFF = { RATE_LIMIT_PER_TOKEN: '0', RATE_LIMIT_PER_ADDRESS: '0' };
const round = (x: number, digits = 2): number => Math.round(x * 10 ** digits) / 10 ** digits;

/** The server's own view of its memory (the `chatroom_memory_bytes` gauge), in MB by kind. */
async function memoryByKind(url: string): Promise<Record<string, number>> {
  const text = await (await fetch(`${url}/api/v1/metrics`)).text();
  const out: Record<string, number> = {};
  for (const m of text.matchAll(/^chatroom_memory_bytes\{kind="(\w+)"\} (\d+)$/gm)) out[m[1]!] = Math.round(Number(m[2]) / 2 ** 20);
  return out;
}

function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Math.round(Number(/VmRSS:\s+(\d+)/.exec(status)![1]) / 1024);
}

async function ok(url: string, tool: string, args: unknown, token?: string): Promise<any> {
  const answer = await rest(url, tool, args, token);
  if (!answer.ok) throw new Error(`${tool}: ${JSON.stringify(answer.error)}`);
  return answer.data;
}

/**
 * Turn hand-offs between two new agents in a new room on the server: answer sent → the other
 * agent's `agent_turn` received. Resolves with p50 / p99 and server CPU per hand-off.
 */
async function handoff(server: BenchServer, userToken: string, n: number): Promise<Record<string, number>> {
  const url = server.url;
  const room = (await ok(url, 'create_room', { room_name: 'Handoff' }, userToken)).room;
  await ok(url, 'update_room', { room_id: room.room_id, max_auto_rounds: 1000 }, userToken);
  const agents: { name: string; socket: Socket }[] = [];
  for (const tag of ['A', 'B']) {
    const name = `handoff-${tag}-${Math.random().toString(36).slice(2, 8)}`;
    const reg = await ok(url, 'register_agent', { name });
    await ok(url, 'join_room', { room_id: room.room_id }, reg.token);
    agents.push({ name, socket: await Socket.open(url, reg.token) });
  }
  const times: number[] = [];
  const cpu0 = cpuMs(server.child.pid!);
  await new Promise<void>((resolve) => {
    let sentAt = 0;
    let sent = 0;
    for (const agent of agents) {
      agent.socket.onEvent = (frame, at) => {
        if (frame.event !== 'agent_turn' || frame.data.agent_name !== agent.name) return;
        if (sent > 0) times.push(at - sentAt);
        if (times.length >= n) return resolve();
        sentAt = performance.now();
        sent++;
        void agent.socket.call('send_message', { room_id: room.room_id, text_content: `answer ${sent}` });
      };
    }
    void ok(url, 'send_message', { room_id: room.room_id, text_content: 'start' }, userToken);
  });
  const cpu = cpuMs(server.child.pid!) - cpu0;
  for (const a of agents) a.socket.close();
  return { handoff_p50_ms: percentile(times, 50), handoff_p99_ms: percentile(times, 99), handoff_cpu_ms_per_op: round(cpu / n) };
}

/** Runs `op(i)` for i < total at `rate` per second; latency from each op's scheduled time. */
async function fixedRate(rate: number, total: number, op: (i: number) => Promise<unknown>): Promise<number[]> {
  const latencies: number[] = [];
  const inFlight: Promise<unknown>[] = [];
  const t0 = performance.now();
  for (let i = 0; i < total; i++) {
    const due = t0 + (i * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
    inFlight.push(op(i).then(() => latencies.push(performance.now() - due)));
  }
  await Promise.all(inFlight);
  return latencies;
}

async function startAndTime(dir: string): Promise<{ server: BenchServer; ms: number }> {
  const t0 = performance.now();
  const server = await startBenchServer({ DATA_DIR: dir, ...LIMITS_OFF }, SERVER_BUILD);
  return { server, ms: Math.round(performance.now() - t0) };
}

/** A person who may read room r (and change its status). */
const readerOf = (data: Dataset, r: number): string => (r === 0 || !data.owners ? data.token : ownerToken(data.agentSecret, r));

async function scaleRun(dir: string, data: Dataset, run: number): Promise<Record<string, unknown>> {
  const rate = Number(arg('rate', '50'));
  const seconds = Number(arg('seconds', '20'));
  const handoffs = Number(arg('handoffs', '300'));
  const result: Record<string, unknown> = { run };

  const bigRoomOnly = data.roomIds.length === 1; // a data set of one big room: its figures only
  // Baseline: the same hand-off on a server with one room.
  if (!bigRoomOnly) {
    const empty = await mkdtemp(join(tmpdir(), 'scale-baseline-'));
    const base = await startBenchServer({ DATA_DIR: empty, ...LIMITS_OFF }, SERVER_BUILD);
    try {
      const person = await ok(base.url, 'register_user', { name: 'host' });
      const h = await handoff(base, person.token, handoffs);
      result.baseline_1_room = h;
    } finally {
      await base.stop();
      await rm(empty, { recursive: true, force: true });
    }
  }

  const { server, ms } = await startAndTime(dir);
  const servedAt = performance.now();
  const pid = server.child.pid!;
  result.startup_ms = ms;
  result.rss_after_start_mb = rssMb(pid);
  const url = server.url;
  const rooms = data.roomIds.length;
  try {
    // The cold big room first (room 0): nothing has touched it since the start.
    const big = data.roomIds[0]!;
    let t = performance.now();
    let cpu0 = 0;
    if (phase('cold')) {
      await ok(url, 'get_messages', { room_id: big, after_seq: 0, limit: 50 }, data.token);
      result.big_oldest_page_cold_ms = round(performance.now() - t, 1);
      t = performance.now();
      await ok(url, 'get_messages', { room_id: big, after_seq: 50, limit: 50 }, data.token);
      result.big_next_page_ms = round(performance.now() - t, 1);
      const searches: number[] = [];
      for (const query of ['no such phrase anywhere', `zq${run}x`, '不存在的词语']) {
        t = performance.now();
        const found = (await ok(url, 'search_messages', { room_id: big, query, limit: 20 }, data.token)).messages;
        if (found.length > 0) throw new Error(`unexpected match for ${query}`);
        searches.push(round(performance.now() - t, 0));
    }
    result.big_search_no_match_ms = searches;
    }

    // get_context of a member who never posted in the big room.
    if (phase('context')) {
      const newcomer = agentToken(data.agentSecret, data.agents - 1 - run);
      await ok(url, 'join_room', { room_id: big }, newcomer);
      const contexts: number[] = [];
      const contextCalls = Number(arg('context-calls', '500'));
      cpu0 = cpuMs(pid);
      for (let i = 0; i < contextCalls; i++) {
        t = performance.now();
        await ok(url, 'get_context', { room_id: big }, newcomer);
        contexts.push(performance.now() - t);
    }
    result.get_context_never_posted = { p50_ms: percentile(contexts, 50), p99_ms: percentile(contexts, 99), cpu_ms_per_op: round((cpuMs(pid) - cpu0) / contextCalls) };
    }

    if (bigRoomOnly) return result;
    // Hand-off among 10,000 rooms. --settle-handoff: once the server has fallen idle (after the
    // start-up's background work), as the join phase does; without it the phase overlaps the
    // warm-up, as in the runs BENCHMARKS.md's figure came from.
    if (phase('handoff')) {
      if (process.argv.includes('--settle-handoff')) result.handoff_settled_after_ms = await settle(pid);
      const at = arg('handoff-at-ms');
      if (at !== undefined) {
        await new Promise((r) => setTimeout(r, Math.max(0, servedAt + Number(at) - performance.now())));
        result.handoff_started_after_ms = Math.round(performance.now() - servedAt);
      }
      result.handoff_many_rooms = await handoff(server, data.token, handoffs);
    }

    // join_room (an agent joins a room it is not in) and set_room_status (the person pauses a
    // room, then resumes it), alternating, at a fixed rate. Measured at steady state: after the
    // start-up's background work (the index warm-up reading every room's ids, ~10 s on the 10M
    // set) is done, seen as the server's CPU falling idle; --no-settle measures during it.
    if (phase('join')) {
      const total = rate * seconds;
      // Op i: who calls and what. Even ops: an agent joins a room it is not in; odd: a room's
      // person pauses it, then resumes it on the next odd op.
      const opOf = (i: number): { token: string; tool: string; args: Record<string, unknown> } => {
        const k = Math.floor(i / 2);
        if (i % 2 === 0) {
          const agent = (run * total + k) % data.agents;
          return { token: agentToken(data.agentSecret, agent), tool: 'join_room', args: { room_id: data.roomIds[(agent + 1 + run) % rooms] } };
        }
        const r = 1 + ((run * 997 + Math.floor(k / 2)) % (rooms - 1));
        return { token: readerOf(data, r), tool: 'set_room_status', args: { room_id: data.roomIds[r], system_status: k % 2 === 0 ? 'paused' : 'active' } };
      };
      // --online-callers: every caller makes one call (list_rooms) before the phase, so during it
      // they are online already (the window is 90 s) and their calls are the join or status
      // change alone; without it each op is its caller's first call in a while, which also
      // commits the caller's presence (online) in its rooms and stores its last_active.
      if (ONLINE_CALLERS) {
        const tokens = [...new Set(Array.from({ length: total }, (_, i) => opOf(i).token))];
        for (let i = 0; i < tokens.length; i += 8) await Promise.all(tokens.slice(i, i + 8).map((token) => ok(url, 'list_rooms', {}, token)));
      }
      if (!process.argv.includes('--no-settle')) result.join_settled_after_ms = await settle(pid);
      // --floor: the same callers at the same rate, each reading a room it is in (get_room: the
      // same HTTP path, authentication and room lookup, no write, no fsync), right before and
      // right after the phase. What the phase adds to this floor is the cost of the change;
      // the floor itself is the HTTP round trip on this machine's shared cores.
      const floor = async (): Promise<Record<string, number>> => {
        const cpuBefore = cpuMs(pid);
        const reads = await fixedRate(rate, total, (i) => {
          const op = opOf(i);
          const room = op.tool === 'join_room' ? data.roomIds[((run * total + Math.floor(i / 2)) % data.agents) % rooms] : op.args.room_id;
          return ok(url, 'get_room', { room_id: room }, op.token);
        });
        return { p50_ms: percentile(reads, 50), p99_ms: percentile(reads, 99), cpu_ms_per_op: round((cpuMs(pid) - cpuBefore) / total) };
      };
      if (FLOOR) result.floor_before = await floor();
      const joins: number[] = [];
      const statuses: number[] = [];
      cpu0 = cpuMs(pid);
      const each: Array<{ i: number; tool: string; ms: number }> = [];
      const latencies = await fixedRate(rate, total, async (i) => {
        const op = opOf(i);
        const started = performance.now();
        await ok(url, op.tool, op.args, op.token);
        (op.tool === 'join_room' ? joins : statuses).push(performance.now() - started);
        each.push({ i, tool: op.tool, ms: round(performance.now() - started) });
      });
      // --dump FILE: every op's own latency (from its send), to see where the slow ones fall.
      const dump = arg('dump');
      if (dump) await writeFile(dump, JSON.stringify(each.sort((a, b) => a.i - b.i)));
      result.join_and_status = {
        rate,
        ops: total,
        online_callers: ONLINE_CALLERS,
        from_schedule_p50_ms: percentile(latencies, 50),
        from_schedule_p99_ms: percentile(latencies, 99),
        join_p99_ms: percentile(joins, 99),
        set_room_status_p99_ms: percentile(statuses, 99),
        cpu_ms_per_op: round((cpuMs(pid) - cpu0) / total),
      };
      if (FLOOR) result.floor_after = await floor();
    }

    // Mixed read load over random rooms: a page anywhere in the room, then one of its messages
    // by id; 4 at a time.
    if (phase('mixed')) {
      cpu0 = cpuMs(pid);
      t = performance.now();
      let next = 0;
      const reads = 3000;
      const pages: number[] = [];
      await Promise.all(
        Array.from({ length: 4 }, async () => {
          while (next < reads) {
            next++;
            const r = 1 + Math.floor(Math.random() * (rooms - 1));
            const started = performance.now();
            const reader = readerOf(data, r);
            const { messages } = await ok(url, 'get_messages', { room_id: data.roomIds[r], before_seq: 1 + Math.floor(Math.random() * 700), limit: 50 }, reader);
            pages.push(performance.now() - started);
            if (messages[0]) await ok(url, 'get_full_message', { message_id: messages[0].message_id }, reader);
          }
        }),
      );
      result.mixed_reads = {
        ops: reads * 2,
        seconds: round((performance.now() - t) / 1000, 1),
        page_p50_ms: percentile(pages, 50),
        page_p99_ms: percentile(pages, 99),
        cpu_ms_per_op: round((cpuMs(pid) - cpu0) / (reads * 2)),
      };
      result.rss_after_mixed_mb = rssMb(pid);
      result.memory_after_mixed_mb = await memoryByKind(url);
    }
  } finally {
    const t = performance.now();
    await server.stop();
    result.shutdown_ms = Math.round(performance.now() - t);
  }
  return result;
}

/**
 * Server CPU per acknowledged send_message, 64 closed-loop senders, HTTP then WebSocket: either
 * one person's 64 concurrent calls (the shape of bench/http-send.ts; over WebSocket 8 sockets ×
 * 8 calls) or, with `people`, 64 persons in the room, one sender (and one socket) each.
 */
async function cpuRun(seconds: number, people: boolean): Promise<Record<string, unknown>> {
  const dir = await mkdtemp(join(tmpdir(), 'scale-cpu-'));
  const server = await startBenchServer({ DATA_DIR: dir, ...LIMITS_OFF });
  const pid = server.child.pid!;
  try {
    const owner = await ok(server.url, 'register_user', { name: 'owner' });
    const room = (await ok(server.url, 'create_room', { room_name: 'CPU' }, owner.token)).room;
    const tokens: string[] = [];
    for (let i = 0; i < 64; i++) {
      if (!people) {
        tokens.push(owner.token);
        continue;
      }
      const p = await ok(server.url, 'register_user', { name: `sender-${i}` });
      await ok(server.url, 'join_room', { room_id: room.room_id }, p.token);
      tokens.push(p.token);
    }
    const out: Record<string, unknown> = { shape: people ? '64 persons' : 'one person, 64 concurrent calls' };
    for (const transport of (['http', 'ws'] as const).filter((t) => arg('transport', t) === t)) {
      const opened = transport === 'ws' ? await Promise.all((people ? tokens : tokens.slice(0, 8)).map((token) => Socket.open(server.url, token))) : [];
      const senders = tokens.map((token, i) => {
        const socket = opened[people ? i : i % 8];
        return (n: number) => {
          const args = { room_id: room.room_id, text_content: `message ${n} from ${i} 基准` };
          return socket ? socket.call('send_message', args) : rest(server.url, 'send_message', args, token);
        };
      });
      const run = await closedLoop(pid, seconds, senders);
      out[transport] = { acked: run.acked, per_second: run.perSecond, cpu_us_per_message: run.cpuUs };
      for (const s of opened) s.close();
    }
    return out;
  } finally {
    await server.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * Waits until the server is idle: under 5 % of a core over two 500 ms windows in a row (at most
 * 60 s). Resolves how long that took.
 */
async function settle(pid: number): Promise<number> {
  const started = performance.now();
  let quiet = 0;
  while (quiet < 2 && performance.now() - started < 60_000) {
    const before = cpuMs(pid);
    await new Promise((r) => setTimeout(r, 500));
    quiet = cpuMs(pid) - before < 25 ? quiet + 1 : 0;
  }
  return Math.round(performance.now() - started);
}

const runs = Number(arg('runs', '3'));
if (process.argv.includes('--cpu')) {
  for (let r = 0; r < runs; r++) console.log(JSON.stringify(await cpuRun(Number(arg('seconds', '10')), process.argv.includes('--people'))));
} else {
  const dir = arg('dir');
  if (!dir || !existsSync(join(dir, DATASET_FILE))) throw new Error('--dir DIR: a data set written by bench/dataset.ts');
  const data = JSON.parse(await readFile(join(dir, DATASET_FILE), 'utf8')) as Dataset;
  if (!existsSync(join(dir, 'indexes', 'indexes.json'))) {
    // The first start on a new data set scans every log (no persisted indexes yet).
    const { server, ms } = await startAndTime(dir);
    console.log(JSON.stringify({ first_start_without_indexes_ms: ms, rss_mb: rssMb(server.child.pid!) }));
    const t = performance.now();
    await server.stop();
    console.log(JSON.stringify({ first_shutdown_ms: Math.round(performance.now() - t) }));
  }
  for (let r = 0; r < runs; r++) {
    if (!process.argv.includes('--startup-only')) {
      // --first-run N: the run number picks which agents join which rooms and the host sessions,
      // so a later invocation on the same DIR (builds compared one after the other) must go on
      // numbering where the earlier stopped, or its joins would be repeats of members.
      console.log(JSON.stringify(await scaleRun(dir, data, r + Number(arg('first-run', '0')))));
      continue;
    }
    // Start-up alone: spawn → /health (and the server's CPU until then: on a shared machine the
    // wall time moves with the load, the CPU much less), then the first page of the big room
    // and of a small one.
    const { server, ms } = await startAndTime(dir);
    const startupCpu = Math.round(cpuMs(server.child.pid!));
    const rss = rssMb(server.child.pid!);
    let t = performance.now();
    await ok(server.url, 'get_messages', { room_id: data.roomIds[0], after_seq: 0, limit: 50 }, data.token);
    const big = Math.round(performance.now() - t);
    t = performance.now();
    await ok(server.url, 'get_messages', { room_id: data.roomIds[data.roomIds.length - 1], limit: 50 }, readerOf(data, data.roomIds.length - 1));
    const small = Math.round(performance.now() - t);
    t = performance.now();
    await server.stop();
    console.log(JSON.stringify({ run: r, startup_ms: ms, startup_cpu_ms: startupCpu, rss_after_start_mb: rss, big_room_first_page_ms: big, small_room_first_page_ms: small, shutdown_ms: Math.round(performance.now() - t) }));
  }
}
process.exit(0);
