// Faster glyph layout for the PDF export's embedded fonts.
//
// pdfkit runs every new string through fontkit's OpenType shaper (GSUB/GPOS) and caches the
// result per space-separated word. CJK text has no spaces, so nearly every line is new and is
// shaped again: for a 10,000-message room that was the largest single cost and a cache that
// grows with the document. For text in scripts that need no shaping (Latin, Greek, Cyrillic,
// punctuation, CJK, kana, full-width forms; no combining marks, no joiners or bidi controls)
// one glyph per character with its advance width is what the shaper returns anyway, except
// for Latin kerning, which is given up. Everything else still goes through pdfkit's layout.
//
// This replaces `layout` on pdfkit's EmbeddedFont instance (an internal of pdfkit 0.1x–0.20);
// when the instance does not look as expected nothing is changed.

interface FkGlyph {
  id: number;
  advanceWidth: number;
  codePoints: number[];
}

interface Layout {
  glyphs: FkGlyph[] | null;
  positions: Position[] | null;
  advanceWidth: number;
}

interface Position {
  xAdvance: number;
  yAdvance: number;
  xOffset: number;
  yOffset: number;
  advanceWidth: number;
}

interface EmbeddedFontLike {
  font?: { glyphForCodePoint?: (cp: number) => FkGlyph; hasGlyphForCodePoint?: (cp: number) => boolean };
  scale?: number;
  layout?: (text: string, features?: unknown, onlyWidth?: boolean) => Layout;
  __fastLayout?: boolean;
}

const SIMPLE = /^[\u0020-\u007e\u00a0-\u02ff\u0370-\u03ff\u0400-\u04ff\u2010-\u2027\u2030-\u205e\u2070-\u2bff\u3000-\u9fff\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef]*$/;

/** Installs the simple layout on the document's current font (call after doc.font(name)). */
export function installFastLayout(doc: PDFKit.PDFDocument): boolean {
  const embedded = (doc as unknown as { _font?: EmbeddedFontLike })._font;
  const fk = embedded?.font;
  const scale = embedded?.scale;
  if (!embedded || embedded.__fastLayout || typeof embedded.layout !== 'function' || typeof fk?.glyphForCodePoint !== 'function' || typeof scale !== 'number') {
    return false;
  }
  const original = embedded.layout.bind(embedded);
  const glyphFor = fk.glyphForCodePoint.bind(fk);
  const cache = new Map<number, { glyph: FkGlyph; advance: number }>();
  embedded.layout = (text: string, features?: unknown, onlyWidth?: boolean): Layout => {
    if (features || !SIMPLE.test(text)) return original(text, features, onlyWidth);
    const glyphs: FkGlyph[] | null = onlyWidth ? null : [];
    const positions: Position[] | null = onlyWidth ? null : [];
    let advanceWidth = 0;
    for (let i = 0; i < text.length; i++) {
      const cp = text.charCodeAt(i);
      let entry = cache.get(cp);
      if (!entry) {
        const glyph = glyphFor(cp);
        entry = { glyph, advance: glyph.advanceWidth * scale };
        cache.set(cp, entry);
      }
      advanceWidth += entry.advance;
      if (glyphs && positions) {
        glyphs.push(entry.glyph);
        positions.push({ xAdvance: entry.advance, yAdvance: 0, xOffset: 0, yOffset: 0, advanceWidth: entry.advance });
      }
    }
    return { glyphs, positions, advanceWidth };
  };
  embedded.__fastLayout = true;
  return true;
}

/**
 * For the document's current font: whether shaping a text keeps each of its code points on the
 * glyphs it becomes, in order. The glyphs' code points are what the PDF's ToUnicode map gives
 * back to text extraction; a font that draws a sequence as a glyph of its base (Noto Emoji draws
 * 👍🏽 as 👍: it has no skin tones) would lose the rest. Null when that cannot be told.
 */
export function shapingKeepsOf(doc: PDFKit.PDFDocument): ((text: string) => boolean) | null {
  const fk = (doc as unknown as { _font?: { font?: { layout?: (text: string) => { glyphs: Array<{ codePoints: number[] }> } } } })._font?.font;
  if (typeof fk?.layout !== 'function') return null;
  const known = new Map<string, boolean>();
  return (text: string): boolean => {
    let keeps = known.get(text);
    if (keeps === undefined) {
      const shaped = fk.layout!(text).glyphs.flatMap((g) => g.codePoints);
      const source = Array.from(text, (ch) => ch.codePointAt(0)!);
      keeps = shaped.length === source.length && shaped.every((cp, i) => cp === source[i]);
      if (known.size < 4096) known.set(text, keeps);
    }
    return keeps;
  };
}

/**
 * For the document's current font: a test whether it has a glyph for every character of a
 * text (null when that cannot be told). Text it lacks (emoji, scripts outside the font) is
 * drawn as empty boxes; the caller adds the real text as ActualText so that it can still be
 * extracted and searched.
 */
export function coverageOf(doc: PDFKit.PDFDocument): ((text: string) => boolean) | null {
  const fk = (doc as unknown as { _font?: EmbeddedFontLike })._font?.font;
  const has = fk?.hasGlyphForCodePoint;
  if (typeof has !== 'function') return null;
  const known = new Map<number, boolean>();
  return (text: string): boolean => {
    if (/^[\x20-\x7e]*$/.test(text)) return true;
    for (const ch of text) {
      const cp = ch.codePointAt(0) ?? 0;
      let ok = known.get(cp);
      if (ok === undefined) {
        ok = has.call(fk, cp);
        known.set(cp, ok);
      }
      if (!ok) return false;
    }
    return true;
  };
}
