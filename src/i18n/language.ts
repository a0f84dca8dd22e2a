// The two languages the server writes (SPEC §7): Chinese (zh-CN) and English (en). Every text
// the server produces for people is written in both here or next to where it is used, never
// machine-translated at run time. Any other language tag falls back to one of the two.

export type Lang = 'zh-CN' | 'en';

/** A text written in both languages. */
export type Localized<T = string> = Record<Lang, T>;

/** zh* → zh-CN, en* → en, anything else (or nothing) → null. */
export function knownLang(tag: string | null | undefined): Lang | null {
  const t = tag?.trim().toLowerCase() ?? '';
  if (t === 'zh' || t.startsWith('zh-') || t.startsWith('zh_')) return 'zh-CN';
  if (t === 'en' || t.startsWith('en-') || t.startsWith('en_')) return 'en';
  return null;
}

/**
 * The language a room or a setting names: zh* is Chinese, anything else English (a room in
 * `fr` reads the English texts, the lingua franca of the two we write).
 */
export function langOf(tag: string | null | undefined): Lang {
  return knownLang(tag) ?? 'en';
}

/**
 * The first of our two languages an `Accept-Language` header asks for, by its q-values
 * (`fr, en;q=0.8, zh;q=0.9` → zh-CN); null when it names neither (or is missing or malformed),
 * so the caller falls back to the room's language, then DEFAULT_LANGUAGE.
 */
export function acceptedLang(header: string | null | undefined): Lang | null {
  if (!header) return null;
  let best: { lang: Lang; q: number } | null = null;
  // A header is short; a hostile long one is cut rather than parsed whole.
  for (const part of header.slice(0, 1000).split(',')) {
    const [tag, ...params] = part.split(';');
    const lang = knownLang(tag);
    if (!lang) continue;
    const qParam = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    const q = qParam ? Number(qParam.slice(2)) : 1;
    if (!Number.isFinite(q) || q <= 0) continue;
    if (!best || q > best.q) best = { lang, q };
  }
  return best?.lang ?? null;
}

/** SPEC §7: Accept-Language when it names zh or en, else the room's language, else DEFAULT_LANGUAGE. */
export function callerLang(acceptLanguage: string | null | undefined, roomLanguage: string | null | undefined, defaultLanguage: string): Lang {
  return acceptedLang(acceptLanguage) ?? (roomLanguage ? langOf(roomLanguage) : langOf(defaultLanguage));
}

/** Picks the text of one language. */
export function say<T>(lang: Lang, text: Localized<T>): T {
  return text[lang];
}
