// Renders a message's Markdown into the PDF from marked's lexer tokens: headings, bold,
// italic (oblique), strikethrough, inline code and code blocks (Courier for ASCII, the CJK
// font for the rest), lists (nested, ordered, tasks), quotes, links, images (as links), rules, tables.
import { Lexer, type MarkedToken, type Token, type Tokens } from 'marked';
import { COLORS, type Canvas, type LineDeco, type Marker } from './pdf-canvas.js';
import { layoutCode, type Run, type Style } from './pdf-layout.js';

export const BODY_SIZE = 10;
const BODY_LH = 15;
const CODE_SIZE = 8.6;
const CODE_LH = 12.6;
const CODE_PAD = 6;
/** Room for the continuation mark of a wrapped code line. */
const CODE_MARK_W = 6;
const HEADING_SIZES = [0, 15, 13.5, 12, 11, 10.5, 10];

export interface BlockContext {
  x: number;
  width: number;
  color: string;
  /** x of the quote bars around this block. */
  bars: number[];
  /** List depth, for the bullet shape. */
  nesting: number;
  /** List markers still to be drawn on the next line of this context. */
  markers?: Marker[];
  /** "Image" in the room language. */
  imageLabel: string;
}

/** Lexes a message text (GFM; single newlines are line breaks, as in chat). */
export function lexMessage(text: string): Token[] {
  return Lexer.lex(text, { gfm: true, breaks: true });
}

export function renderMarkdown(canvas: Canvas, text: string, ctx: BlockContext): void {
  if (isPlainText(text)) {
    // What the lexer would return for text without Markdown, without running it.
    const blocks = text.split(/\n[ \t]*\n+/);
    blocks.forEach((block, i) => {
      if (i > 0) canvas.gap(4, deco(ctx));
      paragraph(canvas, [{ text: block.replace(/[ \t]*\n[ \t]*/g, '\n').trim(), style: baseStyle(ctx) }], ctx, BODY_LH);
    });
    return;
  }
  renderBlocks(canvas, lexMessage(text), ctx);
}

/**
 * True when the text cannot contain Markdown syntax: no markup characters, no line that could
 * start a block (list, heading underline, indented code), nothing GFM turns into a link.
 */
