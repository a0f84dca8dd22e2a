// Issue 40's load, measured from outside against any build: server CPU per acknowledged
// message (HTTP and WebSocket, 64 registered users each on its own connection, ~500-character
// messages into one room as fast as the answers come back), throughput, one sender over HTTP,
// server CPU per turn hand-off (two WebSocket agents), and delivery p99 at 10 msg/s to 100
// subscribed users timed from the scheduled send.
//
//   npx tsx bench/cost.ts [--build DIR] [--seconds 10] [--handoffs 1000] [--delivery-seconds 20]
//   npx tsx bench/cost.ts --vs DIR_B [--build DIR_A] [--rounds 3] ...   (A B / B A alternating)
//   (--data-root DIR: where the fresh DATA_DIRs are made, e.g. /dev/shm to take the disk out;
//    --from-source: each server run from its TypeScript through tsx instead of dist/;
//    --one-person: the 64 senders all speak for one person, the old --cpu bench's shape;
//    --together: with --vs, the delivery phase of both builds in the same seconds (see deliveryTogether);
//    --subscribers N: the delivery phase's listeners (default 100);
//    --phases sends,handoff,delivery: only these phases, sends being http,ws,one; BENCH_SERVER_NODE_ARGS: node flags of
//    the server, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof"; BENCH_SERVER_STDOUT=FILE: the server's
//    stdout (its log, --trace-gc lines) appended there instead of /dev/null)
//
// DIR is a checkout with a built server (`DIR/dist/src/cli.js`; default: this checkout's). Each
// build runs as its own process on a fresh DATA_DIR, log level info to /dev/null, rate limits
// and connection caps off; the same client code drives every build. Server CPU is the server
// process's user + system time from /proc over the phase, divided by the acknowledged ops: it
// counts the server's own work only, so it holds on a machine shared with the client. Each phase
// starts once the server is quiet after its set-up (`settle`), so work a build defers from the
// set-up (snapshot checkpoints, presence writes) is not counted as the phase's.
//
// Why not bench/server-scale.ts --cpu: that bench sent 30-character messages, and over
// WebSocket its senders (members of the room) stayed subscribed, so each message was also
// delivered to every sender; its one-person shape shared 8 sockets among 64 calls. See
// BENCHMARKS.md for what that hid.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from 'undici';
import { PACKAGE_ROOT } from '../src/paths.js';
import { closedLoop, cpuMs, percentile, startBenchServer, type BenchServer } from './util.js';
import { Socket } from './ws-client.js';

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1]! : fallback;
}

const SECONDS = Number(arg('seconds', '10'));
const HANDOFFS = Number(arg('handoffs', '1000'));
const DELIVERY_SECONDS = Number(arg('delivery-seconds', '20'));
const PHASES = new Set(arg('phases', 'sends,handoff,delivery').split(','));
/** --one-person: the 64 connections all speak for the room's owner (the old --cpu bench's shape). */
const ONE_PERSON = process.argv.includes('--one-person');
const FROM_SOURCE = process.argv.includes('--from-source');
/** --together (with --vs): the delivery phase only, both builds at the same time (deliveryTogether). */
const TOGETHER = process.argv.includes('--together');
const SENDERS = 64;
/** --subscribers N: the delivery phase's listeners (100 in issue 40's figure; 0 leaves the sender's own path). */
const SUBSCRIBERS = Number(arg('subscribers', '100'));

/** ~500 characters, different each time (the server never sees one text twice). */
function text(n: number, who: number): string {
  const head = `message ${n} from sender ${who}: `;
  const body = 'The quick brown fox jumps over the lazy dog while the agents take turns in the room. ';
  return (head + body.repeat(6)).slice(0, 500);
}

type Server = BenchServer;

