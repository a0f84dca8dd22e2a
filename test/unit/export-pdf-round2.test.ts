// PDF export, round two (issue 19), checked with poppler: emoji drawn (pixels, not the empty
// box of a font without them), long code lines wrapped with a mark and nothing lost, images of
// the room's own uploads embedded (PNG, JPEG, GIF first frame, WebP) and others not, the
// footer "第 N / M 页", the page's terms, round dividers only where rounds start, the header
// table. Without poppler-utils these tests fail (they never skip).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { Writable } from 'node:stream';
import PDFDocument from 'pdfkit';
import sharp from 'sharp';
import { beforeAll, describe, expect, it } from 'vitest';
import type { ExportInput } from '../../src/export/format.js';
import { bundledFonts } from '../../src/export/pdf-canvas.js';
import { breakCodeLine, layoutCode } from '../../src/export/pdf-layout.js';
import { writePdfExport } from '../../src/export/pdf.js';
import { makeMessage, makeRoom, ROOM_ID } from './export-fixtures.js';

const work = mkdtempSync(join(tmpdir(), 'export-pdf2-'));

function run(tool: string, args: string[], encoding: BufferEncoding | 'buffer' = 'utf8'): string & Buffer {
  try {
    return execFileSync(tool, args, { encoding: encoding === 'buffer' ? undefined : encoding, maxBuffer: 256 * 1024 * 1024 }) as string & Buffer;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw new Error(`${tool} is not installed: these tests need poppler-utils`);
    throw err;
  }
}

class Sink extends Writable {
  chunks: Buffer[] = [];
  override _write(chunk: Buffer, _enc: BufferEncoding, cb: (err?: Error | null) => void): void {
    this.chunks.push(chunk);
    cb();
  }
}

async function pdfOf(name: string, over: Partial<ExportInput>): Promise<string> {
  const sink = new Sink();
  await writePdfExport({ room: makeRoom(), messages: [], exportedAt: new Date('2026-01-02T03:04:05.000Z'), timezone: 'Asia/Shanghai', ...over }, sink);
  const file = join(work, `${name}.pdf`);
  writeFileSync(file, Buffer.concat(sink.chunks));
  return file;
}

/** Word boxes (points) from pdftotext -bbox. */
function words(file: string, page = 1): Array<{ text: string; x0: number; y0: number; x1: number; y1: number }> {
  const xml = run('pdftotext', ['-bbox', '-f', String(page), '-l', String(page), file, '-']);
  return [...xml.matchAll(/<word xMin="([\d.]+)" yMin="([\d.]+)" xMax="([\d.]+)" yMax="([\d.]+)">([^<]*)<\/word>/g)].map((m) => ({
    x0: Number(m[1]),
    y0: Number(m[2]),
    x1: Number(m[3]),
    y1: Number(m[4]),
    text: m[5]!,
  }));
}

/** Grey pixels of a region (points) of a page, rendered at `dpi`. */
function region(file: string, box: { x0: number; y0: number; x1: number; y1: number }, dpi = 288): { w: number; h: number; px: Uint8Array } {
  const k = dpi / 72;
  const args = ['-gray', '-r', String(dpi), '-f', '1', '-l', '1', '-x', String(Math.floor(box.x0 * k)), '-y', String(Math.floor(box.y0 * k))];
  args.push('-W', String(Math.ceil((box.x1 - box.x0) * k)), '-H', String(Math.ceil((box.y1 - box.y0) * k)), file);
  const pgm = run('pdftoppm', args, 'buffer');
  const head = /^P5\s+(\d+)\s+(\d+)\s+(\d+)\s/.exec(pgm.subarray(0, 64).toString('latin1'))!;
  return { w: Number(head[1]), h: Number(head[2]), px: pgm.subarray(head[0].length) };
}

/**
 * How much of the inked area's left edge is one straight vertical line: about 1 for a box (the
 * empty box of a font without the glyph, with or without its cross), small for a round face.
 */
