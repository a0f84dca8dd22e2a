// `@Name` parsing (SPEC §6.1.5): member names, longest match, case-insensitive, ending at
// whitespace, punctuation (CJK punctuation included) or the end of the text.

const BOUNDARY = /[\s\p{P}\p{S}]/u;

/** Returns mentioned member names (as the members spell them), in text order, without duplicates. */
export function parseMentions(text: string, memberNames: readonly string[]): string[] {
  if (!text.includes('@') || memberNames.length === 0) return [];
  const candidates = [...memberNames].sort((a, b) => b.length - a.length);
  const lowerText = text.toLowerCase();
  const found: string[] = [];
  for (let at = lowerText.indexOf('@'); at !== -1; at = lowerText.indexOf('@', at + 1)) {
    for (const name of candidates) {
      const end = at + 1 + name.length;
      if (lowerText.slice(at + 1, end) !== name.toLowerCase()) continue;
      const next = text.slice(end, end + 2);
      const nextChar = next.length > 0 ? String.fromCodePoint(next.codePointAt(0)!) : '';
      if (nextChar !== '' && !BOUNDARY.test(nextChar)) continue;
      if (!found.includes(name)) found.push(name);
      break;
    }
  }
  return found;
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
