// Shared argument schemas: every id that becomes part of a path or a lookup is validated here.
import { z } from 'zod';
import { isValidTimezone, LANGUAGE_TAG } from '../config.js';
import { PARTICIPANT_NAME } from '../identity/names.js';
import { descriptionWeight, MAX_DESCRIPTION_WEIGHT, ROOM_ID, ROOM_NAME } from '../rooms/rules.js';

/**
 * A string that cannot be a room or message id names no room or message: the call answers
 * `room_not_found` / `message_not_found` like any other unknown id (`validationError`), and the
 * id never reaches a lookup or a path. A missing id or one that is not a string stays a
 * `validation_error`.
 */
export const NOT_A_ROOM_ID = 'not a room id';
export const NOT_A_MESSAGE_ID = 'not a message id';
export const roomId = z.string().regex(ROOM_ID, NOT_A_ROOM_ID);
export const messageId = z.string().uuid(NOT_A_MESSAGE_ID);
/** Checked in the NFC form the name is stored in (a decomposed é is one character, not two). */
export const participantName = z
  .string()
  .max(256)
  .refine((s) => PARTICIPANT_NAME.test(s.normalize('NFC')), 'must be 1–32 letters, digits, "_", "-" or "." (no spaces, no "@")')
  // What MCP clients are shown (tools/list): the shape, not the 256 that bounds the check's cost.
  .meta({ pattern: PARTICIPANT_NAME.source, maxLength: 32 });
export const roomName = z
  .string()
  .regex(ROOM_NAME, 'must start with an English letter and use only English letters, digits, space, "_" and "-" (at most 64)');
export const roomDescription = z
  .string()
  .refine((s) => descriptionWeight(s) <= MAX_DESCRIPTION_WEIGHT, 'at most 10 CJK characters or 30 other characters');
export const password = z.string().min(1).max(256);
export const timezone = z.string().max(64).refine(isValidTimezone, 'unknown time zone');
export const language = z.string().regex(LANGUAGE_TAG, 'not a language tag like zh-CN');
export const shortText = z.string().max(2000);
export const stringList = z.array(z.string().max(200)).max(50);

/**
 * A string of at most `max` characters, counted as the contract counts them: code points, so an
 * emoji is one character, not two UTF-16 units (the length in units bounds the count's cost).
 */
export function chars(max: number) {
  return z
    .string()
    .max(max * 2)
    .refine((s) => s.length <= max || [...s].length <= max, `at most ${max} characters`)
    // JSON Schema's maxLength counts code points too: MCP clients are shown the real limit.
    .meta({ maxLength: max });
}
