// The drawing surface of the PDF export: fonts, page geometry, running header and footer
// (room name, page number) and line-by-line drawing with page breaks between lines. The
// canvas tracks the vertical position itself; pdfkit never wraps or breaks pages on its own.
import { createRequire } from 'node:module';
import { accessSync, constants } from 'node:fs';
import path from 'node:path';
import { coverageOf, installFastLayout, shapingKeepsOf } from './pdf-fastfont.js';
import { openFont, type FontSource } from './pdf-fonts.js';
import { layoutRuns, splitFallback, type Coverage, type FontKey, type Line, type Run, type Style } from './pdf-layout.js';

export interface FontFiles {
  regular: string;
  bold: string;
  /** PostScript name inside a font collection (.ttc). */
  family?: string;
}

let bundled: FontFiles | null = null;

/** Noto Sans Hans (Simplified Chinese, OTF/CFF) from @embedpdf/fonts-sc. */
export function bundledFonts(): FontFiles {
  if (!bundled) {
    const require = createRequire(import.meta.url);
    const dir = path.join(path.dirname(require.resolve('@embedpdf/fonts-sc')), '..', 'fonts');
    bundled = {
      regular: path.join(dir, 'NotoSansHans-Regular.otf'),
      bold: path.join(dir, 'NotoSansHans-Bold.otf'),
    };
  }
  return bundled;
}

let emojiFile: string | null | undefined;

/**
 * Noto Emoji (monochrome, OFL) from @expo-google-fonts/noto-emoji: the fallback face for emoji,
 * which no CJK text font has. Null when the package is missing (emoji then stay empty boxes
 * with their text kept as ActualText).
 */
export function bundledEmojiFont(): string | null {
  if (emojiFile === undefined) {
    try {
      const require = createRequire(import.meta.url);
      const dir = path.dirname(require.resolve('@expo-google-fonts/noto-emoji/package.json'));
      emojiFile = path.join(dir, '400Regular', 'NotoEmoji_400Regular.ttf');
      accessSync(emojiFile, constants.R_OK);
    } catch {
      emojiFile = null;
    }
  }
  return emojiFile;
}

export interface FontOptions {
  /** A TTF/OTF (or .ttc with fontFamily) that renders the room's script; EXPORT_FONT. */
  fontPath?: string;
  /** Bold face to go with fontPath; default: fontPath itself. */
  boldFontPath?: string;
  /** PostScript name of the face to use inside a collection (.ttc/.dfont). */
  fontFamily?: string;
}

export function resolveFonts(opts: FontOptions): FontFiles {
  if (!opts.fontPath) return bundledFonts();
  for (const file of [opts.fontPath, opts.boldFontPath]) {
    if (!file) continue;
    try {
      accessSync(file, constants.R_OK);
    } catch {
      throw new Error(`export font not readable: ${file}`);
    }
  }
  return { regular: opts.fontPath, bold: opts.boldFontPath ?? opts.fontPath, family: opts.fontFamily };
}

/** Parsed fonts (fontkit objects, which pdfkit takes in place of a path). */
export interface LoadedFaces {
  regular: unknown;
  bold: unknown;
  emoji: unknown | null;
}

/**
 * Reads and parses the faces once per process, without blocking the event loop on the read.
 * Throws when the text font cannot be read or parsed; a broken emoji font is left out.
 */
export async function loadFaces(files: FontFiles): Promise<LoadedFaces> {
  try {
    const [regular, bold] = await Promise.all([openFont(files.regular, files.family), openFont(files.bold, files.family)]);
    const emojiFile = bundledEmojiFont();
    const emoji = emojiFile ? await openFont(emojiFile).catch(() => null) : null;
    return { regular, bold, emoji };
  } catch (err) {
    throw new Error(`export font cannot be used (${files.regular}): ${(err as Error).message}`);
  }
}

/** Registered font name → its file, for encoding subsets off the event loop (pdf-fonts.ts). */
export function fontSources(files: FontFiles): Record<string, FontSource> {
  const out: Record<string, FontSource> = { body: { file: files.regular, family: files.family } };
  if (files.bold !== files.regular) out.bold = { file: files.bold, family: files.family };
  const emoji = bundledEmojiFont();
  if (emoji) out.emoji = { file: emoji };
  return out;
}

