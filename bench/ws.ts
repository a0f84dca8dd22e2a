// WebSocket fan-out benchmark: one room, N subscribed sockets, a sender posting at a fixed
// rate; send→receive latency (p50/p99), lost, duplicated and out-of-order deliveries, and
// memory per idle authenticated connection — for the chatroom hub and for a bare `ws` relay
// (bench/ws-server.ts runs each target in its own process, so memory is the server's alone).
//   npx tsx bench/ws.ts
//   WS_BENCH_SOCKETS=1000 WS_BENCH_RATE=100 WS_BENCH_DURATION_S=60 WS_BENCH_WARMUP_S=5 \
//   WS_BENCH_TARGETS=chatroom,relay npx tsx bench/ws.ts
// The clients share this one process: at high fan-out its own event loop adds to the latency
// (the summary reports its utilisation). The receiving sockets therefore use the minimal client
// of bench/raw-ws-client.ts for both targets; the one sending socket uses the `ws` package.
import { fork, type ChildProcess } from 'node:child_process';
import os from 'node:os';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { performance } from 'node:perf_hooks';
import WebSocket from 'ws';
import { restCall } from '../src/client/rest.js';
import { openRawAuthed, type RawWebSocket } from './raw-ws-client.js';
import { cpuMs } from './util.js';

export type WsBenchTarget = 'chatroom' | 'relay';

export interface WsBenchOptions {
  /** Subscribed receiving sockets (default 1000). */
  sockets: number;
  /** Messages per second sent to the room (default 100). */
  rate: number;
  /** Measured seconds, after the warm-up (default 60). */
  durationS: number;
  /** Seconds sent at the same rate before measuring (default 5). */
  warmupS: number;
  /** Longest wait for late deliveries after the last send (default 10). */
  drainS: number;
  /** Characters of filler per message, for a realistic frame size (default 200). */
  padding: number;
  targets: WsBenchTarget[];
}

export const WS_BENCH_DEFAULTS: Readonly<WsBenchOptions> = {
  sockets: 1000,
  rate: 100,
  durationS: 60,
  warmupS: 5,
  drainS: 10,
  padding: 200,
  targets: ['chatroom', 'relay'],
};

export interface TargetResult {
  target: WsBenchTarget;
  sockets: number;
  memory: {
    gc: boolean;
    heap_used_before: number;
    heap_used_after: number;
    per_connection_heap_bytes: number;
    per_connection_rss_bytes: number;
    per_connection_external_bytes: number;
  };
  sent: number;
  send_errors: number;
  expected_deliveries: number;
  deliveries: number;
  /** Deliveries still missing at the end of the drain window (late counts as lost). */
  lost: number;
  duplicates: number;
  out_of_order: number;
  /** Receiving sockets the server closed during the run (slow consumers). */
  sockets_dropped: number;
  frame_bytes: number;
  latency_ms: { p50: number; p90: number; p95: number; p99: number; max: number; mean: number };
  client_event_loop_utilization: number;
  /** Server process CPU (all threads) per measured message, from its first send to the drain. */
  server_cpu_us_per_message: number;
}

/** Latency histogram: 0.1 ms buckets up to 60 s, one overflow bucket. */
class Histogram {
  private readonly buckets = new Uint32Array(600_001);
  count = 0;
  private sum = 0;
  private maxValue = 0;

  add(ms: number): void {
    const i = Math.min(this.buckets.length - 1, Math.max(0, Math.round(ms * 10)));
    this.buckets[i]!++;
    this.count++;
    this.sum += ms;
    if (ms > this.maxValue) this.maxValue = ms;
  }

  quantile(q: number): number {
    const want = Math.ceil(this.count * q);
    let seen = 0;
    for (let i = 0; i < this.buckets.length; i++) {
      seen += this.buckets[i]!;
      if (seen >= want && want > 0) return i / 10;
    }
    return 0;
  }

  summary() {
    const round = (n: number) => Math.round(n * 100) / 100;
    return {
      p50: round(this.quantile(0.5)),
      p90: round(this.quantile(0.9)),
      p95: round(this.quantile(0.95)),
      p99: round(this.quantile(0.99)),
      max: round(this.maxValue),
      mean: round(this.count ? this.sum / this.count : 0),
    };
  }
}

interface Child {
  process: ChildProcess;
  url: string;
  mem(): Promise<{ usage: NodeJS.MemoryUsage; gc: boolean }>;
  stop(): Promise<void>;
}