/** The server of `build` on a fresh DATA_DIR (removed on stop), rate limits and connection caps off. */
async function startServer(build: string): Promise<Server> {
  const dataDir = mkdtempSync(join(arg('data-root', tmpdir()), 'bench-cost-'));
  const server = await startBenchServer(
    {
      DATA_DIR: dataDir,
      RATE_LIMIT_PER_TOKEN: '0',
      RATE_LIMIT_PER_ADDRESS: '0',
      RATE_LIMIT_LOGIN_PER_MINUTE: '0',
      MAX_CONNECTIONS: '1000000',
      MAX_SOCKETS_PER_TOKEN: '100000', // --one-person: 64 sockets of one token
    },
    // --from-source: the TypeScript through tsx, what bench/util.ts silently ran for a checkout
    // without dist/ (BENCHMARKS.md: how a baseline can look slower than it is).
    { dir: build, fromSource: FROM_SOURCE },
  );
  return {
    ...server,
    stop: async () => {
      await server.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** One HTTP keep-alive connection (undici Client: exactly one socket). */
class Http {
  private readonly client: Client;
  constructor(url: string) {
    this.client = new Client(url, { pipelining: 1 });
  }
  async call(tool: string, args: unknown, token?: string): Promise<any> {
    const { body } = await this.client.request({
      path: `/api/v1/tools/${tool}`,
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: JSON.stringify(args),
    });
    return body.json();
  }
  close(): Promise<void> {
    return this.client.close();
  }
}

async function ok(http: Http, tool: string, args: unknown, token?: string): Promise<any> {
  const answer = await http.call(tool, args, token);
  if (!answer.ok) throw new Error(`${tool}: ${JSON.stringify(answer.error)}`);
  return answer.data;
}

type Figures = Record<string, number>;

/**
 * Waits until the server is done with what the set-up left it (a build that checkpoints its
 * snapshots a second after a change, or stores presence changes a moment later, is still busy
 * with the 100 joins when the phase starts): two 250 ms windows in a row without a CPU tick, at
 * most 5 s. The phase's figure then counts the phase's own work for every build alike; without
 * the wait, work a build does a moment after the set-up fell into the next phase's figure.
 */
async function settle(pid: number): Promise<void> {
  let quiet = 0;
  for (let i = 0; i < 20 && quiet < 2; i++) {
    const before = cpuMs(pid);
    await new Promise((r) => setTimeout(r, 250));
    quiet = cpuMs(pid) === before ? quiet + 1 : 0;
  }
}

/** `closedLoop` once the server is quiet after the set-up. */
async function settledLoop(pid: number, senders: ((n: number) => Promise<any>)[]): ReturnType<typeof closedLoop> {
  await settle(pid);
  return closedLoop(pid, SECONDS, senders);
}

async function sends(server: Server, out: Figures): Promise<void> {
  const pid = server.child.pid!;
  const admin = new Http(server.url);
  const owner = await ok(admin, 'register_user', { name: 'owner' });
  const room = (await ok(admin, 'create_room', { room_name: 'Load' }, owner.token)).room;
  const users: { token: string; http: Http }[] = [];
  for (let i = 0; i < SENDERS; i++) {
    const http = new Http(server.url);
    if (ONE_PERSON) {
      users.push({ token: owner.token, http });
      continue;
    }
    const u = await ok(http, 'register_user', { name: `sender-${i}` });
    await ok(http, 'join_room', { room_id: room.room_id }, u.token);
    users.push({ token: u.token, http });
  }
  const args = (n: number, i: number) => ({ room_id: room.room_id, text_content: text(n, i) });

  const only = (name: string) => PHASES.has('sends') || PHASES.has(name);
  if (only('http')) {
    const http = await settledLoop(pid, users.map((u, i) => (n: number) => u.http.call('send_message', args(n, i), u.token)));
    out.http_cpu_us_per_msg = http.cpuUs;
    out.http_msgs_per_s = http.perSecond;
  }

  if (only('ws')) {
    const sockets = await Promise.all(users.map((u) => Socket.open(server.url, u.token)));
    // Unsubscribed: each sender gets only its own answers (auth_ok subscribed it to the room).
    await Promise.all(sockets.map((s) => s.send({ type: 'unsubscribe', room_id: room.room_id }, 'unsubscribed')));
    const ws = await settledLoop(pid, sockets.map((s, i) => (n: number) => s.call('send_message', args(n, i))));
    out.ws_cpu_us_per_msg = ws.cpuUs;
    out.ws_msgs_per_s = ws.perSecond;
    for (const s of sockets) s.close();
  }
  if (only('one')) {
    const one = await settledLoop(pid, [(n: number) => users[0]!.http.call('send_message', args(n, 0), users[0]!.token)]);
    out.one_sender_http_msgs_per_s = one.perSecond;
  }
  await Promise.all([admin, ...users.map((u) => u.http)].map((h) => h.close()));
}

/** Two WebSocket agents answering each other's turns HANDOFFS times: server CPU per hand-off. */
async function handoffs(server: Server, out: Figures): Promise<void> {
  const http = new Http(server.url);
  const owner = await ok(http, 'register_user', { name: 'handoff-owner' });
  const room = (await ok(http, 'create_room', { room_name: 'Handoff' }, owner.token)).room;
  await ok(http, 'update_room', { room_id: room.room_id, max_auto_rounds: 1000 }, owner.token);
  const agents: { name: string; socket: Socket }[] = [];
  for (const tag of ['A', 'B']) {
    const name = `agent-${tag}`;
    const reg = await ok(http, 'register_agent', { name });
    await ok(http, 'join_room', { room_id: room.room_id }, reg.token);
    agents.push({ name, socket: await Socket.open(server.url, reg.token) });
  }
  const times: number[] = [];
  let cpu0 = 0;
  const pid = server.child.pid!;
  await settle(pid);
  await new Promise<void>((done) => {
    let sentAt = 0;
    let sent = 0;
    let last = performance.now();
    // A room that ran out of automatic rounds (max_auto_rounds) is started again by its owner.
    const watchdog = setInterval(() => {
      if (performance.now() - last > 1000) void http.call('send_message', { room_id: room.room_id, text_content: 'go on' }, owner.token);
    }, 500);
    for (const agent of agents) {
      agent.socket.onEvent = (frame, at) => {
        if (frame.event !== 'agent_turn' || frame.data.agent_name !== agent.name) return;
        last = at;
        if (sent > 0) times.push(at - sentAt);
        if (sent === 0) cpu0 = cpuMs(pid);
        if (times.length >= HANDOFFS) {
          clearInterval(watchdog);
          return done();
        }
        sentAt = performance.now();
        sent++;
        void agent.socket.call('send_message', { room_id: room.room_id, text_content: text(sent, 0) });
      };
    }
    void http.call('send_message', { room_id: room.room_id, text_content: 'start' }, owner.token);
  });
  out.handoff_cpu_us = Math.round(((cpuMs(pid) - cpu0) * 1000) / HANDOFFS);
  out.handoff_p50_ms = percentile(times, 50);
  out.handoff_p99_ms = percentile(times, 99);
  for (const a of agents) a.socket.close();
  await http.close();
}

/** A room with SUBSCRIBERS subscribed listeners and its speaker, ready for `deliver`. */
interface DeliveryRoom {
  server: Server;
  http: Http;
  token: string;
  roomId: string;
  sockets: Socket[];
  /** When each tick was due to be sent (by its text's first 15 characters). */
  scheduled: Map<string, number>;
  latencies: number[];
}

async function deliveryRoom(server: Server): Promise<DeliveryRoom> {
  const http = new Http(server.url);
  const owner = await ok(http, 'register_user', { name: 'speaker' });
  const room = (await ok(http, 'create_room', { room_name: 'Delivery' }, owner.token)).room;
  const d: DeliveryRoom = { server, http, token: owner.token, roomId: room.room_id, sockets: [], scheduled: new Map(), latencies: [] };
  for (let i = 0; i < SUBSCRIBERS; i++) {
    const u = await ok(http, 'register_user', { name: `listener-${i}` });
    await ok(http, 'join_room', { room_id: room.room_id }, u.token);
    const socket = await Socket.open(server.url, u.token);
    socket.onEvent = (frame, at) => {
      if (frame.event !== 'message_new') return;
      const due = d.scheduled.get(frame.data.message.text_content.slice(0, 15));
      if (due !== undefined) d.latencies.push(at - due);
    };
    d.sockets.push(socket);
  }
  return d;
}

/** 10 msg/s for DELIVERY_SECONDS from `t0` (performance.now()): CPU per message, latency from the scheduled send. */
async function deliver(d: DeliveryRoom, t0: number, out: Figures): Promise<void> {
  const rate = 10;
  const total = rate * DELIVERY_SECONDS;
  const pid = d.server.child.pid!;
  const pending: Promise<unknown>[] = [];
  const cpu0 = cpuMs(pid);
  for (let i = 0; i < total; i++) {
    const due = t0 + (i * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    const key = `tick ${String(i).padStart(10, '0')}`;
    d.scheduled.set(key, due);
    pending.push(d.http.call('send_message', { room_id: d.roomId, text_content: `${key} ${text(i, -1)}` }, d.token));
  }
  await Promise.all(pending);
  const expected = total * SUBSCRIBERS;
  for (let i = 0; i < 200 && d.latencies.length < expected; i++) await new Promise((r) => setTimeout(r, 25));
  out.delivery_cpu_us_per_msg = Math.round(((cpuMs(pid) - cpu0) * 1000) / total);
  out.delivery_p50_ms = percentile(d.latencies, 50);
  out.delivery_p99_ms = percentile(d.latencies, 99);
  out.delivery_lost = expected - d.latencies.length;
  for (const s of d.sockets) s.close();
  await d.http.close();
}

/** 10 msg/s for DELIVERY_SECONDS to SUBSCRIBERS subscribed users: delivery latency from the scheduled send. */
async function delivery(server: Server, out: Figures): Promise<void> {
  const d = await deliveryRoom(server);
  await settle(server.child.pid!);
  await deliver(d, performance.now() + 500, out);
}

/**
 * --together: the delivery phase of two builds in the same seconds, each on its own fresh server,
 * the sends of B 50 ms after those of A. At 10 messages a second each server is idle most of
 * the time, so the two hardly compete, and whatever else the machine does in those seconds
 * falls on both alike: the ratio is paired far more tightly than by alternating runs.
 */
async function deliveryTogether(a: string, b: string): Promise<{ a: Figures; b: Figures }> {
  const [sa, sb] = [await startServer(a), await startServer(b)];
  try {
    const [da, db] = [await deliveryRoom(sa), await deliveryRoom(sb)];
    await Promise.all([settle(sa.child.pid!), settle(sb.child.pid!)]);
    const t0 = performance.now() + 500;
    const fa: Figures = {};
    const fb: Figures = {};
    await Promise.all([deliver(da, t0, fa), deliver(db, t0 + 50, fb)]);
    return { a: fa, b: fb };
  } finally {
    await Promise.all([sa.stop(), sb.stop()]);
  }
}

/** One build, one fresh server: every phase. */
export async function measure(build: string): Promise<Figures> {
  const out: Figures = {};
  const server = await startServer(build);
  try {
    if (['sends', 'http', 'ws', 'one'].some((p) => PHASES.has(p))) await sends(server, out);
    if (PHASES.has('handoff')) await handoffs(server, out);
    if (PHASES.has('delivery')) await delivery(server, out);
  } finally {
    await server.stop();
  }
  return out;
}

const LOWER_IS_BETTER = new Set(['http_cpu_us_per_msg', 'ws_cpu_us_per_msg', 'handoff_cpu_us', 'handoff_p50_ms', 'handoff_p99_ms', 'delivery_p50_ms', 'delivery_p99_ms', 'delivery_cpu_us_per_msg']);

if (import.meta.url === `file://${process.argv[1]}`) {
  const a = resolve(arg('build', PACKAGE_ROOT));
  const vs = arg('vs', '');
  if (!vs) {
    console.log(JSON.stringify({ build: a, ...(await measure(a)) }));
  } else {
    const b = resolve(vs);
    const rounds = Number(arg('rounds', '3'));
    const pairs: { a: Figures; b: Figures }[] = [];
    for (let r = 0; r < rounds && TOGETHER; r++) {
      const pair = await deliveryTogether(a, b);
      console.log(JSON.stringify({ round: r, together: true, a: pair.a, b: pair.b }));
      pairs.push(pair);
    }
    for (let r = 0; r < rounds && !TOGETHER; r++) {
      // Alternate which build goes first, so a drift of the machine falls on both.
      const first = r % 2 === 0 ? a : b;
      const second = first === a ? b : a;
      const x = await measure(first);
      console.log(JSON.stringify({ round: r, build: first, ...x }));
      const y = await measure(second);
      console.log(JSON.stringify({ round: r, build: second, ...y }));
      pairs.push(first === a ? { a: x, b: y } : { a: y, b: x });
    }
    const range = (xs: number[], digits = 0) => {
      const f = (x: number) => x.toFixed(digits);
      return `${f(Math.min(...xs))}–${f(Math.max(...xs))}`;
    };
    console.log(`| figure | ${b} | ${a} | ratio (paired by round) |`);
    console.log('|---|---|---|---|');
    for (const key of Object.keys(pairs[0]!.a)) {
      const digits = key.endsWith('_ms') ? 1 : 0;
      const ratios = pairs.map((p) => p.a[key]! / p.b[key]!);
      console.log(`| ${key}${LOWER_IS_BETTER.has(key) ? ' (lower is better)' : ''} | ${range(pairs.map((p) => p.b[key]!), digits)} | ${range(pairs.map((p) => p.a[key]!), digits)} | ${range(ratios, 2)} |`);
    }
  }
  process.exit(0);
}
