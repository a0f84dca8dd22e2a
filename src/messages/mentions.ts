// `@Name` parsing (SPEC §6.1.5): member names, longest match, case-insensitive, ending at
// whitespace, punctuation (CJK punctuation included) or the end of the text.
//
// Cost (SPEC §10): linear in the text, whatever the member count. Member names are put in a map
// from their lower-cased form once per call; then each `@` looks only at the characters after
// it up to the next `@` or whitespace (names contain neither, SPEC §3) and at most as far as the
// longest name, and tries only the positions where a name could end (a boundary). The windows
// of successive `@` never overlap, so the whole text is looked at a bounded number of times:
// a 32,000-character message of `@` costs one map lookup per `@`, none of them a string compare.

const BOUNDARY = /[\s\p{P}\p{S}]/u;
const WHITESPACE = /\s/u;

/** Member names by their lower-cased form (several names may share one; longest first). */
interface NameIndex {
  byLower: Map<string, string[]>;
  /** Longest name, in UTF-16 code units: no mention reaches further from its `@`. */
  maxLength: number;
}

function indexNames(memberNames: readonly string[]): NameIndex {
  const byLower = new Map<string, string[]>();
  let maxLength = 0;
  for (const name of memberNames) {
    if (name.length === 0) continue;
    const key = name.toLowerCase();
    const list = byLower.get(key);
    if (list) list.push(name);
    else byLower.set(key, [name]);
    maxLength = Math.max(maxLength, name.length);
  }
  return { byLower, maxLength };
}

/** Returns mentioned member names (as the members spell them), in text order, without duplicates. */
export function parseMentions(text: string, memberNames: readonly string[]): string[] {
  if (!text.includes('@') || memberNames.length === 0) return [];
  const index = indexNames(memberNames);
  const found: string[] = [];
  const seen = new Set<string>();
  for (let at = text.indexOf('@'); at !== -1; at = text.indexOf('@', at + 1)) {
    const name = longestAt(text, at + 1, index);
    if (name !== undefined && !seen.has(name)) {
      seen.add(name);
      found.push(name);
    }
  }
  return found;
}

/**
 * The longest member name written at `start` and followed by a boundary (or the end). Candidate
 * ends are collected walking forward, then tried longest first. Names are compared slice by
 * slice, never by indexes into a lower-cased copy of the whole text: lower-casing can change
 * lengths (`İ` → `i̇`), which would shift every later position.
 */
function longestAt(text: string, start: number, index: NameIndex): string | undefined {
  const limit = Math.min(text.length, start + index.maxLength);
  const ends: number[] = [];
  let end = start;
  while (end < limit) {
    const cp = text.codePointAt(end)!;
    const char = String.fromCodePoint(cp);
    // Names contain no `@` and no whitespace: nothing reaches past them.
    if (cp === 0x40 || WHITESPACE.test(char)) break;
    end += char.length;
    if (end > limit) break;
    if (end === text.length || isBoundaryAt(text, end)) ends.push(end);
  }
  for (let i = ends.length - 1; i >= 0; i--) {
    const stop = ends[i]!;
    const names = index.byLower.get(text.slice(start, stop).toLowerCase());
    // Same semantics as comparing each name with the slice of its own length.
    const name = names?.find((n) => n.length === stop - start);
    if (name !== undefined) return name;
  }
  return undefined;
}

function isBoundaryAt(text: string, at: number): boolean {
  const next = text.codePointAt(at);
  return next === undefined || BOUNDARY.test(String.fromCodePoint(next));
}

/** Text mentions first, then the explicit `mentions` argument; duplicates removed. */
export function mergeMentions(textMentions: readonly string[], explicit: readonly string[]): string[] {
  const out: string[] = [];
  const seen = new Set<string>();
  for (const name of [...textMentions, ...explicit]) {
    const key = name.toLowerCase();
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(name);
  }
  return out;
}