async function startChild(target: WsBenchTarget): Promise<Child> {
  const script = fileURLToPath(new URL('./ws-server.ts', import.meta.url));
  // BENCH_SERVER_NODE_ARGS: extra node flags for the server process (e.g. --cpu-prof).
  const extra = (process.env.BENCH_SERVER_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const child = fork(script, [target], { execArgv: ['--expose-gc', '--import', 'tsx', ...extra], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const url = await new Promise<string>((resolve, reject) => {
    child.once('message', (msg: { type: string; url: string }) => resolve(msg.url));
    child.once('exit', (code) => reject(new Error(`bench server exited with ${code}`)));
  });
  return {
    process: child,
    url,
    mem: () =>
      new Promise((resolve) => {
        child.once('message', (msg: { usage: NodeJS.MemoryUsage; gc: boolean }) => resolve(msg));
        child.send({ cmd: 'mem' });
      }),
    stop: () =>
      new Promise<void>((resolve) => {
        child.once('exit', () => resolve());
        child.send({ cmd: 'stop' });
      }),
  };
}

function openAuthed(url: string, token: string, onFrame?: (frame: Buffer) => void): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    // The clients are the bottleneck of this process: no UTF-8 validation, no string copies.
    const ws = new WebSocket(`${url.replace(/^http/, 'ws')}/ws`, { perMessageDeflate: false, skipUTF8Validation: true });
    ws.once('error', reject);
    // A socket the server refuses (a cap, a bad token) closes before auth_ok: fail, don't hang.
    const refused = (code: number, reason: Buffer) => reject(new Error(`socket closed before auth_ok: ${code} ${reason.toString()}`));
    ws.once('close', refused);
    ws.once('open', () => ws.send(JSON.stringify({ type: 'auth', token })));
    ws.once('message', (data: Buffer) => {
      const text = data.toString();
      ws.off('close', refused);
      if (!text.includes('"auth_ok"')) return reject(new Error(`auth failed: ${text.slice(0, 200)}`));
      if (onFrame) ws.on('message', (d: Buffer) => onFrame(d));
      resolve(ws);
    });
  });
}

const MARKER = Buffer.from('"text_content":"bench:');
const FAILED = Buffer.from('"ok":false');

