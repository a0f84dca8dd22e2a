// Export of a 10,000-message room (mixed Chinese/English, code blocks, lists, quotes, replies,
// rounds, skip records, attachments) to Markdown and PDF under os.tmpdir().
// Targets: Markdown ≤ 1 s, PDF ≤ 15 s, streamed (memory does not grow with the output).
//   npx tsx bench/export.ts [messages=10000]
import { createWriteStream } from 'node:fs';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { writeMarkdownExport } from '../src/export/markdown.js';
import { writePdfExport } from '../src/export/pdf.js';
import type { ExportInput } from '../src/export/format.js';
import type { Message } from '../src/types.js';
import { makeMessage, makeRoom } from '../test/unit/export-fixtures.js';

export interface ExportBenchResult {
  messages: number;
  markdownMs: number;
  /** CPU time of the process during the Markdown export (less sensitive to machine load). */
  markdownCpuMs: number;
  markdownBytes: number;
  pdfMs: number;
  pdfCpuMs: number;
  pdfBytes: number;
  pdfPages: number | null;
  /** Peak resident set size of the process while exporting, MB. */
  peakRssMb: number;
  /** RSS before the exports started (room built), MB. */
  baseRssMb: number;
  /** Peak RSS growth over that baseline during both exports, MB. */
  rssGrowthMb: number;
  /**
   * The room's messages serialized as JSON (as the store holds them on disk), MB. "No more
   * than one copy of the room in memory" holds while rssGrowthMb stays well below this plus
   * the fixed cost of the PDF font (the messages themselves are the one copy, in the baseline).
   */
  roomJsonMb: number;
}

const TEXTS = [
  '好的，我来看一下这个问题。根据日志，超时发生在第三轮，原因是代理没有在三分钟内回复。',
  'I checked the **retry logic**: the client backs off exponentially, but the cap is `30s`, which is too long for a turn of 3 minutes.',
  [
    '## 方案对比 Options',
    '',
    '1. 保持现状 keep as is',
    '2. 缩短超时 shorten the timeout',
    '   - 风险：误判离线',
    '   - risk: false offline detection',
    '3. 增加心跳 add heartbeats',
    '',
    '> 建议选择方案 3，理由见下文。',
  ].join('\n'),
  [
    'Here is the patch:',
    '',
    '```ts',
    'export function backoff(attempt: number): number {',
    '  // 指数退避，最多 5 秒',
    '  return Math.min(5000, 100 * 2 ** attempt);',
    '}',
    '```',
    '',
    'It keeps the *same* API.',
  ].join('\n'),
  '同意。另外 @alice 请确认一下部署窗口：周五晚上 22:00 到 23:00 之间可以吗？我们需要在发布前完成回归测试，并且通知所有相关团队。',
  'Summary of the discussion so far: we agree on heartbeats, we disagree on the interval (10 s vs 15 s), and nobody has measured the overhead yet. Next step: measure it on the staging cluster with 200 agents connected.',
  '- [x] 更新文档\n- [ ] 补充测试 add tests\n- [ ] 压测 load test',
  '| 指标 | 值 |\n|---|---|\n| p50 | 12 ms |\n| p99 | 180 ms |',
];

/** The room's messages: visible ones plus a skip record every 7th seq. */
export function benchMessages(count: number): Message[] {
  const out: Message[] = [];
  const senders = [
    { sender: 'alice', role: 'ai_agent' as const },
    { sender: 'bob', role: 'user' as const },
    { sender: 'carol', role: 'ai_agent' as const },
  ];
  for (let seq = 1; seq <= count; seq++) {
    const who = senders[seq % senders.length] ?? senders[0]!;
    const skip = seq % 7 === 0;
    const m = makeMessage({
      seq,
      timestamp: new Date(Date.UTC(2026, 0, 1) + seq * 17_000).toISOString(),
      sender: who.sender,
      sender_id: `id-${who.sender}`,
      role: who.role,
      text_content: skip ? '' : `${TEXTS[seq % TEXTS.length]} (#${seq})`,
      visible: !skip,
      skip_reason: skip ? 'skip' : null,
      round_id: `round-${Math.floor(seq / 6) + 1}`,
      response_to: seq % 11 === 0 ? out[out.length - 3]?.message_id ?? null : null,
      file_url: seq % 53 === 0 ? `/api/v1/rooms/r/files/20260101000000_log-${seq}.txt` : '',
      file_type: seq % 53 === 0 ? 'text/plain' : '',
    });
    out.push(m);
  }
  return out;
}

