// `npm run bench`: every benchmark, one after the other, then one table (goal, measured value,
// method) printed and written to bench/results.json. BENCH_QUICK=1 shortens every run (for a
// smoke check; the numbers in BENCHMARKS.md come from a full run).
import { writeFile } from 'node:fs/promises';
import os from 'node:os';
import { runExportBench } from './export.js';
import { runHandoffBench } from './handoff.js';
import { runSendBench } from './http-send.js';
import { runStartupSearchBench } from './startup-search.js';
import { runWsBench } from './ws.js';

const quick = process.env.BENCH_QUICK === '1';

interface Row {
  goal: string;
  measured: string;
  method: string;
  /** null: reported for information, no target to meet. */
  pass: boolean | null;
}

const rows: Row[] = [];
const raw: Record<string, unknown> = {};

function row(goal: string, measured: string, method: string, pass: boolean | null) {
  rows.push({ goal, measured, method, pass });
  console.error(`${pass === null ? 'INFO' : pass ? 'PASS' : 'MISS'}  ${goal}: ${measured}`);
}

const send = await runSendBench(quick ? 2 : 10);
raw.send = send;
for (const c of send.concurrency) {
  row(
    `send_message, ${c.senders} sender(s)`,
    `${c.messagesPerSecond}/s, p50 ${c.p50Ms} ms, p99 ${c.p99Ms} ms`,
    'HTTP, keep-alive, each ack after fsync (closed loop)',
    c.senders !== 64 || c.messagesPerSecond >= 5000,
  );
}
row(
  'ack p99 < 50 ms at 1,000 messages/s',
  `p99 ${send.fixedRate.p99Ms} ms (achieved ${send.fixedRate.achievedPerSecond}/s)`,
  'open loop, one send every ms',
  send.fixedRate.p99Ms < 50,
);

const startup = await runStartupSearchBench(quick ? 100_000 : 1_000_000, 1_000, quick ? 10 : 50);
raw.startupSearch = startup;
row(
  `start-up with ${startup.startup.messages.toLocaleString('en')} messages in ${startup.startup.rooms} rooms < 5 s`,
  `${(startup.startup.ms / 1000).toFixed(2)} s to serve; every room parsed after ${(startup.startup.allRoomsReadMs / 1000).toFixed(2)} s; first read of a cold room ${startup.startup.coldReadMs} ms`,
  'process spawn until /health answers; then get_messages on every room (forces each log to be parsed)',
  startup.startup.ms < 5000,
);
for (const s of startup.search) {
  row(
    `search p50 ≤ 50 ms over ${s.messages.toLocaleString('en')} messages ("${s.query}", ${s.hits} hits)`,
    `p50 ${s.p50Ms} ms, p99 ${s.p99Ms} ms`,
    'search_messages over HTTP, one room, limit 50',
    s.p50Ms <= 50,
  );
}

const handoff = await runHandoffBench(quick ? 100 : 1000);
raw.handoff = handoff;
row(
  'turn hand-off p99 ≤ 10 ms',
  `ack → turn p50 ${handoff.p50Ms} ms, p99 ${handoff.p99Ms} ms; send → turn p50 ${handoff.sendToTurnP50Ms} ms, p99 ${handoff.sendToTurnP99Ms} ms`,
  'two WebSocket agents answering in turn; judged on answer sent → next agent_turn received (includes the fsync)',
  handoff.sendToTurnP99Ms <= 10,
);

const ws = await runWsBench({ sockets: 1000, rate: 100, durationS: quick ? 5 : 60, warmupS: quick ? 1 : 5 });
raw.ws = ws;
const [chatroom, relay] = [ws.results.find((r) => r.target === 'chatroom')!, ws.results.find((r) => r.target === 'relay')!];
row(
  'fan-out: 1,000 sockets, 100 msg/s: p99 ≤ 100 ms, 0 lost, 0 reordered',
  `p50 ${chatroom.latency_ms.p50} ms, p99 ${chatroom.latency_ms.p99} ms, lost ${chatroom.lost}, out of order ${chatroom.out_of_order}`,
  'send_message call frames over WebSocket → message_new on every socket',
  chatroom.latency_ms.p99 <= 100 && chatroom.lost === 0 && chatroom.out_of_order === 0,
);
const ratio = relay.latency_ms.p99 > 0 ? chatroom.latency_ms.p99 / relay.latency_ms.p99 : Infinity;
row('fan-out p99 ≤ 1.3× a bare ws relay', `${ratio.toFixed(2)}× (relay p99 ${relay.latency_ms.p99} ms)`, 'same load against a relay that only forwards frames', ratio <= 1.3);
const perConnectionJs = chatroom.memory.per_connection_heap_bytes + chatroom.memory.per_connection_external_bytes;
row(
  'memory per idle connection ≤ 15 KB',
  `${(perConnectionJs / 1024).toFixed(1)} KB heap + external, ${(chatroom.memory.per_connection_rss_bytes / 1024).toFixed(1)} KB RSS`,
  'server heap + external (judged) and RSS after a full GC, before/after opening N authenticated idle sockets',
  perConnectionJs <= 15 * 1024,
);

// Capacity ramp: the most subscribers in one room at 10 msg/s with p95 ≤ 250 ms and no loss.
let capacity = 0;
const ramp: unknown[] = [];
for (const sockets of quick ? [1000, 2000] : [1000, 2500, 5000, 7500, 10_000]) {
  const step = await runWsBench({ sockets, rate: 10, durationS: quick ? 3 : 15, warmupS: 1, targets: ['chatroom'] });
  const result = step.results[0]!;
  ramp.push({ sockets, latency_ms: result.latency_ms, lost: result.lost });
  if (result.latency_ms.p95 > 250 || result.lost > 0) break;
  capacity = sockets;
}
raw.capacity = ramp;
row('capacity ≥ 5,000 subscribers at 10 msg/s, p95 ≤ 250 ms', `${capacity.toLocaleString('en')} subscribers`, 'ramp 1,000 → 10,000 sockets until p95 > 250 ms or a loss', capacity >= 5000);

const exp = await runExportBench(10_000);
raw.export = exp;
row('export 10,000 messages as Markdown ≤ 1 s', `${(exp.markdownMs / 1000).toFixed(2)} s`, 'writeMarkdownExport to a file', exp.markdownMs <= 1000);
row('export 10,000 messages as PDF ≤ 15 s', `${(exp.pdfMs / 1000).toFixed(2)} s`, 'writePdfExport to a file', exp.pdfMs <= 15_000);
row(
  'export streams: memory far below a second copy of the room (informational)',
  `+${exp.rssGrowthMb} MB RSS while exporting; room as JSON ${exp.roomJsonMb} MB`,
  'peak RSS during both exports minus RSS before (includes the PDF font, ~50 MB)',
  null,
);

const machine = `${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}, load ${os
  .loadavg()
  .map((n) => n.toFixed(2))
  .join('/')}`;
await writeFile(new URL('./results.json', import.meta.url), JSON.stringify({ machine, quick, rows, raw }, null, 2));
console.log(`Machine: ${machine}${quick ? ' (BENCH_QUICK)' : ''}\n`);
console.log('| goal | measured | method | met |\n|---|---|---|---|');
for (const r of rows) console.log(`| ${r.goal} | ${r.measured} | ${r.method} | ${r.pass === null ? '—' : r.pass ? 'yes' : 'no'} |`);