/** pdfkit font names per layout key, and whether bold is drawn from the regular face. */
export interface Faces {
  names: Record<FontKey, string>;
  fakeBold: boolean;
  /** Per face: does it have glyphs for all of a text (absent: assume so). */
  covers: Partial<Record<FontKey, (text: string) => boolean>>;
  /** Does the emoji face's shaping keep every code point of an emoji (absent: assume so). */
  emojiKeeps?: (text: string) => boolean;
}

/**
 * Registers the faces and checks that they load. One file for both weights is registered
 * once: pdfkit would otherwise open and parse the file again on every switch to the second
 * name (its cache is keyed by the PostScript name, which both share). Bold is then drawn by
 * stroking the outline as well as filling it.
 */
export function registerFonts(doc: PDFKit.PDFDocument, files: FontFiles, loaded?: LoadedFaces): Faces {
  const fakeBold = files.bold === files.regular;
  // A parsed font object when given (kept for the process), else the file (parsed per document).
  doc.registerFont('body', (loaded?.regular ?? files.regular) as string, files.family);
  if (!fakeBold) doc.registerFont('bold', (loaded?.bold ?? files.bold) as string, files.family);
  doc.registerFont('mono', 'Courier');
  const emoji = loaded ? loaded.emoji : bundledEmojiFont();
  if (emoji) doc.registerFont('emoji', emoji as string);
  const covers: Faces['covers'] = {};
  try {
    if (!fakeBold) {
      doc.font('bold');
      installFastLayout(doc);
      covers.bold = coverageOf(doc) ?? undefined;
    }
    doc.font('body');
    installFastLayout(doc);
    covers.body = coverageOf(doc) ?? undefined;
    if (fakeBold) covers.bold = covers.body;
  } catch (err) {
    throw new Error(`export font cannot be used (${files.regular}): ${(err as Error).message}`);
  }
  let hasEmoji = false;
  let emojiKeeps: Faces['emojiKeeps'];
  if (emoji) {
    try {
      doc.font('emoji');
      covers.emoji = coverageOf(doc) ?? undefined;
      emojiKeeps = shapingKeepsOf(doc) ?? undefined;
      hasEmoji = covers.emoji !== undefined;
    } catch {
      // A broken emoji font costs the emoji, not the export.
    }
    doc.font('body');
  }
  const names: Faces['names'] = { body: 'body', bold: fakeBold ? 'body' : 'bold', mono: 'mono', emoji: hasEmoji ? 'emoji' : 'body' };
  return { names, fakeBold, covers, ...(hasEmoji && emojiKeeps ? { emojiKeeps } : {}) };
}

export const COLORS = {
  text: '#1f2328',
  muted: '#6e7781',
  faint: '#afb8c1',
  rule: '#d0d7de',
  hairline: '#eaeef2',
  link: '#0b61c4',
  code: '#8a3b12',
  codeBg: '#f3f4f6',
  quoteBar: '#c9d1d9',
  chipBg: '#eef1f4',
  agent: '#0b5fa5',
  user: '#1a7f37',
  system: '#6e7781',
};

/** Extra decoration of a line: quote bars, a code background, a list marker. */
export interface LineDeco {
  /** x positions of quote bars (one per quote level). */
  bars?: number[];
  background?: { x: number; width: number; color: string };
  /** Drawn on the first line only (list item markers). */
  markers?: Marker[];
  /** x of the right edge of the box: continued lines get their mark there. */
  markX?: number;
  /** Draw on the current line without moving down (table cells side by side). */
  stay?: boolean;
}

export interface Marker {
  text: string;
  x: number;
  style: Style;
}

export interface CanvasOptions {
  roomName: string;
  headerRight: string;
  /** Footer of page n; `total` is the text drawn for the page count. */
  pageLabel: (n: number, total: string) => string;
}

/** Page geometry: A4 portrait; the top margin leaves room for the running header. */
export const MARGINS = { top: 66, bottom: 58, left: 56, right: 56 };
const A4_WIDTH = 595.28;

const FOOTER_SIZE = 8;
/** Between the words of the footer: a space plus enough that extraction keeps it. */
const FOOTER_GAP = FOOTER_SIZE * 0.5;

