// `@Name` parsing and merging (src/messages/mentions.ts).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { mergeMentions, parseMentions } from '../../src/messages/mentions.js';
import { growthRatio } from '../helpers/cost.js';

describe('parseMentions', () => {
  it('takes the longest member name that fits', () => {
    expect(parseMentions('hi @Bot.One', ['Bot', 'Bot.One'])).toEqual(['Bot.One']);
    expect(parseMentions('hi @Bot.', ['Bot', 'Bot.One'])).toEqual(['Bot']);
    expect(parseMentions('hi @Bot.Two', ['Bot', 'Bot.One'])).toEqual(['Bot']);
  });

  it('matches case-insensitively and returns the member spelling', () => {
    expect(parseMentions('@bOT and @ALICE', ['Alice', 'Bot'])).toEqual(['Bot', 'Alice']);
  });

  it('does not mention a member whose name is only the start of a longer word', () => {
    expect(parseMentions('@Botany is a science', ['Bot'])).toEqual([]);
    expect(parseMentions('@Bot2 hi', ['Bot'])).toEqual([]);
  });

  it('ends a name at whitespace, ASCII punctuation, CJK punctuation or the end of the text', () => {
    for (const after of [' ', '\n', '\t', ',', '.', '!', '?', ':', ';', ')', '，', '。', '！', '？', '：']) {
      expect(parseMentions(`@Bot${after}more`, ['Bot'])).toEqual(['Bot']);
    }
    expect(parseMentions('ask @Bot', ['Bot'])).toEqual(['Bot']);
  });

  it('finds names in any script', () => {
    expect(parseMentions('请 @小明，然后 @Élodie。再 @Дмитрий！', ['小明', 'élodie', 'Дмитрий'])).toEqual(['小明', 'élodie', 'Дмитрий']);
    // Without a boundary the Chinese text simply continues the name: no mention.
    expect(parseMentions('@小明你好', ['小明'])).toEqual([]);
  });

  it('keeps positions right after characters whose lowercase is longer (İ → i̇)', () => {
    expect(parseMentions('İstanbul @Bot hi', ['Bot'])).toEqual(['Bot']);
    expect(parseMentions('İİ @Bot', ['Bot'])).toEqual(['Bot']);
  });

  it('lists each member once, in text order, and ignores non-members', () => {
    expect(parseMentions('@B @A @b @Nobody', ['A', 'B'])).toEqual(['B', 'A']);
    expect(parseMentions('no mention here', ['A'])).toEqual([]);
    expect(parseMentions('@A', [])).toEqual([]);
    expect(parseMentions('a@@A', ['A'])).toEqual(['A']);
  });
});

describe('mergeMentions', () => {
  it('puts text mentions first, then the explicit list, without duplicates (case-insensitive)', () => {
    expect(mergeMentions(['B'], ['A', 'b', 'C', 'a'])).toEqual(['B', 'A', 'C']);
    expect(mergeMentions([], ['A'])).toEqual(['A']);
    expect(mergeMentions(['A'], [])).toEqual(['A']);
  });
});

/** The earlier quadratic parser, kept as the reference the fast one must agree with. */
function referenceParse(text: string, memberNames: readonly string[]): string[] {
  if (!text.includes('@') || memberNames.length === 0) return [];
  const candidates = [...memberNames].sort((a, b) => b.length - a.length);
  const found: string[] = [];
  for (let at = text.indexOf('@'); at !== -1; at = text.indexOf('@', at + 1)) {
    const name = candidates.find((candidate) => {
      const end = at + 1 + candidate.length;
      if (text.slice(at + 1, end).toLowerCase() !== candidate.toLowerCase()) return false;
      const next = text.codePointAt(end);
      return next === undefined || /[\s\p{P}\p{S}]/u.test(String.fromCodePoint(next));
    });
    if (name !== undefined && !found.includes(name)) found.push(name);
  }
  return found;
}

describe('parseMentions cost (SPEC §10)', () => {
  const members = Array.from({ length: 200 }, (_, i) => `member_${i}.x-${'y'.repeat(i % 20)}`);

  // Linear in the text: one 32,000-character text costs about what ten of its first 3,200 cost
  // (a parser that looked ahead from every "@" over every name would cost ~10 times more).
  it('parses 32,000 "@" against 200 member names in time linear in the text', () => {
    const text = '@'.repeat(32_000);
    expect(parseMentions(text, members)).toEqual([]);
    expect(growthRatio((t) => parseMentions(t, members), text)).toBeLessThan(3);
  });

  it('stays linear on texts built to make every "@" look far ahead', () => {
    const texts = [
      `@${'a.'.repeat(40)}`.repeat(400).slice(0, 32_000),
      `@member_1.x-${'y'.repeat(30)}`.repeat(1000).slice(0, 32_000),
      '@a'.repeat(16_000),
      `@${'İ'.repeat(31)} `.repeat(1000).slice(0, 32_000),
    ];
    for (const text of texts) {
      expect(growthRatio((t) => parseMentions(t, members), text), text.slice(0, 20)).toBeLessThan(3);
    }
  });

  it('finds mentions among 200 members as before', () => {
    const text = members.map((m, i) => (i % 7 === 0 ? `@${m.toUpperCase()}，` : `@${m}x `)).join('');
    expect(parseMentions(text, members)).toEqual(referenceParse(text, members));
    expect(parseMentions(text, members)).toHaveLength(Math.ceil(200 / 7));
  });

  it('agrees with the reference parser on random texts and names', () => {
    const nameChar = fc.constantFrom('a', 'B', 'b', '.', '-', '_', 'İ', 'i', 'ß', 'Σ', 'σ', '小', 'é', 'e\u0301', '1');
    const textChar = fc.oneof(nameChar, fc.constantFrom('@', ' ', '，', '!', '\n', '\u200d', '😀'));
    fc.assert(
      fc.property(
        fc.array(fc.array(nameChar, { minLength: 1, maxLength: 6 }).map((cs) => cs.join('')), { maxLength: 6 }),
        fc.array(textChar, { maxLength: 60 }).map((cs) => cs.join('')),
        (names, text) => {
          const unique = [...new Map(names.map((n) => [n.toLowerCase(), n])).values()];
          expect(parseMentions(text, unique)).toEqual(referenceParse(text, unique));
        },
      ),
      { numRuns: 3000, seed: 16 },
    );
  });
});