function mb(bytes: number): number {
  return Math.round((bytes / 1024 / 1024) * 10) / 10;
}

async function timed(write: (out: NodeJS.WritableStream) => Promise<void>, file: string): Promise<{ ms: number; cpuMs: number; bytes: number }> {
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  await write(createWriteStream(file));
  const cpu = process.cpuUsage(c0);
  const ms = Math.round(performance.now() - t0);
  return { ms, cpuMs: Math.round((cpu.user + cpu.system) / 1000), bytes: (await stat(file)).size };
}

async function pdfPages(file: string): Promise<number | null> {
  try {
    const { execFileSync } = await import('node:child_process');
    const info = execFileSync('pdfinfo', [file], { encoding: 'utf8' });
    const m = /^Pages:\s+(\d+)/m.exec(info);
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  }
}

export async function runExportBench(count = 10_000): Promise<ExportBenchResult> {
  const dir = await mkdtemp(join(tmpdir(), 'export-bench-'));
  try {
    const messages = benchMessages(count);
    // Summed per message, so measuring does not itself hold a second copy of the room.
    const roomJsonBytes = messages.reduce((n, m) => n + Buffer.byteLength(JSON.stringify(m)) + 1, 0);
    const input = (): ExportInput => ({
      room: makeRoom({ room_name: 'Load Test Room' }),
      messages,
      exportedAt: new Date(),
      timezone: 'Asia/Shanghai',
      fileUrl: (u) => `https://chat.example.com${u}?sig=abc`,
    });
    const baseRss = process.memoryUsage().rss;
    let peak = baseRss;
    const sampler = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage().rss);
    }, 10);
    try {
      const mdFile = join(dir, 'room.md');
      const pdfFile = join(dir, 'room.pdf');
      const md = await timed((out) => writeMarkdownExport(input(), out), mdFile);
      const pdf = await timed((out) => writePdfExport(input(), out), pdfFile);
      peak = Math.max(peak, process.memoryUsage().rss);
      return {
        messages: count,
        markdownMs: md.ms,
        markdownCpuMs: md.cpuMs,
        markdownBytes: md.bytes,
        pdfMs: pdf.ms,
        pdfCpuMs: pdf.cpuMs,
        pdfBytes: pdf.bytes,
        pdfPages: await pdfPages(pdfFile),
        peakRssMb: mb(peak),
        baseRssMb: mb(baseRss),
        rssGrowthMb: mb(peak - baseRss),
        roomJsonMb: mb(roomJsonBytes),
      };
    } finally {
      clearInterval(sampler);
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const count = Number(process.argv[2] ?? 10_000);
  const r = await runExportBench(count);
  console.log(`messages: ${r.messages}`);
  console.log(`markdown: ${r.markdownMs} ms (cpu ${r.markdownCpuMs} ms), ${mb(r.markdownBytes)} MB (target ≤ 1000 ms)`);
  console.log(`pdf:      ${r.pdfMs} ms (cpu ${r.pdfCpuMs} ms), ${mb(r.pdfBytes)} MB, ${r.pdfPages ?? '?'} pages (target ≤ 15000 ms)`);
  console.log(`rss:      ${r.baseRssMb} MB before, ${r.peakRssMb} MB peak, +${r.rssGrowthMb} MB while exporting (room as JSON: ${r.roomJsonMb} MB)`);
}
