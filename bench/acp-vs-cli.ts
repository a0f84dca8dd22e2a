// acp-agent against cli-agent with the same stand-in agent (BENCHMARKS.md, "ACP sessions
// against one CLI run per turn"): test/fixtures/fake-acp-agent.mjs served over ACP to
// acp-agent, and the same logic as a one-shot CLI (`--cli`: prompt on stdin, answer on stdout)
// to cli-agent. Each runner has a room of its own with one person; the person writes, and the
// bench measures from the runner's `agent_turn` to its first `member_status_change` (busy), to
// its first activity that reports the agent's own progress (a note other than the runner's
// opening one), and to its answer's `message_new`. Runs alternate between the two runners.
//   npx tsx bench/acp-vs-cli.ts [runs=3] [turns=5]
// Stand-in timing: FAKE_ACP_THINK_MS (default 200) before the first chunk, three chunks
// FAKE_ACP_CHUNK_MS (default 100) apart.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import WebSocket from 'ws';
import { PACKAGE_ROOT } from '../src/paths.js';
import { percentile, rest, startBenchServer } from './util.js';

const runs = Number(process.argv[2] ?? 3);
const turns = Number(process.argv[3] ?? 5);
const FAKE = join(PACKAGE_ROOT, 'test', 'fixtures', 'fake-acp-agent.mjs');
const standIn = { FAKE_ACP_THINK_MS: process.env.FAKE_ACP_THINK_MS ?? '200', FAKE_ACP_CHUNK_MS: process.env.FAKE_ACP_CHUNK_MS ?? '100' };

type Kind = 'acp' | 'cli';
interface Sample {
  firstActivityMs: number;
  /** null: no progress was shown before the answer. */
  firstProgressMs: number | null;
  answerMs: number;
}

const dataDir = await mkdtemp(join(tmpdir(), 'bench-acp-'));
const stateDir = await mkdtemp(join(tmpdir(), 'bench-acp-state-'));
const server = await startBenchServer({ DATA_DIR: dataDir });
const cli = existsSync(join(PACKAGE_ROOT, 'dist', 'src', 'cli.js'))
  ? [join(PACKAGE_ROOT, 'dist', 'src', 'cli.js')]
  : ['--import', 'tsx', join(PACKAGE_ROOT, 'src', 'cli.ts')];

const person = await rest(server.url, 'register_user', { name: 'BenchPerson' });
const token: string = person.data.token;
const rooms: Record<Kind, string> = { acp: '', cli: '' };
for (const kind of ['acp', 'cli'] as const) {
  const created = await rest(server.url, 'create_room', { room_name: `bench ${kind}`, language: 'en' }, token);
  rooms[kind] = created.data.room.room_id;
}

// The person's socket sees every event of both rooms.
type Listener = (frame: any, at: number) => void;
const listeners = new Set<Listener>();
const ws = new WebSocket(`${server.url.replace('http', 'ws')}/ws`);
await new Promise((r) => ws.once('open', r));
ws.on('message', (raw) => {
  const at = performance.now();
  const frame = JSON.parse(String(raw));
  for (const l of listeners) l(frame, at);
});
ws.send(JSON.stringify({ type: 'auth', token }));
await new Promise<void>((resolve) => {
  const l: Listener = (f) => {
    if (f.type === 'auth_ok') {
      listeners.delete(l);
      resolve();
    }
  };
  listeners.add(l);
});

function startRunner(kind: Kind, name: string): Promise<ChildProcess> {
  const args =
    kind === 'acp'
      ? ['acp-agent', '--url', server.url, '--room', rooms.acp, '--name', name, '--', FAKE]
      : ['cli-agent', '--url', server.url, '--room', rooms.cli, '--name', name, '--', process.execPath, FAKE, '--cli'];
  const child = spawn(process.execPath, [...cli, ...args], { env: { ...process.env, ...standIn, CHATROOM_STATE_DIR: stateDir }, stdio: ['ignore', 'ignore', 'pipe'] });
  return new Promise((resolve, reject) => {
    let out = '';
    child.stderr!.on('data', (c: Buffer) => {
      out += c.toString();
      if (out.includes('ready: waiting for turns')) resolve(child);
    });
    child.once('exit', () => reject(new Error(`${kind} runner exited: ${out}`)));
  });
}

async function turn(kind: Kind, name: string, n: number): Promise<Sample> {
  const roomId = rooms[kind];
  let turnAt = 0;
  let activityAt = 0;
  let progressAt = 0;
  const answered = new Promise<number>((resolve) => {
    const l: Listener = (f, at) => {
      if (f.type !== 'event' || f.room_id !== roomId) return;
      if (f.event === 'agent_turn' && f.data.agent_name === name && !turnAt) turnAt = at;
      if (f.event === 'member_status_change' && f.data.member?.name === name && f.data.member.status === 'busy' && turnAt) {
        if (!activityAt) activityAt = at;
        const note: string = f.data.member.note ?? '';
        // The runners' opening notes: "running <program>" (cli-agent), "<program> is reading the room" (acp-agent).
        if (!progressAt && !note.startsWith('running ') && !note.endsWith('is reading the room')) progressAt = at;
      }
      if (f.event === 'message_new' && f.data.message.sender === name && turnAt) {
        listeners.delete(l);
        resolve(at);
      }
    };
    listeners.add(l);
  });
  await rest(server.url, 'send_message', { room_id: roomId, text_content: `question ${n} for ${kind}` }, token);
  const answerAt = await answered;
  return {
    firstActivityMs: activityAt - turnAt,
    firstProgressMs: progressAt && progressAt < answerAt ? progressAt - turnAt : null,
    answerMs: answerAt - turnAt,
  };
}

const round = (n: number) => Math.round(n);
const summary = (samples: Sample[]) => ({
  first_activity_p50_ms: round(percentile(samples.map((s) => s.firstActivityMs), 50)),
  first_progress_p50_ms: samples.some((s) => s.firstProgressMs === null) ? null : round(percentile(samples.map((s) => s.firstProgressMs!), 50)),
  answer_p50_ms: round(percentile(samples.map((s) => s.answerMs), 50)),
  answer_max_ms: round(Math.max(...samples.map((s) => s.answerMs))),
});

const results: Array<Record<string, unknown>> = [];
try {
  for (let run = 1; run <= runs; run++) {
    const acpName = `AcpBench${run}`;
    const cliName = `CliBench${run}`;
    const acp = await startRunner('acp', acpName);
    const cliRunner = await startRunner('cli', cliName);
    const samples: Record<Kind, Sample[]> = { acp: [], cli: [] };
    for (let i = 0; i < turns; i++) {
      // Alternate which runner goes first, so neither always meets a warmer machine.
      const order: Kind[] = (run + i) % 2 ? ['acp', 'cli'] : ['cli', 'acp'];
      for (const kind of order) samples[kind].push(await turn(kind, kind === 'acp' ? acpName : cliName, i));
    }
    for (const child of [acp, cliRunner]) {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    }
    const row = { run, acp: summary(samples.acp), cli: summary(samples.cli), acp_first_turn_answer_ms: round(samples.acp[0]!.answerMs) };
    results.push(row);
    console.log(JSON.stringify(row));
  }
} finally {
  ws.close();
  await server.stop();
  await rm(dataDir, { recursive: true, force: true });
  await rm(stateDir, { recursive: true, force: true });
}
console.log(`RESULT ${JSON.stringify({ standIn, turns, results })}`);
process.exit(0);
