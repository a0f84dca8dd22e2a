// PDF export (SPEC §9) with pdfkit: a font that renders Chinese (bundled Noto Sans Hans, or
// EXPORT_FONT) with Noto Emoji for emoji, a header table about the room, then every visible
// message in `seq` order with its Markdown rendered, a divider where each round starts, images
// of the room's own uploads embedded (one in memory at a time), and pages numbered
// "第 N / M 页" ("Page N of M" in an English room). Pages are written out as soon as they are full and never buffered: M is drawn
// from one form object written at the end.
import PDFDocument from 'pdfkit';
import type { Message } from '../types.js';
import { cleanText, ExportWords, type ExportInput } from './format.js';
import { loadRaster, type RasterImage } from './images.js';
import { Canvas, COLORS, fontSources, loadFaces, MARGINS, registerFonts, resolveFonts, type FontOptions } from './pdf-canvas.js';
import { embedFontsOffThread } from './pdf-fonts.js';
import type { Run, Style } from './pdf-layout.js';
import { renderMarkdown, renderPlain, type BlockContext } from './pdf-markdown.js';
import { coalesce, waitFor } from './stream.js';
import { exportItems, type ReplyRef } from './walk.js';

export type { ExportInput } from './format.js';
export type PdfExportOptions = FontOptions;

/** Bytes pdfkit may hold for a slow reader before the export waits for it. */
const HIGH_WATER = 1 << 20;

/**
 * Writes the PDF to `out` (piped, so `out` is ended) and resolves once `out` has finished.
 * Rejects before writing anything when the font cannot be used; rejects when `out` errors or
 * closes early (the caller discards what was written).
 */
export async function writePdfExport(input: ExportInput, out: NodeJS.WritableStream, opts: PdfExportOptions = {}): Promise<void> {
  const words = new ExportWords(input);
  const { labels } = words;
  const fonts = resolveFonts(opts);
  const loaded = await loadFaces(fonts);
  const doc = new PDFDocument({
    size: 'A4',
    margins: MARGINS,
    autoFirstPage: false,
    bufferPages: false,
    lang: input.room.language || undefined,
    displayTitle: true,
    info: {
      Title: `${input.room.room_name} — ${labels.title}`,
      Creator: 'Agent Chatroom',
      Producer: 'Agent Chatroom (pdfkit)',
      CreationDate: input.exportedAt,
    },
  });
  const faces = registerFonts(doc, fonts, loaded);
  const canvas = new Canvas(doc, faces, {
    roomName: input.room.room_name,
    headerRight: `${labels.title} · ${words.exportedAt()}`,
    pageLabel: labels.page,
  });

  const finished = waitFor(out, ['finish']);
  finished.catch(() => undefined); // observed below; avoid an unhandled rejection meanwhile
  const joiner = coalesce();
  doc.pipe(joiner).pipe(out);
  try {
    canvas.newPage();
    drawRoomHeader(canvas, words);
    let first = true;
    for await (const item of exportItems(input.messages, { findEarlier: input.findEarlier })) {
      if (item.kind === 'message') {
        const image = await imageOf(item.message, words);
        drawMessage(canvas, item.message, item.reply, words, first, image);
        first = false;
      } else {
        drawRoundSeparator(canvas, words.round(item.number, item.timestamp));
        first = true;
      }
      await relieve(doc, out);
    }
    canvas.finishPageCount();
    await embedFontsOffThread(doc, fontSources(fonts));
    doc.end();
    await finished;
  } catch (err) {
    doc.unpipe(joiner);
    joiner.unpipe(out as NodeJS.WritableStream);
    throw err;
  }
}

/** Waits while the reader is behind, so the document is never held in memory whole. */
async function relieve(doc: PDFKit.PDFDocument, out: NodeJS.WritableStream): Promise<void> {
  const w = out as unknown as { writableNeedDrain?: boolean; destroyed?: boolean };
  for (;;) {
    if (w.destroyed) throw new Error('export stream closed before the export was written');
    if (doc.readableLength <= HIGH_WATER) return;
    if (w.writableNeedDrain) await waitFor(out, ['drain']);
    else await new Promise<void>((resolve) => setImmediate(resolve));
  }
}

function ctxAt(canvas: Canvas, imageLabel: string, x = canvas.left, width = canvas.width): BlockContext {
  return { x, width, color: COLORS.text, bars: [], nesting: 0, imageLabel };
}

