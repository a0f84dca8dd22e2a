// `@Name` parsing and merging (src/messages/mentions.ts).
import { describe, expect, it } from 'vitest';
import { mergeMentions, parseMentions } from '../../src/messages/mentions.js';

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
