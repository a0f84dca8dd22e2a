// Line layout for the PDF export. pdfkit's own wrapping (continued text) mis-places mixed
// fonts and hard breaks, so text is measured and broken into lines here and every fragment is
// drawn at an explicit position with lineBreak:false. That gives one baseline per line for
// mixed fonts (Noto Sans CJK and Courier), wrapping of words longer than a line, CJK breaks
// between characters, and page breaks that happen only between lines (see pdf-canvas.ts).

/** Font keys registered on the document (see pdf-canvas.ts). */
export type FontKey = 'body' | 'bold' | 'mono';

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
 * Lines of a code block: spaces kept, tabs expanded to 4 columns, breaks anywhere once a line
 * is full. Non-ASCII text is drawn in the body font.
 */
export function layoutCode(code: string, style: Style, maxWidth: number, measure: Measure): Line[] {
  const lines: Line[] = [];
  const widths = new Map<string, number>();
  const bodyStyle: Style = { ...style, font: 'body' };
  const charWidth = (ch: string, s: Style): number => {
    const key = s.font + ch;
    let w = widths.get(key);
    if (w === undefined) {
      w = measure(ch, s.font, s.size);
      widths.set(key, w);
    }
    return w;
  };
  for (const raw of code.split('\n')) {
    const text = expandTabs(raw);
    let cur: Line = { fragments: [], width: 0 };
    for (const ch of text) {
      const s = ch >= ' ' && ch <= '~' ? style : bodyStyle;
      const w = charWidth(ch, s);
      if (cur.width + w > maxWidth + 0.01 && cur.fragments.length > 0) {
        lines.push(cur);
        cur = { fragments: [], width: 0 };
      }
      const last = cur.fragments[cur.fragments.length - 1];
      if (last && last.style === s) {
        last.text += ch;
        last.width += w;
      } else {
        cur.fragments.push({ text: ch, style: s, x: cur.width, width: w });
      }
      cur.width += w;
    }
    lines.push(cur);
  }
  return lines;
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
