// Line layout for the PDF export. pdfkit's own wrapping (continued text) mis-places mixed
// fonts and hard breaks, so text is measured and broken into lines here and every fragment is
// drawn at an explicit position with lineBreak:false. That gives one baseline per line for
// mixed fonts (Noto Sans CJK and Courier), wrapping of words longer than a line, CJK breaks
// between characters, and page breaks that happen only between lines (see pdf-canvas.ts).

/** Font keys registered on the document (see pdf-canvas.ts); `emoji` is the fallback face. */
export type FontKey = 'body' | 'bold' | 'mono' | 'emoji';

export interface Style {
  font: FontKey;
  size: number;
  color: string;
  link?: string;
  underline?: boolean;
  strike?: boolean;
  oblique?: boolean;
}

export interface Run {
  text: string;
  style: Style;
}

export interface Fragment {
  text: string;
  style: Style;
  /** Offset from the start of the line. */
  x: number;
  width: number;
}

export interface Line {
  fragments: Fragment[];
  width: number;
  /** The source line goes on on the next line (a wrapped code line): drawn with a mark. */
  continued?: boolean;
}

/** Does a face have glyphs for all of a text (see pdf-fastfont.ts coverageOf). */
export type Covers = (text: string) => boolean;

/** Glyph coverage of the text face and of the emoji fallback face. */
export interface Coverage {
  body?: Covers;
  emoji?: Covers;
  /** Whether the emoji face's shaping keeps every code point of an emoji (pdf-fastfont.ts). */
  emojiKeeps?: Covers | undefined;
}

/** Code points that belong to the emoji before them: joiners, variation selectors, skin tones, tags, keycaps. */
function isEmojiJoiner(cp: number): boolean {
  return cp === 0x200d || cp === 0xfe0f || cp === 0xfe0e || cp === 0x20e3 || (cp >= 0x1f3fb && cp <= 0x1f3ff) || (cp >= 0xe0020 && cp <= 0xe007f);
}

/**
 * Which face draws each character: the run's own face where it has the glyph, else the emoji
 * face where that has it (emoji are not in the CJK text font; without this they are empty
 * boxes). A character followed by VS16 or a keycap mark is drawn as emoji, and joiners stay
 * with the emoji they join, so sequences (👍🏽, 👨‍👩‍👧, 1️⃣) reach the emoji face whole and are shaped
 * into one glyph.
 */
export function faceOf(chars: string[], i: number, own: Covers | undefined, emoji: Covers | undefined, prevEmoji: boolean): 'own' | 'emoji' {
  const ch = chars[i] ?? '';
  const cp = ch.codePointAt(0) ?? 0;
  if (!emoji) return 'own';
  if (prevEmoji && isEmojiJoiner(cp)) return 'emoji';
  const next = chars[i + 1]?.codePointAt(0);
  if ((next === 0xfe0f || next === 0x20e3) && emoji(ch)) return 'emoji';
  if (cp < 0x80 || !own || own(ch)) return 'own';
  return emoji(ch) ? 'emoji' : 'own';
}

/** Splits runs so that characters the text face lacks are drawn in the emoji face. */
export function splitFallback(runs: Run[], cov: Coverage): Run[] {
  if (!cov.emoji) return runs;
  const out: Run[] = [];
  for (const run of runs) {
    // Fast path: nothing the emoji face would draw better (ASCII, CJK, …).
    if (run.style.font === 'emoji' || (!/[\ufe0f\u20e3]/.test(run.text) && (cov.body?.(run.text) ?? true))) {
      out.push(run);
      continue;
    }
    const chars = Array.from(run.text);
    let current = '';
    let currentFace: 'own' | 'emoji' = 'own';
    for (let i = 0; i < chars.length; i++) {
      const face = faceOf(chars, i, cov.body, cov.emoji, currentFace === 'emoji' && current !== '');
      if (face !== currentFace && current) {
        out.push({ text: current, style: currentFace === 'emoji' ? { ...run.style, font: 'emoji' } : run.style });
        current = '';
      }
      currentFace = face;
      current += chars[i];
    }
    if (current) out.push({ text: current, style: currentFace === 'emoji' ? { ...run.style, font: 'emoji' } : run.style });
  }
  return cov.emojiKeeps ? keepTones(out, cov.emojiKeeps) : out;
}