const ASCENT = 0.88; // Noto Sans CJK: ascender 880, descender -120 per 1000 units.

export class Canvas {
  readonly left: number;
  readonly width: number;
  readonly top: number;
  y = 0;
  pages = 0;
  /** Fill colour in effect on the current page (a new page starts black). */
  private fillColor = '';

  constructor(
    readonly doc: PDFKit.PDFDocument,
    private readonly faces: Faces,
    private readonly opts: CanvasOptions,
  ) {
    this.left = MARGINS.left;
    this.top = MARGINS.top;
    this.width = A4_WIDTH - MARGINS.left - MARGINS.right;
    doc.on('pageAdded', () => this.decoratePage());
  }

  get bottom(): number {
    return this.doc.page.height - this.doc.page.margins.bottom;
  }

  /** Width of text in a face and size; short strings (words, CJK characters) are cached. */
  measure = (text: string, font: FontKey, size: number): number => {
    if (text.length > 24) return this.doc.font(this.faces.names[font]).fontSize(size).widthOfString(text);
    const key = font === 'body' ? size : font === 'bold' ? -size : font === 'mono' ? size + 1000 : size + 2000;
    let table = this.widths.get(key);
    if (!table) {
      table = new Map();
      this.widths.set(key, table);
    }
    let w = table.get(text);
    if (w === undefined) {
      w = this.doc.font(this.faces.names[font]).fontSize(size).widthOfString(text);
      if (table.size >= 20_000) table.clear();
      table.set(text, w);
    }
    return w;
  };

  /** Cached widths per face and size (see measure). */
  private readonly widths = new Map<number, Map<string, number>>();

  /** Which characters the text and emoji faces draw. */
  get coverage(): Coverage {
    const hasEmoji = this.faces.names.emoji === 'emoji';
    return { body: this.faces.covers.body, emoji: hasEmoji ? this.faces.covers.emoji : undefined, emojiKeeps: this.faces.emojiKeeps };
  }

  /** Breaks styled runs into lines of at most `width`, emoji drawn in the emoji face. */
  layout(runs: Run[], width: number): Line[] {
    return layoutRuns(splitFallback(runs, this.coverage), width, this.measure);
  }

  newPage(): void {
    this.doc.addPage();
  }

  /** Starts a new page unless `height` still fits on this one. */
  ensure(height: number): void {
    if (this.y + height > this.bottom && this.y > this.top + 1) this.newPage();
  }

  private headerName: string | undefined;

  /** The text, cut with an ellipsis to fit the width. */
  fit(text: string, font: FontKey, size: number, width: number): string {
    if (this.measure(text, font, size) <= width) return text;
    const chars = Array.from(text);
    while (chars.length > 1 && this.measure(`${chars.join('')}…`, font, size) > width) chars.pop();
    return `${chars.join('')}…`;
  }

  private decoratePage(): void {
    const { doc } = this;
    this.pages += 1;
    this.y = this.top;
    this.fillColor = '';
    const pageW = doc.page.width;
    const pageH = doc.page.height;
    const headerY = this.top - 30;
    const right = this.opts.headerRight;
    const rw = this.measure(right, 'body', 8);
    this.text(right, pageW - this.left - rw, headerY, { font: 'body', size: 8, color: COLORS.muted });
    this.headerName ??= this.fit(this.opts.roomName, 'bold', 8, this.width - rw - 16);
    this.text(this.headerName, this.left, headerY, { font: 'bold', size: 8, color: COLORS.muted });
    doc.save().moveTo(this.left, headerY + 14).lineTo(pageW - this.left, headerY + 14).lineWidth(0.5).strokeColor(COLORS.rule).stroke().restore();
    this.drawFooter(pageW, pageH - doc.page.margins.bottom + 22);
  }

