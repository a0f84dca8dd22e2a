// @ts-check
// The page's wording: one dictionary per language (locales/zh-CN.js, locales/en.js), the
// choice remembered in localStorage. `t(key, params)` fills `{name}` placeholders. Labels for
// server values (roles, modes, turn reasons, skip records, error codes) are keys too.
import en from './locales/en.js';
import zhCN from './locales/zh-CN.js';

const LANG_KEY = 'agent-chatroom.lang';
/** @type {Record<string, Record<string, string>>} */
export const DICTIONARIES = { 'zh-CN': zhCN, en };
export const LANGUAGES = /** @type {const} */ (['zh-CN', 'en']);

/** @returns {string} */
function initialLang() {
  try {
    const saved = localStorage.getItem(LANG_KEY);
    if (saved && saved in DICTIONARIES) return saved;
  } catch {
    // no storage: the default
  }
  return 'zh-CN';
}

let lang = initialLang();
/** Keys asked for but missing in the current dictionary (tests assert this stays empty). */
export const missingKeys = new Set();
/** @type {any} */ (window).__i18nMissing = missingKeys;

export function getLang() {
  return lang;
}

/** @param {string} next */
export function setLang(next) {
  if (!(next in DICTIONARIES)) return;
  lang = next;
  try {
    localStorage.setItem(LANG_KEY, next);
  } catch {
    // private mode: lasts for the tab
  }
  document.documentElement.lang = next;
}

/**
 * `{n|one|other}` in a text: the singular or the plural word for the number `params.n`, by the
 * language's plural rules ("1 message found", "2 messages found"); Chinese needs none.
 * @param {string} text @param {Record<string, string|number>} params @param {string} language
 */
function plurals(text, params, language) {
  return text.replace(/\{(\w+)\|([^|{}]*)\|([^|{}]*)\}/g, (whole, name, one, other) => {
    if (!(name in params)) return whole;
    return new Intl.PluralRules(language).select(Number(params[name])) === 'one' ? one : other;
  });
}

/**
 * @param {string} key
 * @param {Record<string, string|number>} [params]
 * @returns {string}
 */
export function t(key, params) {
  let text = DICTIONARIES[lang][key];
  let language = lang;
  if (text === undefined) {
    missingKeys.add(`${lang}:${key}`);
    text = DICTIONARIES['zh-CN'][key] ?? key;
    language = 'zh-CN';
  }
  if (!params) return text;
  return plurals(text, params, language).replace(/\{(\w+)\}/g, (whole, name) => (name in params ? String(params[name]) : whole));
}

/** @param {string} role */
export const roleLabel = (role) => t(`role.${role}`);
/** @param {string} mode */
export const modeLabel = (mode) => t(`mode.${mode}`);
/** @param {string} status */
export const statusLabel = (status) => t(`status.${status}`);
/** @param {string} reason */
export const reasonLabel = (reason) => t(`reason.${reason}`);
/** @param {string} presence */
export const presenceLabel = (presence) => t(`presence.${presence}`);
/** @param {string} reason */
export const roundEndLabel = (reason) => t(`roundEnd.${reason}`);

/**
 * The one-line note for an invisible record (skip / timeout / offline / passed); a skip with a
 * reason carries it in its text as `（跳过：reason）` (SPEC v2 §7), shown after the note.
 * @param {string} sender @param {string|null|undefined} reason @param {string} [text]
 */
export function skipNote(sender, reason, text = '') {
  const base = t(`skip.${reason || 'none'}`, { name: sender });
  const why = skipReasonOf(text);
  return why ? `${base}${t('skip.because', { reason: why })}` : base;
}

/** The reason inside a skip record's text `（跳过：reason）`, or ''. @param {string} text */
export function skipReasonOf(text) {
  const m = /^（跳过[：:]\s*([\s\S]*)）$/.exec(String(text || '').trim());
  return m ? m[1].trim() : '';
}

/** A sentence for an ApiError (or any error). @param {any} err */
export function errorText(err) {
  const code = err && err.code;
  if (code && `error.${code}` in DICTIONARIES[lang]) return t(`error.${code}`);
  return (err && err.message) || t('error.unknown');
}

/** Field-level wording for validation issues, keyed by the argument's path. @param {string} path @param {string} [serverMessage] */
export function fieldErrorText(path, serverMessage) {
  const key = `field.${path}`;
  if (key in DICTIONARIES[lang]) return t(key);
  return serverMessage || t('error.validation_error');
}
