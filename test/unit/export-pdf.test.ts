// PDF export (SPEC §9), checked with poppler: pdftotext for the extractable text, pdftoppm for
// what page 1 looks like. Without poppler-utils these tests fail (they never skip): install it
// with `apt-get install -y poppler-utils`.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import PDFDocument from 'pdfkit';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import type { ExportInput } from '../../src/export/format.js';
import { bundledFonts } from '../../src/export/pdf-canvas.js';
import { writePdfExport } from '../../src/export/pdf.js';
import { makeMessage, makeRoom, MemorySink, sampleInput as input } from './export-fixtures.js';

const ARTIFACTS = join(process.cwd(), 'test-artifacts');
const work = mkdtempSync(join(tmpdir(), 'export-pdf-'));

function run(tool: string, args: string[]): string {
  try {
    return execFileSync(tool, args, { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
      throw new Error(`${tool} is not installed: these tests need poppler-utils (apt-get install -y poppler-utils)`);
    }
    throw err;
  }
}

/** What an export writes, read in 16 KiB steps; `slow` takes 2 ms per write. */
const sinkFor = (slow = false) => new MemorySink(slow ? 2 : 0, 16 * 1024);

async function pdf(name: string, over: Partial<ExportInput> = {}, opts?: Parameters<typeof writePdfExport>[2]): Promise<{ file: string; bytes: Buffer }> {
  const sink = sinkFor();
  await writePdfExport(input(over), sink, opts);
  const file = join(work, `${name}.pdf`);
  writeFileSync(file, sink.bytes);
  return { file, bytes: sink.bytes };
}

/** Share of pixels darker than near-white in a PGM (P5) rendering. */
function inkRatio(pgm: Buffer): number {
  const header = /^P5\s+(\d+)\s+(\d+)\s+(\d+)\s/.exec(pgm.subarray(0, 64).toString('latin1'));
  if (!header) throw new Error('not a PGM file');
  const pixels = pgm.subarray(header[0].length);
  let ink = 0;
  for (const p of pixels) if (p < 200) ink++;
  return ink / pixels.length;
}

describe('pdf export', () => {
  let sample: { file: string; bytes: Buffer };
  let text: string;

  beforeAll(async () => {
    sample = await pdf('sample');
    text = run('pdftotext', ['-enc', 'UTF-8', sample.file, '-']);
  });

  it('is a PDF', () => {
    expect(sample.bytes.subarray(0, 5).toString('latin1')).toBe('%PDF-');
    expect(sample.bytes.subarray(-6).toString('latin1')).toContain('%%EOF');
  });

  it('embeds a font that renders Chinese, and its text can be extracted', () => {
    expect(text).toContain('你好，世界！请评审这个设计。');
    expect(text).toContain('第二行 second line');
    const fonts = run('pdffonts', [sample.file]);
    expect(fonts).toMatch(/NotoSansHans-Regular\s+CID Type 0C\s+Identity-H\s+yes yes yes/);
  });

  it('has the room header, the room name on every page, and page numbers', () => {
    expect(text).toContain('Design Review');
    expect(text).toContain('架构评审');
    expect(text).toContain('本周五前完成评审');
    expect(text).toContain('2026-01-02 11:04:05');
    expect(text).toContain('Asia/Shanghai');
    const pages = text.split('\f').filter((p) => p.trim());
    expect(pages.length).toBeGreaterThanOrEqual(2);
    pages.forEach((page, i) => {
      expect(page).toContain('Design Review');
      expect(page).toContain(`第 ${i + 1} / ${pages.length} 页`);
    });
  });

  it('shows sender, role and time per message, rounds, replies, attachments; no skip records', () => {
    expect(text).toContain('bob');
    expect(text).toContain('智能体');
    expect(text).not.toContain('AI 代理');
    expect(text).toContain('2026-01-01 08:00:00');
    expect(text).toContain('2026-01-01 08:00:02');
    expect(text).toMatch(/第\s*1\s*轮/);
    expect(text).toMatch(/第\s*2\s*轮/);
    expect(text).toContain('回复 #1 bob');
    expect(text).toContain('report v2.pdf');
    expect(text).toContain('（已撤回）');
    expect(text).not.toContain('SKIPPED-RECORD');
    expect(text).not.toContain('TIMEOUT-RECORD');
    const links = sample.bytes.toString('latin1');
    expect(links).toContain('https://chat.example.com/api/v1/rooms/r/files/20260101000000_report%20v2.pdf?sig=s1');
    expect(links).toContain('https://example.com/doc');
  });

  it('renders the Markdown: heading, emphasis, lists, quote, code block content', () => {
    expect(text).toMatch(/This is bold, italic, struck and inline code with a link\./);
    const shown = ['结论', '第一点 first point', 'nested two', '[x]', '引用：quoted text', 'const greeting = "hello";', 'console.log(greeting); // 打印问候', 'After the rule.'];
    for (const part of shown) expect(text).toContain(part);
    expect(text).not.toMatch(/\*\*bold\*\*|```/);
  });

  it('wraps a 500-character word inside the page instead of letting it overflow', () => {
    // The word may run over a page break (running header and footer in between): all of it
    // is there, in lines no wider than the text column.
    expect(text.match(/W/g)?.length).toBe(500);
    expect(text).toContain('Long word: WWWWWWWWWW');
    const bbox = run('pdftotext', ['-bbox', sample.file, '-']);
    const words = [...bbox.matchAll(/<word xMin="([\d.]+)" yMin="[\d.]+" xMax="([\d.]+)" yMax="[\d.]+">(W{10,})(?:\s*end\.)?<\/word>/g)];
    expect(words.length).toBeGreaterThan(3);
    for (const w of words) expect(Number(w[2])).toBeLessThanOrEqual(595.28 - 56 + 1);
  });

  it('renders page 1 as a document, not a blank page', () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    const prefix = join(ARTIFACTS, 'export-page1');
    run('pdftoppm', ['-png', '-r', '50', '-f', '1', '-l', '1', '-singlefile', sample.file, prefix]);
    const png = statSync(`${prefix}.png`).size;

    const blank = join(work, 'blank.pdf');
    const doc = new PDFDocument({ size: 'A4' });
    const chunks: Buffer[] = [];
    doc.on('data', (c: Buffer) => chunks.push(c));
    const done = new Promise<void>((resolve) => doc.on('end', () => resolve()));
    doc.end();
    return done.then(() => {
      writeFileSync(blank, Buffer.concat(chunks));
      run('pdftoppm', ['-png', '-r', '50', '-f', '1', '-l', '1', '-singlefile', blank, join(work, 'blank')]);
      const blankPng = statSync(join(work, 'blank.png')).size;
      expect(png).toBeGreaterThan(blankPng * 5);
      run('pdftoppm', ['-gray', '-r', '50', '-f', '1', '-l', '1', '-singlefile', sample.file, join(work, 'page1')]);
      const ratio = inkRatio(readFileSync(join(work, 'page1.pgm')));
      expect(ratio).toBeGreaterThan(0.01);
      expect(ratio).toBeLessThan(0.5);
    });
  });

  it('uses English labels for other languages', async () => {
    const en = await pdf('english', { room: makeRoom({ language: 'en-US' }) });
    const t = run('pdftotext', ['-enc', 'UTF-8', en.file, '-']);
    expect(t).toContain('Chat history export');
    // SPEC §9's page numbers in the room's language (v3 §6: page labels follow it).
    expect(t).toMatch(/Page\s+1\s+of\s+\d+/);
    expect(t).not.toMatch(/第\s*1/);
    expect(t).toContain('Round 1');
    expect(t).toContain('AI agent');
    expect(t).toContain('Reply to #1 bob');
  });

  it('takes another font from a path (EXPORT_FONT) and refuses one that does not exist', async () => {
    const custom = await pdf('custom-font', {}, { fontPath: bundledFonts().bold });
    const fonts = run('pdffonts', [custom.file]);
    expect(fonts).toContain('NotoSansHans-Bold');
    expect(fonts).not.toContain('NotoSansHans-Regular');
    const out = sinkFor();
    await expect(writePdfExport(input(), out, { fontPath: join(work, 'missing.ttf') })).rejects.toThrow(/font/);
    expect(out.chunks.length).toBe(0);
  });

  it('takes EXPORT_FONT from the environment through the config', async () => {
    const font = bundledFonts().bold;
    const config = loadConfig({ EXPORT_FONT: ` ${font} ` });
    expect(config.exportFont).toBe(font);
    expect(loadConfig({}).exportFont).toBeNull();
    expect(loadConfig({ EXPORT_FONT: '  ' }).exportFont).toBeNull();
    const custom = await pdf('env-font', {}, { fontPath: config.exportFont! });
    expect(run('pdffonts', [custom.file])).toContain('NotoSansHans-Bold');
  });

  it('lets other work run while a large room is exported: no stall is more than a small part of it', async () => {
    const msgs = Array.from({ length: 1500 }, (_, i) =>
      makeMessage({ seq: i + 1, text_content: `**第 ${i + 1} 条** ${'文本 text '.repeat(30)}\n\n- 列表 item\n- \`code\`` }),
    );
    const started = performance.now();
    let lastTick = started;
    let longestStallMs = 0;
    const tick = (): void => {
      const now = performance.now();
      longestStallMs = Math.max(longestStallMs, now - lastTick);
      lastTick = now;
    };
    const ticker = setInterval(tick, 5);
    try {
      await writePdfExport(input({ messages: msgs }), sinkFor());
    } finally {
      clearInterval(ticker);
    }
    tick(); // the gap up to the end counts too
    const elapsedMs = performance.now() - started;
    // Without slicing the whole export is one stall (the sink never makes it wait). Loading the
    // font before the first page is one stall that slicing cannot split.
    expect(longestStallMs).toBeLessThan(elapsedMs / 3);
  });

  it('streams: a slow reader gets the whole document, an early close rejects', async () => {
    const msgs = Array.from({ length: 400 }, (_, i) =>
      makeMessage({ seq: i + 1, text_content: `第 ${i + 1} 条：${'长文本 long text '.repeat(20)}\n\n\`\`\`\ncode ${i}\n\`\`\`` }),
    );
    const slow = sinkFor(true);
    await writePdfExport(input({ messages: msgs }), slow);
    const file = join(work, 'slow.pdf');
    writeFileSync(file, slow.bytes);
    const info = run('pdfinfo', [file]);
    expect(Number(/Pages:\s+(\d+)/.exec(info)?.[1])).toBeGreaterThan(20);
    expect(run('pdftotext', [file, '-'])).toContain('code 399');

    const out = new PassThrough({ highWaterMark: 1024 });
    const exporting = expect(writePdfExport(input({ messages: msgs }), out)).rejects.toThrow();
    // Closed while the export waits on back-pressure (nobody reads `out`), not after a timer.
    await expect.poll(() => out.writableNeedDrain, { timeout: 30_000 }).toBe(true);
    out.destroy();
    await exporting;
  });

  it('copes with unusual content: emoji and scripts the font lacks stay extractable, nothing overflows', async () => {
    const texts = [
      'Emoji 😀🚀 and 한국어 text',
      'Control \u0001 chars\ttab\r\nCRLF line',
      '```\n' + 'x'.repeat(300) + '\n\tindented\t中文\n```',
      '- a\n  - b\n    - c\n      - d deep',
      '> level 1\n> > level 2 **bold**',
      '[js](javascript:alert(1)) <https://auto.example.com> &amp; &#x4F60;&#22909;',
      '| a | b |\n|---|---|\n| 很长的单元格内容很长的单元格内容很长的单元格内容很长的单元格内容很长的单元格 | 2 |',
      '',
      '中文没有空格的长段落'.repeat(60),
    ];
    const odd = await pdf('odd', { messages: texts.map((t, i) => makeMessage({ seq: i + 1, text_content: t })) });
    const t = run('pdftotext', ['-enc', 'UTF-8', odd.file, '-']);
    for (const part of ['😀🚀', '한국어', 'CRLF line', 'd deep', '& 你好', 'auto.example.com']) expect(t).toContain(part);
    expect(t).not.toContain('javascript:');
    expect(odd.bytes.toString('latin1')).not.toContain('javascript:');
    expect(t.replace(/\s+/g, '')).toContain('中文没有空格的长段落'.repeat(5));
    const bbox = run('pdftotext', ['-bbox', odd.file, '-']);
    for (const m of bbox.matchAll(/<word xMin="([\d.]+)" yMin="[\d.]+" xMax="([\d.]+)"/g)) {
      expect(Number(m[1])).toBeGreaterThanOrEqual(56 - 1);
      expect(Number(m[2])).toBeLessThanOrEqual(595.28 - 56 + 1);
    }
  });
});
