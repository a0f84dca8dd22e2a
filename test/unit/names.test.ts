// Participant names (SPEC §3): NFC, invisible characters refused, UTS #39 look-alikes collide.
import { describe, expect, it } from 'vitest';
import { checkParticipantName, confusable, isValidParticipantName, nameKey, nameProblem, skeleton } from '../../src/identity/names.js';

describe('participant names', () => {
  it('accepts names of letters in any script, digits and _ . -', () => {
    for (const name of ['Alice', 'bot_1', 'Claude.Code-2', '小明', 'Дмитрий', 'Élodie', 'नमस्ते', 'a'.repeat(32), 'bot٣', 'बॉट७']) {
      expect(isValidParticipantName(name), name).toBe(true);
    }
  });

  it('refuses spaces, @, empty and over-long names', () => {
    for (const name of ['', 'a b', 'a@b', 'a'.repeat(33), 'tab\tname']) expect(nameProblem(name), JSON.stringify(name)).not.toBeNull();
  });

  it('takes decimal digits of any script as digits, and no other numbers (², ½, Ⅻ, ①)', () => {
    for (const name of ['n²x', 'n½x', 'nⅫx', 'bot①']) expect(nameProblem(name), name).not.toBeNull();
  });

  it('refuses invisible characters: default-ignorables, variation selectors, fillers', () => {
    for (const name of [
      'Alice\u034f', // COMBINING GRAPHEME JOINER (a mark, but draws nothing)
      'Al\u200bice', // ZERO WIDTH SPACE
      'Ali\u200dce', // ZERO WIDTH JOINER
      'A\ufe0flice', // VARIATION SELECTOR-16
      'Alice\u{e0100}', // VARIATION SELECTOR-17
      '\u3164', // HANGUL FILLER (a letter by category)
      'Bob\u115f',
      'Al\u00adice', // SOFT HYPHEN
      'Alice\u180b', // MONGOLIAN FREE VARIATION SELECTOR ONE
    ]) {
      expect(nameProblem(name), JSON.stringify(name)).toMatch(/invisible|letters/);
    }
  });

  it('refuses a lone combining mark and names made of combining marks', () => {
    for (const name of ['\u0301', '\u0301\u0302\u0303', '\u0301abc', '_\u0301', 'a.\u0308']) {
      expect(nameProblem(name), JSON.stringify(name)).not.toBeNull();
    }
    expect(nameProblem('e\u0301')).toBeNull(); // a mark on a letter is fine (é)
  });

  it('keys names by the default (locale-independent) lower case: Turkish İ, final sigma, ß, Deseret', () => {
    for (const name of ['İstanbul', 'ΌΣΟΣ', 'Straße', 'ǅemal', '𐐀bc', 'ӀҪ']) {
      expect(nameKey(name)).toBe(name.normalize('NFC').toLocaleLowerCase('und'));
    }
    expect(nameKey('ΌΣΟΣ')).toBe('όσος');
    expect(nameKey('İstanbul')).toBe('i\u0307stanbul');
  });

  it('stores the NFC form', () => {
    expect(checkParticipantName('E\u0301lodie')).toBe('\u00c9lodie');
    expect(() => checkParticipantName('Alice\u034f')).toThrowError(expect.objectContaining({ code: 'validation_error' }));
    expect(nameKey('E\u0301LODIE')).toBe(nameKey('élodie'));
  });

  it('finds look-alike names by their UTS #39 skeleton, case-insensitively', () => {
    const pairs: Array<[string, string]> = [
      ['Alice', '\u0410lice'], // Cyrillic А
      ['alice', '\u0430lice'], // Cyrillic а
      ['Alice', '\u0430lice'], // and case-insensitively
      ['paypal', 'p\u0430yp\u0430l'],
      ['Rust', 'ℝ𝓊𝓈𝓉'],
      ['Il1', 'lll'],
      ['bot0', 'botO'],
      ['Alice', '\u0430LICE'],
      ['ALICE', 'alice'],
    ];
    for (const [a, b] of pairs) expect(confusable(a, b), `${a} ~ ${b}`).toBe(true);
    for (const [a, b] of [['Alice', 'Alicia'], ['小明', '小朋'], ['bob', 'bop'], ['Bot', 'Bat']]) {
      expect(confusable(a, b), `${a} ≁ ${b}`).toBe(false);
    }
    expect(skeleton('\u0410lice')).toBe('Alice');
  });
});