const SKIN_TONE = /[\u{1F3FB}-\u{1F3FF}]/u;
const graphemes = new Intl.Segmenter(undefined, { granularity: 'grapheme' });

/**
 * Where the emoji face would swallow a skin tone: it draws 👍🏽 as the glyph of 👍, so the tone
 * is lost to the eye and to text extraction. Such a tone is drawn on its own after its base, as
 * the tone's own glyph (a swatch), which is Unicode's fallback for a font without the toned
 * emoji (UTS #51), and extraction gives back the whole sequence. Sequences the face draws whole,
 * tones included (🧑🏾‍💻), are left as they are. Answers the UTF-16 offsets of the tones to draw
 * alone, in order.
 */
function swallowedTones(text: string, keeps: Covers): number[] {
  const at: number[] = [];
  if (!SKIN_TONE.test(text)) return at;
  for (const { segment, index } of graphemes.segment(text)) {
    if (!SKIN_TONE.test(segment) || keeps(segment)) continue;
    let offset = index;
    for (const ch of segment) {
      if (SKIN_TONE.test(ch)) at.push(offset);
      offset += ch.length;
    }
  }
  return at;
}

/**
 * Emoji runs split around the tones the face would swallow (swallowedTones). Each piece is a
 * run of its own with its own style object, so the line layout does not merge it back into one
 * fragment, and it is shaped alone.
 */
function keepTones(runs: Run[], keeps: Covers): Run[] {
  const out: Run[] = [];
  for (const run of runs) {
    const tones = run.style.font === 'emoji' ? swallowedTones(run.text, keeps) : [];
    if (tones.length === 0) {
      out.push(run);
      continue;
    }
    let from = 0;
    for (const at of tones) {
      if (at > from) out.push({ text: run.text.slice(from, at), style: { ...run.style } });
      out.push({ text: run.text.slice(at, at + 2), style: { ...run.style } });
      from = at + 2;
    }
    if (from < run.text.length) out.push({ text: run.text.slice(from), style: { ...run.style } });
  }
  return out;
}

/** Measures text in a given font and size (doc.widthOfString). */
export type Measure = (text: string, font: FontKey, size: number) => number;

/** Characters pdfkit's built-in Courier (WinAnsi) draws; anything else goes to the CJK font. */
const MONO_SAFE = /^[\x20-\x7e]+$/;
const MONO_SPLIT = /[\x20-\x7e]+|[^\x20-\x7e]+/g;

/** Splits mono runs so that non-ASCII text is drawn in the body font (Courier has no CJK). */
export function splitMono(runs: Run[]): Run[] {
  const out: Run[] = [];
  for (const run of runs) {
    if (run.style.font !== 'mono' || MONO_SAFE.test(run.text) || run.text === '\n') {
      out.push(run);
      continue;
    }
    for (const part of run.text.match(MONO_SPLIT) ?? []) {
      out.push({ text: part, style: MONO_SAFE.test(part) ? run.style : { ...run.style, font: 'body' } });
    }
  }
  return out;
}