/** Draws styled parts on one line at canvas.y; returns the width used. */
function inline(canvas: Canvas, parts: Run[], x: number, lineHeight: number, baseSize: number): number {
  let cx = x;
  for (const p of parts) cx += canvas.text(p.text, cx, canvas.y, p.style, lineHeight, baseSize);
  return cx - x;
}

const LABEL_W = 72;

/**
 * The header: the room name as the title, then a short table (room, mode, exported at,
 * members with their roles, description and announcement) between rules.
 */
function drawRoomHeader(canvas: Canvas, words: ExportWords): void {
  const { labels, room, timezone } = words;
  const muted = (size = 9): Style => ({ font: 'body', size, color: COLORS.muted });
  const title = canvas.layout([{ text: room.room_name, style: { font: 'bold', size: 20, color: COLORS.text } }], canvas.width);
  canvas.lines(title, canvas.left, 28, 20);
  canvas.lines(canvas.layout([{ text: labels.title, style: muted(10) }], canvas.width), canvas.left, 16, 10);
  canvas.gap(8);
  canvas.rule(canvas.left, canvas.width, COLORS.rule, 0.75);

  const row = (label: string, runs: Run[]): void => {
    canvas.gap(4);
    const lines = canvas.layout(runs, canvas.width - LABEL_W - 8);
    const markers = [{ text: label, x: canvas.left + 4, style: { font: 'bold', size: 9, color: COLORS.muted } as Style }];
    canvas.lines(lines.length ? lines : [{ fragments: [], width: 0 }], canvas.left + LABEL_W, 14.5, 9.5, { markers });
    canvas.gap(3);
    canvas.rule(canvas.left, canvas.width, COLORS.hairline, 0.5);
  };
  const plain = (text: string, style: Style = { font: 'body', size: 9.5, color: COLORS.text }): Run[] => [{ text, style }];

  row(labels.room, [
    { text: room.room_name, style: { font: 'bold', size: 9.5, color: COLORS.text } },
    { text: `  ${room.room_id}`, style: { font: 'mono', size: 8, color: COLORS.faint } },
  ]);
  row(labels.mode, plain(words.mode()));
  row(labels.exportedAt, [...plain(words.exportedAt()), { text: `  ${timezone}`, style: muted(8.5) }]);
  const members: Run[] = [];
  room.members.forEach((m, i) => {
    members.push({ text: m.name, style: { font: 'bold', size: 9.5, color: roleColor(m.role) } });
    members.push({ text: words.paren(words.remarks(m)), style: muted(9) });
    if (i < room.members.length - 1) members.push({ text: '\n', style: muted(9) });
  });
  row(`${labels.members} (${room.members.length})`, members.length ? members : plain(labels.none));
  const description = cleanText(room.room_description.trim());
  if (description) row(labels.description, plain(description));
  const ann = words.announcement();
  if (ann) row(labels.announcement, ann.by ? [...plain(ann.text), { text: ann.by, style: muted(9) }] : plain(ann.text));
  const system = words.systemAnnouncement();
  if (system) row(labels.systemAnnouncement, plain(system));
  canvas.gap(18);
}

function roleColor(role: string): string {
  return role === 'ai_agent' ? COLORS.agent : role === 'user' ? COLORS.user : COLORS.system;
}

function drawRoundSeparator(canvas: Canvas, label: string): void {
  canvas.ensure(32 + KEEP_WITH_HEAD);
  canvas.gap(4);
  const style: Style = { font: 'bold', size: 8.5, color: COLORS.muted };
  const w = canvas.measure(label, style.font, style.size);
  const mid = canvas.left + canvas.width / 2;
  const lineY = canvas.y + 8;
  const { doc } = canvas;
  doc.save().lineWidth(0.6).strokeColor(COLORS.rule);
  doc.moveTo(canvas.left, lineY).lineTo(mid - w / 2 - 10, lineY).stroke();
  doc.moveTo(mid + w / 2 + 10, lineY).lineTo(canvas.left + canvas.width, lineY).stroke();
  doc.restore();
  canvas.text(label, mid - w / 2, canvas.y, style, 16, 8.5);
  canvas.y += 16;
  canvas.gap(12);
}

const HEAD_LH = 18;
/** The head of a message and the first line of its body (a heading or code line at most). */
const KEEP_WITH_HEAD = HEAD_LH + 1 + 22;

/** Display height of embedded images at most, in points. */
const IMAGE_MAX_HEIGHT = 300;
/** Pixels loaded per point of the largest display size: 1.5 is about 108 dpi, sharp on paper and screen. */
const IMAGE_DENSITY = 1.5;
/** An image's pixel shown at most this big (96 dpi), so small images are not blown up. */
const IMAGE_MAX_SCALE = 0.75;