  /**
   * "第 N / M 页" ("Page N of M" in English) while M is not known yet: the pages stream out as they fill, so M is drawn
   * from one form XObject that every page shows and that is written once, at the end
   * (finishPageCount). The label is drawn word by word with gaps wide enough that text
   * extraction (poppler) sees the spaces: a plain space between CJK glyphs is not seen as one.
   */
  private drawFooter(pageW: number, y: number): void {
    const mark = '\u0000';
    const words = this.opts.pageLabel(this.pages, mark).split(' ').filter(Boolean);
    const at = words.indexOf(mark);
    const before = at < 0 ? words : words.slice(0, at);
    const after = at < 0 ? [] : words.slice(at + 1);
    const style: Style = { font: 'body', size: FOOTER_SIZE, color: COLORS.muted };
    const wordsWidth = (list: string[]): number => list.reduce((w, word) => w + this.measure(word, 'body', FOOTER_SIZE), 0);
    const guess = this.measure(String(this.pages), 'body', FOOTER_SIZE);
    const gaps = Math.max(0, before.length + after.length + (at < 0 ? 0 : 1) - 1) * FOOTER_GAP;
    let x = (pageW - wordsWidth(before) - wordsWidth(after) - (at < 0 ? 0 : guess) - gaps) / 2;
    for (const word of before) x += this.text(word, x, y, style) + FOOTER_GAP;
    if (at < 0) return;
    this.totalRef ??= this.doc.ref({ Type: 'XObject', Subtype: 'Form', BBox: [-2, -4, 120, 12], Resources: {} });
    this.totalWords = after;
    const { doc } = this;
    const page = doc.page as unknown as { xobjects: Record<string, unknown> };
    page.xobjects.PgTotal = this.totalRef;
    const baseline = doc.page.height - (y + (FOOTER_SIZE * 1.5 - FOOTER_SIZE) / 2 + ASCENT * FOOTER_SIZE);
    doc.save();
    doc.transform(1, 0, 0, -1, 0, doc.page.height);
    doc.addContent(`1 0 0 1 ${x.toFixed(2)} ${baseline.toFixed(2)} cm /PgTotal Do`);
    doc.restore();
  }

  private totalRef: PDFKit.PDFKitReference | undefined;
  private totalWords: string[] = [];

  /** Writes the page count into the footers of all pages (call once, before doc.end()). */
  finishPageCount(): void {
    if (!this.totalRef) return;
    const { doc } = this;
    doc.font(this.faces.names.body);
    const font = (doc as unknown as { _font: { id: string; ref(): unknown; encode(t: string): [string[], unknown] } })._font;
    const [r, g, b] = hexRgb(COLORS.muted);
    const ref = this.totalRef as unknown as { data: { Resources: Record<string, unknown> }; end(chunk: string): void };
    ref.data.Resources = { Font: { [font.id]: font.ref() } };
    let ops = '';
    let x = 0;
    for (const word of [String(this.pages), ...this.totalWords]) {
      const [glyphs] = font.encode(word);
      ops += `1 0 0 1 ${x.toFixed(2)} 0 Tm <${glyphs.join('')}> Tj `;
      x += this.measure(word, 'body', FOOTER_SIZE) + FOOTER_GAP;
    }
    ref.end(`BT ${r} ${g} ${b} rg /${font.id} ${FOOTER_SIZE} Tf ${ops}ET`);
  }

  /** Draws one fragment with its top at y; `lineHeight` centres the em box in the line. */
  text(text: string, x: number, y: number, style: Style, lineHeight = style.size * 1.5, baseSize = style.size, knownWidth?: number): number {
    const { doc } = this;
    const dy = (lineHeight - baseSize) / 2 + ASCENT * baseSize;
    doc.font(this.faces.names[style.font]).fontSize(style.size);
    this.fill(style.color);
    const width = knownWidth ?? this.measure(text, style.font, style.size);
    const options: Record<string, unknown> = { lineBreak: false, baseline: -dy, oblique: style.oblique ? 12 : false, textWidth: width, wordCount: 1 };
    if (style.font === 'bold' && this.faces.fakeBold) {
      doc.lineWidth(style.size * 0.035).strokeColor(style.color);
      options.fill = true;
      options.stroke = true;
    }
    // pdfkit's text() re-measures every fragment after drawing it; its _fragment() draws at
    // (x, y) and nothing else. Used when present (pdfkit 0.1x–0.20), text() otherwise.
    const fragment = (doc as unknown as { _fragment?: (t: string, x: number, y: number, o: object) => void })._fragment;
    const covered = this.faces.covers[style.font]?.(text) ?? true;
    if (!covered) doc.markContent('Span', { actual: text });
    if (typeof fragment === 'function') fragment.call(doc, text, x, y, options);
    else doc.text(text, x, y, options as PDFKit.Mixins.TextOptions);
    if (!covered) doc.endMarkedContent();
    if (style.underline || style.strike) {
      const ly = style.underline ? y + dy + 1.5 : y + dy - 0.3 * baseSize;
      doc.save().moveTo(x, ly).lineTo(x + width, ly).lineWidth(0.5).strokeColor(style.color).stroke().restore();
    }
    if (style.link) doc.link(x, y, width, lineHeight, style.link);
    return width;
  }

