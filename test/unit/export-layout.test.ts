// Line layout of the PDF export (pure: measured with a fake font).
import { describe, expect, it } from 'vitest';
import { atomsOf, expandTabs, layoutCode, layoutRuns, splitFallback, splitMono, type Line, type Style } from '../../src/export/pdf-layout.js';
import { isPlainText } from '../../src/export/pdf-markdown.js';

/** 1 unit per ASCII character, 2 per anything else. */
const measure = (text: string): number => Array.from(text).reduce((w, ch) => w + (ch.charCodeAt(0) < 128 ? 1 : 2), 0);
const body: Style = { font: 'body', size: 10, color: '#000' };
const mono: Style = { font: 'mono', size: 10, color: '#000' };
const texts = (lines: Line[]): string[] => lines.map((l) => l.fragments.map((f) => f.text).join(''));

describe('pdf line layout', () => {
  it('breaks at spaces and never exceeds the width', () => {
    const lines = layoutRuns([{ text: 'the quick brown fox jumps over the lazy dog', style: body }], 15, measure);
    expect(texts(lines)).toEqual(['the quick brown', 'fox jumps over', 'the lazy dog']);
    for (const l of lines) expect(l.width).toBeLessThanOrEqual(15);
  });

  it('splits a word longer than the line into pieces that fit', () => {
    const word = 'W'.repeat(500);
    const lines = layoutRuns([{ text: `Long word: ${word} end.`, style: body }], 40, measure);
    expect(texts(lines).join('').replace(/[^W]/g, '')).toBe(word);
    for (const l of lines) expect(l.width).toBeLessThanOrEqual(40);
    expect(lines.length).toBeGreaterThanOrEqual(13);
  });

  it('breaks between CJK characters but keeps closing punctuation with the character before', () => {
    const lines = layoutRuns([{ text: '你好，世界。今天天气很好！', style: body }], 6, measure);
    for (const l of lines) expect(l.width).toBeLessThanOrEqual(6);
    for (const t of texts(lines)) expect(t).not.toMatch(/^[，。！]/);
    expect(texts(lines).join('')).toBe('你好，世界。今天天气很好！');
    expect(atomsOf('“引用”好').map((a) => a.text)).toEqual(['“引', '用”', '好']);
  });

  it('keeps hard breaks, including empty lines', () => {
    const lines = layoutRuns([{ text: 'a\n\nb', style: body }], 10, measure);
    expect(texts(lines)).toEqual(['a', '', 'b']);
  });

  it('draws non-ASCII text of mono runs in the body font', () => {
    const runs = splitMono([{ text: 'x = "中文"; // ok', style: mono }]);
    expect(runs.map((r) => [r.text, r.style.font])).toEqual([
      ['x = "', 'mono'],
      ['中文', 'body'],
      ['"; // ok', 'mono'],
    ]);
  });

  it('lays out code with spaces kept, tabs expanded and long lines broken', () => {
    expect(expandTabs('a\tb\t\tc')).toBe('a   b       c');
    const lines = layoutCode('  indented\n' + 'y'.repeat(25), mono, 10, measure);
    expect(texts(lines)).toEqual(['  indented', 'yyyyyyyyyy', 'yyyyyyyyyy', 'yyyyy']);
    const mixed = layoutCode('s = "你好"', mono, 40, measure);
    expect(mixed[0]?.fragments.map((f) => f.style.font)).toEqual(['mono', 'body', 'mono']);
  });

  it('recognises text that needs no Markdown parsing', () => {
    expect(isPlainText('你好，世界！\n第二行 22:00 @alice thanks!')).toBe(true);
    for (const md of ['**b**', '`c`', '# h', '- item', '1. item', '> q', 'a | b', 'https://x.io', 'www.x.io', 'a@b.co', '    code', 'x\n---', '&amp;', '[l](u)']) {
      expect(isPlainText(md)).toBe(false);
    }
  });
});

describe('emoji face fallback', () => {
  // A body face without emoji, an emoji face that has every emoji but draws a skin tone only
  // inside a ZWJ sequence (as Noto Emoji does): 👍🏽 is shaped as 👍, 🧑🏾‍💻 whole.
  const cov = {
    body: (t: string) => !/\p{Extended_Pictographic}|[\u{1F3FB}-\u{1F3FF}]/u.test(t),
    emoji: () => true,
    emojiKeeps: (t: string) => !/[\u{1F3FB}-\u{1F3FF}]/u.test(t) || t.includes('\u200d'),
  };
  const pieces = (text: string) => splitFallback([{ text, style: body }], cov).map((r) => `${r.style.font}:${r.text}`);

  it('draws a skin tone the face would swallow after its base, as a run of its own; sequences it draws whole stay whole', () => {
    expect(pieces('ok 👍🏽 and 🧑🏾‍💻 👍')).toEqual(['body:ok ', 'emoji:👍', 'emoji:🏽', 'body: and ', 'emoji:🧑🏾‍💻', 'body: ', 'emoji:👍']);
    expect(pieces('👍🏽👍🏿')).toEqual(['emoji:👍', 'emoji:🏽', 'emoji:👍', 'emoji:🏿']);
    // Each piece has its own style object, so the line layout does not merge them back into one
    // fragment (which would be shaped as one glyph again).
    const runs = splitFallback([{ text: '👍🏽', style: body }], cov);
    expect(runs[0]!.style).not.toBe(runs[1]!.style);
    expect(layoutRuns(runs, 100, measure)[0]!.fragments.map((f) => f.text)).toEqual(['👍', '🏽']);
  });

  it('in code blocks too: the swallowed tone is a fragment of its own, with its own width', () => {
    const code = layoutCode('x 👍🏽👍🏿 🧑🏾‍💻', mono, 100, measure, cov);
    expect(code[0]!.fragments.map((f) => `${f.style.font}:${f.text}`)).toEqual(['mono:x ', 'emoji:👍', 'emoji:🏽', 'emoji:👍', 'emoji:🏿', 'mono: ', 'emoji:🧑🏾‍💻']);
    expect(code[0]!.fragments[2]!.width).toBeGreaterThan(0);
  });

  it('leaves emoji alone when the face keeps every code point, or cannot tell', () => {
    expect(pieces('👍🏽')).toEqual(['emoji:👍', 'emoji:🏽']);
    expect(splitFallback([{ text: '👍🏽', style: body }], { body: cov.body, emoji: cov.emoji }).map((r) => r.text)).toEqual(['👍🏽']);
    expect(splitFallback([{ text: '👍🏽', style: body }], { ...cov, emojiKeeps: () => true }).map((r) => r.text)).toEqual(['👍🏽']);
  });
});
