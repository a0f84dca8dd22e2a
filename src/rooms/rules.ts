// Room naming rules (SPEC §4) and room ids.
import { randomBytes } from 'node:crypto';
import { formatInTimeZone } from 'date-fns-tz';

/** English letters, digits, space, `_`, `-`; starts with a letter; at most 64 characters. */
export const ROOM_NAME = /^[A-Za-z][A-Za-z0-9 _-]{0,63}$/;

/** room_id as it appears in paths: the slug, a UTC timestamp and a random code. */
export const ROOM_ID = /^[a-z0-9-]{1,120}$/;

const CJK = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}\u3000-\u303f\uff00-\uffef]/u;

/**
 * "≤10 CJK characters or ≤30 other characters": a CJK character weighs 3, anything else 1,
 * and the total may not pass 30 — so pure CJK allows 10, pure Latin 30, mixed in between.
 */
export function descriptionWeight(text: string): number {
  let weight = 0;
  for (const ch of text) weight += CJK.test(ch) ? 3 : 1;
  return weight;
}

export const MAX_DESCRIPTION_WEIGHT = 30;

export function slugify(roomName: string): string {
  return roomName
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 64) || 'room';
}

function randomBase36(length: number): string {
  const bytes = randomBytes(length);
  let out = '';
  for (const b of bytes) out += (b % 36).toString(36);
  return out;
}

export function newRoomId(roomName: string, now: Date): string {
  return `${slugify(roomName)}-${formatInTimeZone(now, 'UTC', 'yyyyMMddHHmmss')}-${randomBase36(10)}`;
}
