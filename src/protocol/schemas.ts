// Shared argument schemas: every id that becomes part of a path or a lookup is validated here.
import { z } from 'zod';
import { isValidTimezone, LANGUAGE_TAG } from '../config.js';
import { PARTICIPANT_NAME } from '../identity/names.js';
import { descriptionWeight, MAX_DESCRIPTION_WEIGHT, ROOM_ID, ROOM_NAME } from '../rooms/rules.js';

export const roomId = z.string().regex(ROOM_ID, 'not a room id');
export const messageId = z.string().uuid('not a message id');
export const participantName = z
  .string()
  .regex(PARTICIPANT_NAME, 'must be 1–32 letters, digits, "_", "-" or "." (no spaces, no "@")');
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
