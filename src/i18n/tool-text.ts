// Tool descriptions are written in both languages where each tool is defined; the registry
// holds the one in DEFAULT_LANGUAGE (SPEC §7: MCP clients are shown it; zh-CN by default).
import { langOf, type Localized } from './language.js';

/** Picks the description in DEFAULT_LANGUAGE (`en` for English, Chinese for zh*, else English). */
export function describer(defaultLanguage: string): (text: Localized) => string {
  const lang = langOf(defaultLanguage);
  return (text) => text[lang];
}