  /** Sets the fill colour unless it is the current one (pdfkit writes an operator each time). */
  private fill(color: string): void {
    if (color !== this.fillColor) {
      this.doc.fillColor(color);
      this.fillColor = color;
    }
  }

  rect(x: number, y: number, width: number, height: number, color: string, radius = 0): void {
    if (radius > 0) this.doc.roundedRect(x, y, width, height, radius);
    else this.doc.rect(x, y, width, height);
    this.doc.fill(color);
    this.fillColor = color;
  }

  /** Draws lines at x, one per `lineHeight`, breaking pages between lines. */
  lines(lines: Line[], x: number, lineHeight: number, baseSize: number, deco: LineDeco = {}): void {
    let markers = deco.markers;
    for (const line of lines) {
      this.ensure(lineHeight);
      this.decorate(lineHeight, deco);
      for (const m of markers ?? []) this.text(m.text, m.x, this.y, m.style, lineHeight, baseSize);
      markers = undefined;
      for (const f of line.fragments) this.text(f.text, x + f.x, this.y, f.style, lineHeight, baseSize, f.width);
      if (line.continued) this.continuationMark(deco.markX ?? x + line.width + 3, this.y, lineHeight);
      if (!deco.stay) this.y += lineHeight;
    }
  }

  /** Vertical space that carries the decoration (bars, background) of the block it is in. */
  gap(height: number, deco: LineDeco = {}): void {
    if (height <= 0) return;
    if (this.y + height > this.bottom) {
      this.newPage();
      return;
    }
    this.decorate(height, deco);
    this.y += height;
  }

  private decorate(height: number, deco: LineDeco): void {
    const { doc } = this;
    if (deco.background) this.rect(deco.background.x, this.y, deco.background.width, height, deco.background.color);
    for (const bx of deco.bars ?? []) this.rect(bx, this.y, 2, height, COLORS.quoteBar);
  }

  /**
   * A small return arrow (↵) at the right edge of a wrapped line, drawn as lines rather than as
   * text so that copying or extracting the code gives exactly the source.
   */
  continuationMark(x: number, y: number, lineHeight: number): void {
    const mid = y + lineHeight / 2;
    const { doc } = this;
    doc.save().lineWidth(0.7).strokeColor(COLORS.muted).lineCap('round').lineJoin('round');
    doc.moveTo(x + 4, mid - 3).lineTo(x + 4, mid + 1.5).lineTo(x, mid + 1.5).stroke();
    doc.moveTo(x + 1.6, mid - 0.2).lineTo(x, mid + 1.5).lineTo(x + 1.6, mid + 3.2).stroke();
    doc.restore();
  }

  /** An image `width` × `height` points at x, y (already made to fit), linked to `link`. */
  image(data: Buffer, x: number, y: number, width: number, height: number, link?: string): void {
    this.doc.image(data, x, y, { width, height });
    this.doc.save().rect(x, y, width, height).lineWidth(0.5).strokeColor(COLORS.rule).stroke().restore();
    if (link) this.doc.link(x, y, width, height, link);
  }

  rule(x: number, width: number, color: string = COLORS.rule, weight = 0.5): void {
    this.doc.save().moveTo(x, this.y).lineTo(x + width, this.y).lineWidth(weight).strokeColor(color).stroke().restore();
  }
}

/** '#rrggbb' → PDF colour components 0..1. */
function hexRgb(hex: string): [string, string, string] {
  const n = parseInt(hex.slice(1), 16);
  const c = (v: number): string => (v / 255).toFixed(3);
  return [c((n >> 16) & 255), c((n >> 8) & 255), c(n & 255)];
}