// CJK ideographs, kana, Hangul, CJK punctuation and full-width forms: a line may break between
// any two of them.
const CJK = '\\u2e80-\\u2fff\\u3000-\\u303f\\u3040-\\u30ff\\u3100-\\u31ff\\u3200-\\u9fff\\uac00-\\ud7af\\uf900-\\ufaff\\ufe30-\\ufe4f\\uff00-\\uffef\\u{20000}-\\u{3ffff}';
const ATOM = new RegExp(`(\\n)|([ \\t]+)|([${CJK}])|([^ \\t\\n${CJK}]+)`, 'gu');
/** May not start a line: attached to the atom before. */
const CLOSING = /^[，。、；：！？）」』》〉】〕〗”’…·%,.;:!?)\]}>]/u;
/** May not end a line: attached to the atom after. */
const OPENING = /[（「『《〈【〔〖“‘([{]$/u;

interface Atom {
  kind: 'word' | 'space' | 'break';
  text: string;
}

export function atomsOf(text: string): Atom[] {
  const atoms: Atom[] = [];
  let glueNext = false;
  for (const m of text.matchAll(ATOM)) {
    if (m[1]) {
      atoms.push({ kind: 'break', text: '\n' });
      glueNext = false;
      continue;
    }
    if (m[2]) {
      atoms.push({ kind: 'space', text: ' ' });
      glueNext = false;
      continue;
    }
    const word = m[0];
    const prev = atoms[atoms.length - 1];
    if (prev && prev.kind === 'word' && (glueNext || CLOSING.test(word))) prev.text += word;
    else atoms.push({ kind: 'word', text: word });
    glueNext = OPENING.test(word);
  }
  return atoms;
}

class LineBuilder {
  readonly lines: Line[] = [];
  private cur: Line = { fragments: [], width: 0 };
  private pendingSpace: { style: Style; width: number } | null = null;

  constructor(private readonly maxWidth: number) {}

  get used(): number {
    return this.cur.width;
  }

  get empty(): boolean {
    return this.cur.fragments.length === 0;
  }

  space(style: Style, width: number): void {
    if (!this.empty) this.pendingSpace = { style, width };
  }

  fits(width: number): boolean {
    return this.cur.width + (this.pendingSpace?.width ?? 0) + width <= this.maxWidth + 0.01;
  }

  add(text: string, style: Style, width: number): void {
    if (this.pendingSpace && !this.empty) this.append(' ', this.pendingSpace.style, this.pendingSpace.width);
    this.pendingSpace = null;
    this.append(text, style, width);
  }

  private append(text: string, style: Style, width: number): void {
    const last = this.cur.fragments[this.cur.fragments.length - 1];
    if (last && last.style === style) {
      last.text += text;
      last.width += width;
    } else {
      this.cur.fragments.push({ text, style, x: this.cur.width, width });
    }
    this.cur.width += width;
  }

  /** Ends the current line; `force` keeps an empty line (hard break on an empty line). */
  newLine(force = false): void {
    if (force || !this.empty) this.lines.push(this.cur);
    this.cur = { fragments: [], width: 0 };
    this.pendingSpace = null;
  }

  finish(): Line[] {
    this.newLine();
    return this.lines;
  }
}

/**
 * Breaks styled runs into lines no wider than maxWidth: at spaces, between CJK characters,
 * at hard breaks ("\n"), and inside words longer than a line.
 */
export function layoutRuns(runs: Run[], maxWidth: number, measure: Measure): Line[] {
  const b = new LineBuilder(maxWidth);
  for (const run of splitMono(runs)) {
    const { style } = run;
    for (const atom of atomsOf(run.text)) {
      if (atom.kind === 'break') {
        b.newLine(true);
        continue;
      }
      const width = measure(atom.text, style.font, style.size);
      if (atom.kind === 'space') {
        b.space(style, width);
        continue;
      }
      if (b.fits(width)) {
        b.add(atom.text, style, width);
      } else if (width <= maxWidth) {
        b.newLine();
        b.add(atom.text, style, width);
      } else {
        splitWord(b, atom.text, style, maxWidth, measure);
      }
    }
  }
  return b.finish();
}

/** A word wider than a line: as many characters as fit on each line. */
function splitWord(b: LineBuilder, word: string, style: Style, maxWidth: number, measure: Measure): void {
  const chars = Array.from(word);
  // Start on a fresh line unless a fair part of the current one is still free.
  if (!b.empty && maxWidth - b.used < maxWidth / 4) b.newLine();
  let piece = '';
  let pieceWidth = 0;
  for (const ch of chars) {
    const w = measure(ch, style.font, style.size);
    if (!b.fits(pieceWidth + w)) {
      if (piece) b.add(piece, style, pieceWidth);
      b.newLine();
      piece = '';
      pieceWidth = 0;
    }
    piece += ch;
    pieceWidth += w;
  }
  if (piece) b.add(piece, style, pieceWidth);
}

/**
 * Lines of a code block: spaces kept, tabs expanded to 4 columns. A line longer than the box is
 * wrapped at the box edge, character by character, so that nothing is lost and the columns
 * stay; every line but the last of a wrapped source line is `continued` (drawn with a mark).
 * Non-ASCII text is drawn in the body font, and what that lacks in the emoji face.
 */
export function layoutCode(code: string, style: Style, maxWidth: number, measure: Measure, cov: Coverage = {}): Line[] {
  const lines: Line[] = [];
  const widths = new Map<string, number>();
  const bodyStyle: Style = { ...style, font: 'body' };
  const emojiStyle: Style = { ...style, font: 'emoji' };
  const charWidth = (ch: string, s: Style): number => {
    const key = s.font + ch;
    let w = widths.get(key);
    if (w === undefined) {
      w = measure(ch, s.font, s.size);
      widths.set(key, w);
    }
    return w;
  };
  // A tone the emoji face would swallow is a fragment of its own, with its own width.
  const toneStyle: Style = { ...emojiStyle };
  for (const raw of code.split('\n')) {
    const text = expandTabs(raw);
    const chars = Array.from(text);
    const tones = new Set(cov.emoji && cov.emojiKeeps ? swallowedTones(text, cov.emojiKeeps) : []);
    const styles: Style[] = [];
    const charWidths: number[] = [];
    let prevEmoji = false;
    for (let i = 0, offset = 0; i < chars.length; offset += (chars[i] ?? '').length, i++) {
      const ch = chars[i] ?? '';
      const ascii = ch >= ' ' && ch <= '~';
      const isEmoji: boolean = !ascii && faceOf(chars, i, cov.body, cov.emoji, prevEmoji) === 'emoji';
      prevEmoji = isEmoji;
      const alone = isEmoji && tones.has(offset);
      const s = ascii ? style : alone ? toneStyle : isEmoji ? emojiStyle : bodyStyle;
      styles.push(s);
      // Joiners and selectors are drawn inside the emoji they belong to: no width of their own.
      charWidths.push(isEmoji && !alone && i > 0 && isEmojiJoiner(ch.codePointAt(0) ?? 0) ? 0 : charWidth(ch, s));
    }
    let start = 0;
    do {
      const end = breakCodeLine(chars, charWidths, start, maxWidth);
      const line: Line = { fragments: [], width: 0 };
      for (let i = start; i < end; i++) {
        const ch = chars[i] ?? '';
        const s = styles[i] ?? style;
        const w = charWidths[i] ?? 0;
        const last = line.fragments[line.fragments.length - 1];
        if (last && last.style === s) {
          last.text += ch;
          last.width += w;
        } else {
          line.fragments.push({ text: ch, style: s, x: line.width, width: w });
        }
        line.width += w;
      }
      if (end < chars.length) line.continued = true;
      lines.push(line);
      start = end;
    } while (start < chars.length);
  }
  return lines;
}

/**
 * Where a wrapped code line ends: as many characters as fit, moved back (by a few characters
 * at most) so that no piece starts or ends with a space. Text extraction drops spaces at the
 * ends of a line, so a break there would lose a character when the pieces are joined again.
 */
export function breakCodeLine(chars: string[], widths: number[], start: number, maxWidth: number): number {
  let width = 0;
  let end = start;
  while (end < chars.length && (end === start || width + (widths[end] ?? 0) <= maxWidth + 0.01)) {
    width += widths[end] ?? 0;
    end += 1;
  }
  // Keep zero-width joiners with what they join.
  while (end < chars.length && (widths[end] ?? 0) === 0) end += 1;
  if (end >= chars.length) return chars.length;
  const floor = Math.max(start + 1, end - 12);
  for (let b = end; b > floor; b--) {
    if (chars[b - 1] !== ' ' && chars[b] !== ' ' && (widths[b] ?? 0) > 0) return b;
  }
  return end;
}

export function expandTabs(line: string): string {
  if (!line.includes('\t')) return line;
  let out = '';
  for (const ch of line) {
    if (ch === '\t') out += ' '.repeat(4 - (out.length % 4));
    else out += ch;
  }
  return out;
}