export function isPlainText(text: string): boolean {
  return !/[\\`*_~#>[\]|<&]|https?:\/\/|ftp:|mailto:|www\.|\w@[\w-]+\.\w|^[ \t]*([-+=]|\d+[.)])|^( {4}|\t)/m.test(text);
}

/** Plain text (no Markdown) wrapped into the context. */
export function renderPlain(canvas: Canvas, text: string, ctx: BlockContext, style?: Partial<Style>): void {
  paragraph(canvas, [{ text, style: { ...baseStyle(ctx), ...style } }], ctx, BODY_LH);
}

function renderBlocks(canvas: Canvas, tokens: Token[], ctx: BlockContext): void {
  let first = true;
  for (const token of tokens) {
    const t = token as MarkedToken;
    if (t.type === 'space' || t.type === 'def' || t.type === 'checkbox') continue;
    if (!first) canvas.gap(t.type === 'heading' ? 6 : 4, deco(ctx));
    first = false;
    renderBlock(canvas, t, ctx);
  }
}

function deco(ctx: BlockContext): LineDeco {
  return { bars: ctx.bars };
}

function baseStyle(ctx: BlockContext): Style {
  return { font: 'body', size: BODY_SIZE, color: ctx.color };
}

/** Markers waiting in ctx go with the first line drawn; they are taken only once. */
function takeMarkers(ctx: BlockContext): Marker[] | undefined {
  const m = ctx.markers;
  ctx.markers = undefined;
  return m;
}

function emptyLine(canvas: Canvas, ctx: BlockContext, markers: Marker[] | undefined): void {
  if (markers?.length) canvas.lines([{ fragments: [], width: 0 }], ctx.x, BODY_LH, BODY_SIZE, { bars: ctx.bars, markers });
}

function renderBlock(canvas: Canvas, t: MarkedToken, ctx: BlockContext): void {
  switch (t.type) {
    case 'paragraph':
      paragraph(canvas, inlineRuns(t.tokens, baseStyle(ctx), ctx), ctx, BODY_LH);
      return;
    case 'text':
      paragraph(canvas, t.tokens ? inlineRuns(t.tokens, baseStyle(ctx), ctx) : textRuns(t.text, baseStyle(ctx)), ctx, BODY_LH);
      return;
    case 'heading': {
      const size = HEADING_SIZES[t.depth] ?? BODY_SIZE;
      paragraph(canvas, inlineRuns(t.tokens, { font: 'bold', size, color: ctx.color }, ctx), ctx, Math.round(size * 1.45), size);
      return;
    }
    case 'code':
      codeBlock(canvas, t.text, ctx);
      return;
    case 'blockquote': {
      const inner: BlockContext = {
        ...ctx,
        x: ctx.x + 12,
        width: ctx.width - 12,
        color: COLORS.muted,
        bars: [...ctx.bars, ctx.x + 1],
        markers: takeMarkers(ctx),
      };
      renderBlocks(canvas, t.tokens, inner);
      emptyLine(canvas, inner, takeMarkers(inner));
      return;
    }
    case 'list':
      list(canvas, t, ctx);
      return;
    case 'hr':
      emptyLine(canvas, ctx, takeMarkers(ctx));
      canvas.ensure(10);
      canvas.gap(5, deco(ctx));
      canvas.rule(ctx.x, ctx.width, COLORS.rule, 0.75);
      canvas.gap(5, deco(ctx));
      return;
    case 'table':
      table(canvas, t, ctx);
      return;
    case 'html':
      paragraph(canvas, textRuns(t.text.trim(), { ...baseStyle(ctx), color: COLORS.muted }), ctx, BODY_LH);
      return;
    default: {
      const g = t as Tokens.Generic;
      if (Array.isArray(g.tokens)) renderBlocks(canvas, g.tokens, ctx);
      else if (typeof g.text === 'string') paragraph(canvas, textRuns(g.text, baseStyle(ctx)), ctx, BODY_LH);
    }
  }
}

function paragraph(canvas: Canvas, runs: Run[], ctx: BlockContext, lineHeight: number, baseSize = BODY_SIZE): void {
  const clean = trimRuns(runs);
  const markers = takeMarkers(ctx);
  if (clean.length === 0) {
    emptyLine(canvas, ctx, markers);
    return;
  }
  const lines = canvas.layout(clean, ctx.width);
  canvas.lines(lines, ctx.x, lineHeight, baseSize, { bars: ctx.bars, markers });
}

/** Drops empty runs and trailing whitespace and line breaks. */
function trimRuns(runs: Run[]): Run[] {
  const out = runs.filter((r) => r.text.length > 0);
  while (out.length > 0) {
    const last = out[out.length - 1] as Run;
    const trimmed = last.text.replace(/\s+$/, '');
    if (trimmed) {
      if (trimmed !== last.text) out[out.length - 1] = { text: trimmed, style: last.style };
      break;
    }
    out.pop();
  }
  return out;
}

function codeBlock(canvas: Canvas, code: string, ctx: BlockContext): void {
  const style: Style = { font: 'mono', size: CODE_SIZE, color: COLORS.text };
  // The right padding is wider than the left: a wrapped line's mark sits there.
  const textWidth = ctx.width - 2 * CODE_PAD - CODE_MARK_W;
  const lines = layoutCode(code.replace(/\n+$/, ''), style, textWidth, canvas.measure, canvas.coverage);
  const d: LineDeco = { bars: ctx.bars, background: { x: ctx.x, width: ctx.width, color: COLORS.codeBg } };
  const markers = takeMarkers(ctx);
  canvas.ensure(CODE_PAD + CODE_LH);
  canvas.gap(CODE_PAD, d);
  canvas.lines(lines, ctx.x + CODE_PAD, CODE_LH, CODE_SIZE, { ...d, markers, markX: ctx.x + CODE_PAD + textWidth + 3 });
  canvas.gap(CODE_PAD, d);
}

const BULLETS = ['•', '◦', '▪'];

function list(canvas: Canvas, t: Tokens.List, ctx: BlockContext): void {
  const start = typeof t.start === 'number' ? t.start : 1;
  const markerStyle: Style = { font: 'body', size: BODY_SIZE, color: COLORS.muted };
  const taskStyle: Style = { font: 'mono', size: CODE_SIZE, color: COLORS.muted };
  const numberWidth = t.ordered ? canvas.measure(`${start + t.items.length - 1}.`, 'body', BODY_SIZE) : 0;
  const indent = t.ordered ? Math.max(16, numberWidth + 6) : 14;
  const bullet = BULLETS[ctx.nesting % BULLETS.length] ?? '•';
  let outer = takeMarkers(ctx);
  t.items.forEach((item, i) => {
    if (i > 0) canvas.gap(t.loose ? 4 : 1.5, deco(ctx));
    let own: Marker;
    let shift = 0;
    if (item.task) {
      own = { text: item.checked ? '[x]' : '[ ]', x: ctx.x, style: taskStyle };
      shift = 6;
    } else if (t.ordered) {
      own = { text: `${start + i}.`, x: ctx.x, style: markerStyle };
    } else {
      own = { text: bullet, x: ctx.x + 3, style: markerStyle };
    }
    const inner: BlockContext = {
      ...ctx,
      x: ctx.x + indent + shift,
      width: ctx.width - indent - shift,
      nesting: ctx.nesting + 1,
      markers: [...(outer ?? []), own],
    };
    outer = undefined;
    renderBlocks(canvas, item.tokens, inner);
    emptyLine(canvas, inner, takeMarkers(inner));
  });
}

const CELL_PAD = 8;

/** A table as a grid: columns sized to their content (shrunk to fit), cells wrapped. */
function table(canvas: Canvas, t: Tokens.Table, ctx: BlockContext): void {
  emptyLine(canvas, ctx, takeMarkers(ctx));
  const rows: Tokens.TableCell[][] = [t.header, ...t.rows];
  const cols = Math.max(...rows.map((r) => r.length));
  const runsOf = (cell: Tokens.TableCell | undefined, header: boolean): Run[] =>
    trimRuns(inlineRuns(cell?.tokens ?? [], header ? { font: 'bold', size: BODY_SIZE, color: ctx.color } : baseStyle(ctx), ctx));
  const cells = rows.map((row, r) => Array.from({ length: cols }, (_, c) => runsOf(row[c], r === 0)));
  const natural = Array.from({ length: cols }, (_, c) =>
    Math.max(24, ...cells.map((row) => (row[c] ?? []).reduce((w, run) => w + canvas.measure(run.text, run.style.font, run.style.size), 0))) + CELL_PAD,
  );
  const total = natural.reduce((a, b) => a + b, 0);
  const widths = total <= ctx.width ? natural : natural.map((w) => Math.max(36, (w / total) * ctx.width));
  const rowDeco = deco(ctx);
  cells.forEach((row, r) => {
    const laid = row.map((runs, c) => canvas.layout(runs, (widths[c] ?? 36) - CELL_PAD));
    const height = Math.max(1, ...laid.map((l) => l.length));
    for (let i = 0; i < height; i++) {
      canvas.ensure(BODY_LH);
      let x = ctx.x;
      laid.forEach((lines, c) => {
        const line = lines[i];
        if (line) canvas.lines([line], x, BODY_LH, BODY_SIZE, { bars: c === 0 ? rowDeco.bars : [], stay: true });
        else if (c === 0) canvas.lines([{ fragments: [], width: 0 }], x, BODY_LH, BODY_SIZE, { ...rowDeco, stay: true });
        x += widths[c] ?? 0;
      });
      canvas.y += BODY_LH;
    }
    const tableWidth = Math.min(ctx.width, widths.reduce((a, b) => a + b, 0));
    canvas.rule(ctx.x, tableWidth, r === 0 ? COLORS.rule : COLORS.hairline, r === 0 ? 0.75 : 0.5);
    canvas.gap(2, rowDeco);
  });
}

const SAFE_LINK = /^(https?:|mailto:)/i;

/** Inline tokens to styled runs. */
export function inlineRuns(tokens: Token[] | undefined, style: Style, ctx: BlockContext): Run[] {
  const runs: Run[] = [];
  for (const token of tokens ?? []) {
    const t = token as MarkedToken;
    switch (t.type) {
      case 'text':
        if (t.tokens && t.tokens.length > 0) runs.push(...inlineRuns(t.tokens, style, ctx));
        else runs.push(...textRuns(t.text, style));
        break;
      case 'escape':
        runs.push({ text: t.text, style });
        break;
      case 'strong':
        runs.push(...inlineRuns(t.tokens, { ...style, font: style.font === 'mono' ? 'mono' : 'bold' }, ctx));
        break;
      case 'em':
        runs.push(...inlineRuns(t.tokens, { ...style, oblique: true }, ctx));
        break;
      case 'del':
        runs.push(...inlineRuns(t.tokens, { ...style, strike: true }, ctx));
        break;
      case 'codespan':
        runs.push({ text: t.text.replace(/\n/g, ' '), style: { ...style, font: 'mono', size: style.size * 0.92, color: COLORS.code } });
        break;
      case 'br':
        runs.push({ text: '\n', style });
        break;
      case 'link': {
        const link = SAFE_LINK.test(t.href) ? t.href : undefined;
        const ls: Style = { ...style, color: COLORS.link, underline: true, link };
        runs.push(...inlineRuns(t.tokens, ls, ctx));
        break;
      }
      case 'image': {
        const link = SAFE_LINK.test(t.href) ? t.href : undefined;
        runs.push({ text: `[${ctx.imageLabel}${t.text ? `: ${decodeEntities(t.text)}` : ''}]`, style: { ...style, color: COLORS.link, underline: true, link } });
        break;
      }
      case 'html':
        runs.push({ text: t.text, style: { ...style, color: COLORS.muted } });
        break;
      case 'checkbox':
        break; // drawn as the list item's marker
      default: {
        const g = t as Tokens.Generic;
        if (Array.isArray(g.tokens)) runs.push(...inlineRuns(g.tokens, style, ctx));
        else if (typeof g.text === 'string') runs.push(...textRuns(g.text, style));
      }
    }
  }
  return runs;
}

function textRuns(text: string, style: Style): Run[] {
  return [{ text: decodeEntities(text), style }];
}

const NAMED: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ' };

/** Marked keeps entities in text tokens as written; show them as a browser would. */
export function decodeEntities(text: string): string {
  if (!text.includes('&')) return text;
  return text.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (whole, body: string) => {
    if (body[0] === '#') {
      const cp = body[1] === 'x' || body[1] === 'X' ? parseInt(body.slice(2), 16) : parseInt(body.slice(1), 10);
      return Number.isFinite(cp) && cp > 0 && cp <= 0x10ffff ? String.fromCodePoint(cp) : whole;
    }
    return NAMED[body.toLowerCase()] ?? whole;
  });
}
