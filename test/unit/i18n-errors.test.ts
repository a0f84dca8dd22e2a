// Every error code has a message in both languages, and every message the server throws has
// its Chinese (SPEC §7: `code` never changes, `message` is in the caller's language).
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { AppError, ERROR_STATUS } from '../../src/errors.js';
import { chineseOf, ERROR_CODES, ERROR_TEXTS, errorMessage, localizeError, wireErrorIn } from '../../src/i18n/errors.js';
import { acceptedLang, callerLang } from '../../src/i18n/language.js';

const CJK = /[\u4e00-\u9fff]/;

async function sourceFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await sourceFiles(full)));
    else if (entry.name.endsWith('.ts')) out.push(full);
  }
  return out;
}

describe('error messages in two languages', () => {
  it('walks every error code of SPEC §7 in zh-CN and en', () => {
    expect(ERROR_CODES.sort()).toEqual(
      [
        'validation_error', 'unauthorized', 'forbidden', 'not_a_member', 'wrong_password', 'not_found', 'room_not_found',
        'message_not_found', 'unknown_tool', 'name_taken', 'not_your_turn', 'cannot_skip', 'room_paused', 'conflict',
        'room_full', 'payload_too_large', 'rate_limited', 'internal_error',
      ].sort(),
    );
    for (const code of ERROR_CODES) {
      const zh = ERROR_TEXTS[code]['zh-CN'];
      const en = ERROR_TEXTS[code].en;
      expect(zh, code).toMatch(CJK);
      expect(en, code).not.toMatch(CJK);
      expect(en.length, code).toBeGreaterThan(3);
      // A message unknown to the catalogue still reads as the code's sentence in Chinese.
      const err = new AppError(code, 'some message nobody listed');
      const zhWire = wireErrorIn(err, 'zh-CN');
      expect(zhWire.code).toBe(code);
      expect(zhWire.message).toBe(zh);
      const enWire = wireErrorIn(err, 'en');
      expect(enWire).toEqual({ code, message: 'some message nobody listed' });
    }
    expect(Object.keys(ERROR_STATUS).length).toBe(ERROR_CODES.length);
  });

  it('translates the known messages with their variable parts carried over', () => {
    expect(chineseOf('It is not your turn')).toBe('现在不是你的发言轮次');
    expect(chineseOf('The name "Alice" is taken')).toBe('名字“Alice”已被占用');
    expect(chineseOf('text_content is longer than 32000 characters')).toBe('text_content 超过了 32000 个字符');
    expect(chineseOf('room_name: must start with an English letter and use only English letters, digits, space, "_" and "-" (at most 64)')).toBe(
      'room_name：须以英文字母开头，只能使用英文字母、数字、空格、“_”和“-”（最多 64 个）',
    );
  });

  it('keeps code and details, and localises once', () => {
    const err = new AppError('conflict', 'A round is already running', { reason: 'round_running' });
    const zh = localizeError(err, 'zh-CN') as AppError;
    expect(zh.code).toBe('conflict');
    expect(zh.details).toEqual({ reason: 'round_running' });
    expect(zh.message).toBe('已有一轮正在进行');
    // A transport further out does not translate it again.
    expect(localizeError(zh, 'en')).toBe(zh);
    expect(wireErrorIn(new Error('secret stack detail'), 'zh-CN')).toEqual({ code: 'internal_error', message: '服务器内部错误。' });
  });

  it('uses texts the thrower wrote for both languages', () => {
    const err = new AppError('validation_error', 'limit: Too big');
    err.texts = { en: 'limit: Too big', 'zh-CN': 'limit：太大' };
    expect(errorMessage(err, 'zh-CN')).toBe('limit：太大');
    expect(errorMessage(err, 'en')).toBe('limit: Too big');
  });

  it('has the Chinese of every message the server throws with a literal text', async () => {
    const root = path.resolve(__dirname, '../../src');
    const missing: string[] = [];
    let seen = 0;
    for (const file of await sourceFiles(root)) {
      const text = await readFile(file, 'utf8');
      // new AppError('code', 'text' | "text" | `text ${x}`) and the engine's refuse('code', …).
      const calls = /(?:new AppError|refuse)\(\s*'([a-z_]+)',\s*(?:'((?:\\.|[^'\\])*)'|"((?:\\.|[^"\\])*)"|`((?:\\.|[^`\\])*)`)/g;
      for (const m of text.matchAll(calls)) {
        const raw = (m[2] ?? m[3] ?? m[4] ?? '').replace(/\\(.)/g, '$1');
        // A template's ${…} stands for a variable part: any sample fills it.
        const sample = raw.replace(/\$\{(?:[^{}]|\{[^{}]*\})*\}/g, 'x1');
        seen++;
        if (chineseOf(sample) === null) missing.push(`${path.relative(root, file)}: ${m[1]} "${sample}"`);
      }
    }
    expect(seen).toBeGreaterThan(60);
    expect(missing).toEqual([]);
  });
});

describe('the caller language', () => {
  it('reads Accept-Language by q-value, zh* and en* only', () => {
    expect(acceptedLang('en')).toBe('en');
    expect(acceptedLang('en-GB,en;q=0.9')).toBe('en');
    expect(acceptedLang('zh-TW')).toBe('zh-CN');
    expect(acceptedLang('fr, en;q=0.5, zh;q=0.8')).toBe('zh-CN');
    expect(acceptedLang('fr, de;q=0.5')).toBeNull();
    expect(acceptedLang('en;q=0')).toBeNull();
    expect(acceptedLang('')).toBeNull();
    expect(acceptedLang(null)).toBeNull();
  });

  it('falls back to the room language, then DEFAULT_LANGUAGE', () => {
    expect(callerLang('fr', 'en', 'zh-CN')).toBe('en');
    expect(callerLang('fr', null, 'zh-CN')).toBe('zh-CN');
    expect(callerLang(null, null, 'en')).toBe('en');
    expect(callerLang('en', 'zh-CN', 'zh-CN')).toBe('en');
    expect(callerLang(undefined, 'zh-CN', 'en')).toBe('zh-CN');
  });
});

describe('the standing notice', () => {
  it('names who paused the room, in the room language, one sentence per condition', async () => {
    const { systemAnnouncement } = await import('../../src/i18n/room-texts.js');
    const none = { pausedBy: null, guardTripped: false, noAgentOnline: false };
    expect(systemAnnouncement('zh-CN', none)).toBe('');
    expect(systemAnnouncement('en', { ...none, pausedBy: 'Ann' })).toBe('The room was paused by Ann; agents do not speak until it is resumed.');
    expect(systemAnnouncement('zh-CN', { ...none, pausedBy: 'Ann' })).toContain('Ann');
    // A room paused before the name was kept still says it is paused.
    expect(systemAnnouncement('en', { ...none, pausedBy: '' })).toBe('The room is paused; agents do not speak until it is resumed.');
    const all = systemAnnouncement('en', { pausedBy: 'Ann', guardTripped: true, noAgentOnline: true });
    expect(all).toContain('paused by Ann');
    expect(all).toContain('round limit');
    expect(all).toContain('No agent of this room is online.');
  });
});
