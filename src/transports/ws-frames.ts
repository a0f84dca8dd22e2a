// Parsing of client frames: text → one validated ClientFrame, or a validation error that says
// what was wrong (and, for a call, the id to answer it with).
import { z } from 'zod';
import { AppError } from '../errors.js';
import { validationError } from '../tools/registry.js';
import { roomId } from '../protocol/schemas.js';
import type { ClientFrame } from '../protocol/frames.js';

const callId = z.union([z.string().min(1).max(128), z.number().int().safe()]);

const clientFrame = z.discriminatedUnion('type', [
  z.object({ type: z.literal('auth'), token: z.string().min(1).max(512) }),
  z.object({ type: z.literal('subscribe'), room_id: roomId, after_seq: z.number().int().min(0).optional() }),
  z.object({ type: z.literal('unsubscribe'), room_id: roomId }),
  z.object({ type: z.literal('call'), id: callId, tool: z.string().min(1).max(100), args: z.unknown().optional() }),
  z.object({ type: z.literal('ping') }),
]);

export type ParsedFrame =
  | { ok: true; frame: ClientFrame }
  /** `callId` is set when the frame was a call with a usable id: answer it with a result. */
  | { ok: false; error: AppError; callId?: string | number };

export function parseClientFrame(text: string): ParsedFrame {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return { ok: false, error: new AppError('validation_error', 'Frame is not valid JSON') };
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    return { ok: false, error: new AppError('validation_error', 'Frame must be a JSON object with a "type"') };
  }
  const parsed = clientFrame.safeParse(raw);
  if (parsed.success) return { ok: true, frame: parsed.data as ClientFrame };
  const type = (raw as { type?: unknown }).type;
  if (typeof type !== 'string' || !['auth', 'subscribe', 'unsubscribe', 'call', 'ping'].includes(type)) {
    return {
      ok: false,
      error: new AppError('validation_error', `Unknown frame type ${JSON.stringify(type ?? null)}`, {
        expected: ['auth', 'subscribe', 'unsubscribe', 'call', 'ping'],
      }),
    };
  }
  const id = callId.safeParse((raw as { id?: unknown }).id);
  const error = validationError(parsed.error);
  return type === 'call' && id.success ? { ok: false, error, callId: id.data } : { ok: false, error };
}