function straightLeftEdge(r: { w: number; h: number; px: Uint8Array }): { ink: number; edge: number } {
  const dark = (x: number, y: number) => (r.px[y * r.w + x] ?? 255) < 128;
  let x0 = r.w;
  let y0 = r.h;
  let y1 = -1;
  let ink = 0;
  for (let y = 0; y < r.h; y++) {
    for (let x = 0; x < r.w; x++) {
      if (!dark(x, y)) continue;
      ink++;
      x0 = Math.min(x0, x);
      y0 = Math.min(y0, y);
      y1 = Math.max(y1, y);
    }
  }
  if (y1 < 0) return { ink: 0, edge: 0 };
  let rows = 0;
  for (let y = y0; y <= y1; y++) if (dark(x0, y) || dark(x0 + 1, y)) rows++;
  return { ink: ink / (r.w * r.h), edge: rows / (y1 - y0 + 1) };
}

describe('pdf export, round two', () => {
  let main: string;
  let text: string;
  const code = `const result = compute(${Array.from({ length: 40 }, (_, i) => `arg_${i}`).join(', ')}) + "中文" // tail`;

  beforeAll(async () => {
    expect(code.length).toBeGreaterThanOrEqual(300);
    const messages = [
      makeMessage({ seq: 1, round_id: 'round-a', text_content: '表情 😀 结束' }),
      makeMessage({ seq: 2, sender: 'bob', role: 'user', text_content: '一个人在轮次中间说话' }),
      makeMessage({ seq: 3, round_id: 'round-a', sender: 'carol', text_content: '```ts\n' + code + '\n```' }),
      makeMessage({ seq: 4, sender: 'bob', role: 'user', text_content: '轮次之后' }),
      makeMessage({ seq: 5, round_id: 'round-b', text_content: 'families 👨‍👩‍👧 👍🏽 ❤️ 🚀' }),
      makeMessage({ seq: 6, round_id: 'round-b', text_content: '```\ncode 👋🏻 tone\n```' }),
    ];
    main = await pdfOf('main', { messages });
    text = run('pdftotext', ['-enc', 'UTF-8', main, '-']);
  });

  it('draws emoji with the emoji font: the code points extract and the glyph is not the empty box', async () => {
    expect(text).toContain('😀');
    expect(text).toContain('🚀');
    // Sequences extract whole: a ZWJ family, a skin tone the font has no glyph for (drawn as the
    // base and the tone's swatch), a variation selector.
    expect(text).toContain('families 👨‍👩‍👧 👍🏽 ❤️ 🚀');
    expect(text).toContain('code 👋🏻 tone');
    expect(run('pdffonts', [main])).toMatch(/NotoEmoji-Regular\s+CID TrueType\s+Identity-H\s+yes yes yes/);

    // The reference: the same line drawn with the text font only, where 😀 is the font's empty box.
    const tofuFile = join(work, 'tofu.pdf');
    const doc = new PDFDocument({ size: 'A4' });
    const out = new Sink();
    doc.pipe(out);
    const done = new Promise((resolve) => out.on('finish', resolve));
    doc.registerFont('body', bundledFonts().regular);
    doc.font('body').fontSize(10).text('表情 😀 结束', 56, 200, { lineBreak: false });
    doc.end();
    await done;
    writeFileSync(tofuFile, Buffer.concat(out.chunks));

    // The glyph between the two words (the empty box has no text to find it by).
    const between = (file: string) => {
      const all = words(file);
      const a = all.find((w) => w.text === '表情')!;
      const b = all.find((w) => w.text === '结束')!;
      const space = 2.3; // a space of the 10 pt text face
      return { x0: a.x1 + space, x1: b.x0 - space, y0: a.y0, y1: a.y1 };
    };
    const ours = region(main, between(main));
    const tofu = region(tofuFile, between(tofuFile));
    // The reference is the empty box: a straight left edge. Ours is drawn (ink) and round.
    expect(straightLeftEdge(tofu).edge).toBeGreaterThan(0.8);
    const drawn = straightLeftEdge(ours);
    expect(drawn.ink).toBeGreaterThan(0.03);
    expect(drawn.edge).toBeLessThan(0.5);
  });

  it('wraps a 300-character code line at the box edge with a mark, losing no character', () => {
    const start = text.indexOf('const result');
    const end = text.indexOf('// tail') + '// tail'.length;
    expect(start).toBeGreaterThan(0);
    const extracted = text.slice(start, end);
    expect(extracted.split('\n').length).toBeGreaterThanOrEqual(4); // wrapped
    expect(extracted.replace(/\n/g, '')).toBe(code);
    // The marks are drawn, not written: nothing but the code in the text.
    expect(extracted).not.toMatch(/[↩↵⏎]/);
  });

  it('breaks code lines so that no piece starts or ends with a space', () => {
    const measure = (t: string): number => t.length * 5;
    const lines = layoutCode('aa bb cc dd ee ff gg hh', { font: 'mono', size: 10, color: '#000' }, 30, measure);
    expect(lines.length).toBeGreaterThan(1);
    expect(lines.slice(0, -1).every((l) => l.continued)).toBe(true);
    expect(lines[lines.length - 1]!.continued).toBeFalsy();
    const pieces = lines.map((l) => l.fragments.map((f) => f.text).join(''));
    expect(pieces.join('')).toBe('aa bb cc dd ee ff gg hh');
    for (const p of pieces) expect(p).toBe(p.trim());
    // A run of spaces longer than the search window still breaks (nothing is lost).
    const chars = Array.from(`a${' '.repeat(40)}b`);
    expect(breakCodeLine(chars, chars.map(() => 5), 0, 50)).toBe(10);
  });

  it('numbers pages "第 N / M 页" with the total on every page', async () => {
    const many = Array.from({ length: 120 }, (_, i) => makeMessage({ seq: i + 1, text_content: `第 ${i + 1} 条 ${'内容 '.repeat(30)}` }));
    const file = await pdfOf('pages', { messages: many });
    const pages = run('pdftotext', ['-enc', 'UTF-8', file, '-']).split('\f').filter((p) => p.trim());
    const total = Number(/Pages:\s+(\d+)/.exec(run('pdfinfo', [file]))?.[1]);
    expect(total).toBeGreaterThan(3);
    expect(pages).toHaveLength(total);
    pages.forEach((page, i) => expect(page).toContain(`第 ${i + 1} / ${total} 页`));
    expect(text).toMatch(/第 1 \/ 1 页/);
  });

  it("uses the page's terms and a header table: room, mode, exported at, members with roles", () => {
    expect(text).toContain('智能体');
    expect(text).not.toContain('AI 代理');
    for (const label of ['房间', '模式', '轮流模式', '导出时间', '2026-01-02 11:04:05', '成员 (3)', 'alice（智能体，主持人）', 'bob（用户，创建者）']) {
      expect(text).toContain(label);
    }
  });

  it('draws a divider only where a round starts', () => {
    expect(text).not.toContain('轮次之外');
    expect([...text.matchAll(/第 (\d+) 轮/g)].map((m) => Number(m[1]))).toEqual([1, 2]);
    expect(text.indexOf('第 2 轮')).toBeGreaterThan(text.indexOf('轮次之后'));
  });

  it("embeds the room's own image uploads (PNG, JPEG, GIF first frame, WebP) with their links, and no other room's", async () => {
    const dir = mkdtempSync(join(work, 'uploads-'));
    const solid = (hex: string) => sharp({ create: { width: 400, height: 240, channels: 3, background: hex } });
    const files: Record<string, string> = {
      png: join(dir, '1700000000001_a.png'),
      jpeg: join(dir, '1700000000002_b.jpg'),
      gif: join(dir, '1700000000003_c.gif'),
      webp: join(dir, '1700000000004_d.webp'),
      foreign: join(dir, '1700000000005_e.png'),
    };
    await solid('#ff0000').png().toFile(files.png!);
    await solid('#00c000').jpeg().toFile(files.jpeg!);
    const first = await solid('#0000ff').png().toBuffer();
    const second = await solid('#ffff00').png().toBuffer();
    await sharp([first, second], { join: { animated: true } }).gif().toFile(files.gif!);
    await solid('#ff00ff').webp().toFile(files.webp!);
    await solid('#00ffff').png().toFile(files.foreign!);
    const own = (name: string) => `/api/v1/files/${ROOM_ID}/${name}`;
    const messages = [
      makeMessage({ seq: 1, text_content: 'png', file_url: own('1700000000001_a.png'), file_type: 'image/png' }),
      makeMessage({ seq: 2, text_content: 'jpeg', file_url: own('1700000000002_b.jpg'), file_type: 'image/jpeg' }),
      makeMessage({ seq: 3, text_content: 'gif', file_url: own('1700000000003_c.gif'), file_type: 'image/gif' }),
      makeMessage({ seq: 4, text_content: 'webp', file_url: own('1700000000004_d.webp'), file_type: 'image/webp' }),
      makeMessage({ seq: 5, text_content: 'foreign', file_url: '/api/v1/files/other-room-20260101000000-abcdefgh/1700000000005_e.png', file_type: 'image/png' }),
    ];
    const byUrl = new Map(Object.values(files).map((f) => [own(f.slice(dir.length + 1)), f]));
    const file = await pdfOf('images', {
      messages,
      fileUrl: (u) => (u.startsWith(`/api/v1/files/${ROOM_ID}/`) ? `https://chat.example.com${u}?sig=ok` : u),
      ownUpload: (u) => byUrl.get(u) ?? null,
    });
    const list = run('pdfimages', ['-list', file]).trim().split('\n').slice(2);
    expect(list).toHaveLength(4);
    for (const row of list) {
      const [, , , width, height] = row.trim().split(/\s+/);
      expect(Number(width)).toBe(400);
      expect(Number(height)).toBe(240);
    }
    // The pixels on the rendered pages: each colour, the GIF's first frame only, not the foreign one.
    const colours = { red: 0, green: 0, blue: 0, yellow: 0, magenta: 0, cyan: 0 };
    const prefix = join(work, 'images-page');
    run('pdftoppm', ['-r', '36', '-png', file, prefix]);
    const pngs = run('ls', [work]).split('\n').filter((n) => n.startsWith('images-page'));
    for (const png of pngs) {
      const { data, info } = await sharp(join(work, png)).raw().toBuffer({ resolveWithObject: true });
      for (let i = 0; i < data.length; i += info.channels) {
        const [r, g, b] = [data[i]!, data[i + 1]!, data[i + 2]!];
        const hi = (v: number) => v > 200;
        const lo = (v: number) => v < 60;
        if (hi(r) && lo(g) && lo(b)) colours.red++;
        else if (lo(r) && g > 150 && lo(b)) colours.green++;
        else if (lo(r) && lo(g) && hi(b)) colours.blue++;
        else if (hi(r) && hi(g) && lo(b)) colours.yellow++;
        else if (hi(r) && lo(g) && hi(b)) colours.magenta++;
        else if (lo(r) && hi(g) && hi(b)) colours.cyan++;
      }
    }
    expect(colours.red).toBeGreaterThan(500);
    expect(colours.green).toBeGreaterThan(500);
    expect(colours.blue).toBeGreaterThan(500);
    expect(colours.magenta).toBeGreaterThan(500);
    expect(colours.yellow).toBe(0);
    expect(colours.cyan).toBe(0);
    // Links kept: the signed link for its own image, the other room's path as written (no link).
    const raw = readFileSync(file).toString('latin1');
    expect(raw).toContain(`https://chat.example.com/api/v1/files/${ROOM_ID}/1700000000001_a.png?sig=ok`);
    expect(raw).not.toContain('1700000000005_e.png?sig');
    expect(run('pdftotext', [file, '-'])).toContain('e.png');
  });
});