/** Reads `bench:<index>:<sent ms> …` straight from the frame bytes; null for other frames. */
function readMarker(frame: Buffer): { index: number; sentAt: number } | null {
  const at = frame.indexOf(MARKER);
  if (at < 0) return null;
  let i = at + MARKER.length;
  let index = 0;
  for (let c = frame[i]!; c >= 48 && c <= 57; c = frame[++i]!) index = index * 10 + (c - 48);
  const start = i + 1;
  let end = start;
  while (end < frame.length && frame[end] !== 32) end++;
  return { index, sentAt: Number(frame.toString('latin1', start, end)) };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function benchTarget(target: WsBenchTarget, opts: WsBenchOptions): Promise<TargetResult> {
  const child = await startChild(target);
  const receivers: RawWebSocket[] = [];
  let sender: WebSocket | undefined;
  try {
    let hostToken = 'relay';
    let readerToken = 'relay';
    let roomId = 'bench-room-20260101000000-abcdefgh';
    if (target === 'chatroom') {
      hostToken = (await restCall<{ token: string }>(child.url, 'register_user', { name: 'BenchHost' })).token;
      readerToken = (await restCall<{ token: string }>(child.url, 'register_user', { name: 'BenchReader' })).token;
      roomId = (await restCall<{ room: { room_id: string } }>(child.url, 'create_room', { room_name: 'Bench room' }, hostToken)).room.room_id;
      await restCall(child.url, 'join_room', { room_id: roomId }, readerToken);
    }

    const warmup = Math.round(opts.warmupS * opts.rate);
    const measured = Math.round(opts.durationS * opts.rate);
    const total = warmup + measured;
    const histogram = new Histogram();
    const received = Array.from({ length: opts.sockets }, () => new Uint8Array(total));
    const lastIndex = new Int32Array(opts.sockets).fill(-1);
    let deliveries = 0;
    let duplicates = 0;
    let outOfOrder = 0;
    let frameBytes = 0;

    const before = await child.mem();
    const receiver = (r: number) => (frame: Buffer) => {
      const mark = readMarker(frame);
      if (!mark) return;
      const now = performance.now();
      const { index } = mark;
      if (received[r]![index]) {
        duplicates++;
        return;
      }
      received[r]![index] = 1;
      if (index < lastIndex[r]!) outOfOrder++;
      else lastIndex[r] = index;
      if (index >= warmup) {
        deliveries++;
        frameBytes = frame.length;
        histogram.add(now - mark.sentAt);
      }
    };
    for (let i = 0; i < opts.sockets; i += 100) {
      const batch = Array.from({ length: Math.min(100, opts.sockets - i) }, (_, j) => openRawAuthed(child.url, readerToken, receiver(i + j)));
      receivers.push(...(await Promise.all(batch)));
    }
    let dropped = 0;
    let finished = false;
    for (const ws of receivers) ws.onClose = () => !finished && dropped++;
    await sleep(500);
    const after = await child.mem();

    let sendErrors = 0;
    const sending = await openAuthed(child.url, hostToken, (frame) => {
      if (frame.indexOf(FAILED) >= 0) sendErrors++;
    });
    sender = sending;
    const filler = '这是一条用于压测的普通聊天消息 a typical chat line. '.repeat(Math.ceil(opts.padding / 30)).slice(0, opts.padding);
    const started = performance.now();
    let elu = performance.eventLoopUtilization();
    let serverCpu0 = cpuMs(child.process.pid!);
    for (let i = 0; i < total; i++) {
      const due = started + (i * 1000) / opts.rate;
      const wait = due - performance.now();
      if (wait > 1) await sleep(wait);
      if (i === warmup) {
        elu = performance.eventLoopUtilization();
        serverCpu0 = cpuMs(child.process.pid!);
      }
      sending.send(
        JSON.stringify({
          type: 'call',
          id: i,
          tool: 'send_message',
          args: { room_id: roomId, text_content: `bench:${i}:${performance.now().toFixed(3)} ${filler}` },
        }),
      );
    }
    const expected = measured * opts.sockets;
    const drainUntil = performance.now() + opts.drainS * 1000;
    while (deliveries < expected && performance.now() < drainUntil) await sleep(50);
    const utilization = performance.eventLoopUtilization(elu).utilization;
    const serverCpuMs = cpuMs(child.process.pid!) - serverCpu0;
    finished = true;

    return {
      target,
      sockets: opts.sockets,
      memory: {
        gc: after.gc,
        heap_used_before: before.usage.heapUsed,
        heap_used_after: after.usage.heapUsed,
        per_connection_heap_bytes: Math.round((after.usage.heapUsed - before.usage.heapUsed) / opts.sockets),
        per_connection_rss_bytes: Math.round((after.usage.rss - before.usage.rss) / opts.sockets),
        per_connection_external_bytes: Math.round(
          (after.usage.external + after.usage.arrayBuffers - before.usage.external - before.usage.arrayBuffers) / opts.sockets,
        ),
      },
      sent: total,
      send_errors: sendErrors,
      expected_deliveries: expected,
      deliveries,
      lost: expected - deliveries,
      duplicates,
      out_of_order: outOfOrder,
      sockets_dropped: dropped,
      frame_bytes: frameBytes,
      latency_ms: histogram.summary(),
      client_event_loop_utilization: Math.round(utilization * 100) / 100,
      server_cpu_us_per_message: Math.round((serverCpuMs * 1000) / measured),
    };
  } finally {
    for (const ws of receivers) ws.terminate();
    sender?.terminate();
    await child.stop();
  }
}

export interface WsBenchSummary {
  options: WsBenchOptions;
  /** Other load on the machine skews latency: recorded with the results. */
  machine: { cpus: number; node: string; loadavg_before: number[]; loadavg_after: number[] };
  results: TargetResult[];
}

export async function runWsBench(options: Partial<WsBenchOptions> = {}): Promise<WsBenchSummary> {
  const opts: WsBenchOptions = { ...WS_BENCH_DEFAULTS, ...options };
  const loadBefore = os.loadavg().map((n) => Math.round(n * 100) / 100);
  const results: TargetResult[] = [];
  for (const target of opts.targets) results.push(await benchTarget(target, opts));
  return {
    options: opts,
    machine: {
      cpus: os.cpus().length,
      node: process.version,
      loadavg_before: loadBefore,
      loadavg_after: os.loadavg().map((n) => Math.round(n * 100) / 100),
    },
    results,
  };
}

function envNumber(name: string): number | undefined {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return undefined;
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${name} must be a positive number`);
  return n;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const overrides: Partial<WsBenchOptions> = {};
  const map: Array<[keyof WsBenchOptions, string]> = [
    ['sockets', 'WS_BENCH_SOCKETS'],
    ['rate', 'WS_BENCH_RATE'],
    ['durationS', 'WS_BENCH_DURATION_S'],
    ['warmupS', 'WS_BENCH_WARMUP_S'],
    ['drainS', 'WS_BENCH_DRAIN_S'],
    ['padding', 'WS_BENCH_PADDING'],
  ];
  for (const [key, env] of map) {
    const value = envNumber(env);
    if (value !== undefined) (overrides as Record<string, number>)[key] = value;
  }
  if (process.env.WS_BENCH_TARGETS) overrides.targets = process.env.WS_BENCH_TARGETS.split(',').map((t) => t.trim()) as WsBenchTarget[];
  const summary = await runWsBench(overrides);
  console.log(JSON.stringify(summary, null, 2));
}