/** The image attached to a message, when it is an image upload of this room itself. */
async function imageOf(m: Message, words: ExportWords): Promise<RasterImage | null> {
  const file = words.ownUpload(m);
  if (!file) return null;
  const width = 595.28 - 2 * 56;
  return loadRaster(file, width * IMAGE_DENSITY, IMAGE_MAX_HEIGHT * IMAGE_DENSITY);
}

function drawImage(canvas: Canvas, image: RasterImage, link: string | undefined): void {
  const scale = Math.min(IMAGE_MAX_SCALE, canvas.width / image.width, IMAGE_MAX_HEIGHT / image.height);
  const w = image.width * scale;
  const h = image.height * scale;
  canvas.ensure(h + 4);
  canvas.gap(3);
  canvas.image(image.data, canvas.left, canvas.y, w, h, link);
  canvas.y += h;
  canvas.gap(4);
}

function drawMessage(
  canvas: Canvas,
  m: Message,
  reply: ReplyRef | 'unknown' | null,
  words: ExportWords,
  first: boolean,
  image: RasterImage | null = null,
): void {
  if (!first) {
    canvas.ensure(12 + KEEP_WITH_HEAD);
    if (canvas.y > canvas.top) {
      canvas.gap(5);
      canvas.rule(canvas.left, canvas.width, COLORS.hairline, 0.5);
      canvas.gap(7);
    }
  }
  const { labels } = words;
  canvas.ensure(KEEP_WITH_HEAD);
  drawMessageHead(canvas, m, words);
  const ctx = ctxAt(canvas, labels.image);
  if (reply) {
    renderPlain(canvas, words.reply(reply), { ...ctx, bars: [canvas.left + 1], x: canvas.left + 10, width: canvas.width - 10 }, { size: 8.5, color: COLORS.muted });
    canvas.gap(3);
  }
  if (m.deleted) {
    renderPlain(canvas, labels.deleted, ctx, { color: COLORS.muted, oblique: true });
  } else {
    const text = words.text(m);
    if (text) renderMarkdown(canvas, text, ctx);
    const att = words.attachment(m);
    if (att) {
      if (text) canvas.gap(4);
      const link = /^(https?:|mailto:)/i.test(att.url) ? att.url : undefined;
      if (image) drawImage(canvas, image, link);
      const runs: Run[] = [
        { text: `${labels.attachment}${labels.colon}`, style: { font: 'body', size: 9, color: COLORS.muted } },
        { text: att.name, style: { font: 'body', size: 9, color: COLORS.link, underline: true, link } },
      ];
      if (att.type) runs.push({ text: `  ${att.type}`, style: { font: 'body', size: 8, color: COLORS.faint } });
      canvas.lines(canvas.layout(runs, canvas.width), canvas.left, 14, 9);
    }
  }
  canvas.gap(4);
}

function drawMessageHead(canvas: Canvas, m: Message, words: ExportWords): void {
  const x = canvas.left;
  const nameW = inline(canvas, [{ text: m.sender, style: { font: 'bold', size: 10.5, color: roleColor(m.role) } }], x, HEAD_LH, 10.5);
  // role chip
  const role = words.role(m.role);
  const chipStyle: Style = { font: 'body', size: 7.5, color: COLORS.muted };
  const chipW = canvas.measure(role, 'body', 7.5) + 8;
  const chipX = x + nameW + 6;
  canvas.rect(chipX, canvas.y + 3.5, chipW, 11, COLORS.chipBg, 3);
  canvas.text(role, chipX + 4, canvas.y, chipStyle, HEAD_LH, 7.5);
  const meta: Run[] = [{ text: words.time(m.timestamp), style: { font: 'body', size: 8.5, color: COLORS.muted } }];
  if (m.edited_at && !m.deleted) meta.push({ text: ` ${words.labels.edited}`, style: { font: 'body', size: 8.5, color: COLORS.faint } });
  inline(canvas, meta, chipX + chipW + 8, HEAD_LH, 8.5);
  const seq = `#${m.seq}`;
  const seqW = canvas.measure(seq, 'mono', 8);
  canvas.text(seq, x + canvas.width - seqW, canvas.y, { font: 'mono', size: 8, color: COLORS.faint }, HEAD_LH, 8);
  canvas.y += HEAD_LH + 1;
}

