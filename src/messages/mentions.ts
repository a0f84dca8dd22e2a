// `@Name` parsing (SPEC §6.1.5): member names, longest match, case-insensitive, ending at
// whitespace, punctuation (CJK punctuation included) or the end of the text.

const BOUNDARY = /[\s\p{P}\p{S}]/u;

/** Returns mentioned member names (as the members spell them), in text order, without duplicates. */
export function parseMentions(text: string, memberNames: readonly string[]): string[] {
  if (!text.includes('@') || memberNames.length === 0) return [];
  const candidates = [...memberNames].sort((a, b) => b.length - a.length);
  const found: string[] = [];
  for (let at = text.indexOf('@'); at !== -1; at = text.indexOf('@', at + 1)) {
    const name = candidates.find((candidate) => mentionsAt(text, at + 1, candidate));
    if (name !== undefined && !found.includes(name)) found.push(name);
  }
  return found;
}

/**
 * Whether `name` is written at `start` and ends at a boundary. Compared slice by slice, never by
 * indexes into a lowercased copy of the whole text: lowercasing can change lengths (`İ` → `i̇`),
 * which would shift every later position.
 */
function mentionsAt(text: string, start: number, name: string): boolean {
  const end = start + name.length;
  if (text.slice(start, end).toLowerCase() !== name.toLowerCase()) return false;
  const next = text.codePointAt(end);
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
