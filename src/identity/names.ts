// Participant names (SPEC §3): 1–32 letters of any script, digits, `_`, `-`, `.`; no spaces, no
// `@`; stored NFC-normalised; no invisible characters; unique case-insensitively and by their
// confusable skeleton (Unicode UTS #39), so `Аlice` (Cyrillic А) cannot sit beside `Alice`.
import unhomoglyph from 'unhomoglyph';
import { AppError } from '../errors.js';

/**
 * The shape a name may have (the tools' schema checks it; `checkParticipantName` does the rest).
 * Digits are decimal digits of any script (`\p{Nd}`: 7, ٧, ७); other numbers (², ½, Ⅻ, ①) are not.
 */
export const PARTICIPANT_NAME = /^[\p{L}\p{M}\p{Nd}_.-]{1,32}$/u;

/**
 * Characters that draw nothing, so two names would look the same with or without them:
 * default-ignorables (U+034F COMBINING GRAPHEME JOINER, U+200B–U+200F, U+2060–U+206F, U+FEFF,
 * the Hangul fillers U+115F/U+1160/U+3164/U+FFA0, U+00AD SOFT HYPHEN, tag characters, …) and
 * variation selectors (U+FE00–U+FE0F, U+E0100–U+E01EF, the Mongolian free variation selectors).
 */
const INVISIBLE = /[\p{Default_Ignorable_Code_Point}\p{Variation_Selector}]/u;

/** Every combining mark sits on a letter or digit: no name starts with one or is made of them. */
const MARKS_ON_BASES = /^(?:[\p{L}\p{Nd}]\p{M}*|[_.-])+$/u;

const MAX_NAME_CODE_POINTS = 32;

/** Why a name is refused, or null when it is fine. The name is checked in its NFC form. */
export function nameProblem(raw: string): string | null {
  const name = raw.normalize('NFC');
  const length = [...name].length;
  if (length < 1 || length > MAX_NAME_CODE_POINTS || !PARTICIPANT_NAME.test(name)) {
    return 'name must be 1–32 letters, digits, "_", "-" or "." (no spaces, no "@")';
  }
  if (INVISIBLE.test(name)) return 'name must not contain invisible characters (joiners, fillers, variation selectors)';
  if (!MARKS_ON_BASES.test(name)) return 'name must not start with a combining mark or put one on "_", "-" or "."';
  return null;
}

export function isValidParticipantName(name: string): boolean {
  return nameProblem(name) === null;
}

/**
 * The name as stored: NFC-normalised. Throws `validation_error` (field `name`) for a name that
 * is malformed or holds invisible characters.
 */
export function checkParticipantName(raw: string): string {
  const problem = nameProblem(raw);
  if (problem !== null) throw new AppError('validation_error', problem, { field: 'name' });
  return raw.normalize('NFC');
}

/**
 * Names are unique case-insensitively across agents and people. Lower case is Unicode's default
 * mapping, the same in every locale (`toLowerCase`, which is what `toLocaleLowerCase('und')`
 * gives, at a fraction of the cost: start-up computes it for every participant).
 */
const ASCII = /^[\x00-\x7f]*$/;

export function nameKey(name: string): string {
  // ASCII is its own NFC form; skipping ICU halves the cost of a start with 100,000 names.
  return (ASCII.test(name) ? name : name.normalize('NFC')).toLowerCase();
}

/** The UTS #39 skeleton: NFD, each character replaced by its confusable prototype, NFD again. */
export function skeleton(name: string): string {
  return unhomoglyph(name.normalize('NFD')).normalize('NFD');
}

/**
 * Keys under which a name is looked up for look-alikes: two names sharing any key look alike.
 * The skeleton is case-sensitive (`I` looks like `l`, `i` does not) while names are unique
 * case-insensitively, so a name has two keys: its skeleton lower-cased and skeletonised again
 * (`Il1` ~ `lll`, `Аlice` with a Cyrillic А ~ `alice`), and the skeleton of its lower-cased form
 * (`аLICE` ~ `Alice`). UTS #39 maps `0` to `O` and `1` to `l`, so `bot1` and `botl` collide as
 * well: they look alike in many fonts.
 */
export function confusableKeys(name: string): string[] {
  const lower = (s: string) => s.toLowerCase();
  const keys = new Set([skeleton(lower(skeleton(name))), skeleton(lower(name))]);
  return [...keys];
}

/** Whether two names look alike (share a confusable key). */
export function confusable(a: string, b: string): boolean {
  const keys = new Set(confusableKeys(a));
  return confusableKeys(b).some((key) => keys.has(key));
}
