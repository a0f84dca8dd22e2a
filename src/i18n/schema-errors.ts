// Messages of arguments that failed their schema, in both languages: zod writes the English; the
// Chinese comes from the same schema parsed again with zod's own zh-CN texts (only when a parse
// failed), and the reasons the schemas write themselves (`refine`) are translated by errors.ts.
import { z } from 'zod';
import { chineseReason } from './errors.js';
import type { Lang, Localized } from './language.js';

const ZH_ISSUES = z.locales.zhCN().localeError;

export interface SchemaMessageOptions {
  /** Path segments put before the issue's own (an import's `data`). */
  prefix?: readonly string[];
  /** What an issue without a path is about. */
  whole?: Localized;
}

/** `path: reason` of the first issue, in `lang`. */
export function schemaMessage(error: z.ZodError, lang: Lang, options: SchemaMessageOptions = {}): string {
  const first = error.issues[0];
  if (!first) return lang === 'en' ? 'Invalid arguments' : '参数无效';
  const path = [...(options.prefix ?? []), ...first.path.map(String)].join('.') || (options.whole?.[lang] ?? (lang === 'en' ? 'arguments' : '参数'));
  return lang === 'en' ? `${path}: ${first.message}` : `${path}：${chineseReason(first.message) ?? first.message}`;
}

/** Both messages of a failed parse of `data` by `schema` (`english` is the first parse's error). */
export function schemaTexts(schema: z.ZodType, data: unknown, english: z.ZodError, options: SchemaMessageOptions = {}): Localized {
  const chinese = schema.safeParse(data, { error: ZH_ISSUES });
  return {
    en: schemaMessage(english, 'en', options),
    'zh-CN': chinese.success ? schemaMessage(english, 'zh-CN', options) : schemaMessage(chinese.error, 'zh-CN', options),
  };
}
