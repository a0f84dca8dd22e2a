// REST helpers for the few calls a client makes before it has a socket (register, login).
import type { WireError } from '../errors.js';

/** An error answered by the server (its `code` is one of SPEC §7) or by the client itself. */
export class ChatroomError extends Error {
  constructor(
    /** A server error code, or a client one: `connection_lost`, `closed`, `timeout`, `aborted`, `http_error`. */
    readonly code: string,
    message: string,
    readonly details?: unknown,
  ) {
    super(message);
    this.name = 'ChatroomError';
  }

  static from(error: WireError): ChatroomError {
    return new ChatroomError(error.code, error.message, error.details);
  }
}

/** `http://host:port` (a trailing slash or `/api/v1` is tolerated). */
export function apiBase(baseUrl: string): string {
  return baseUrl.replace(/\/+$/, '').replace(/\/api\/v1$/, '');
}

/**
 * Every REST call ends within this (SPEC §10: every network call of the hooks, runners and the
 * client has a timeout): long enough for wait_for_turn's longest wait (50 s) and a slow answer.
 */
export const REST_TIMEOUT_MS = 70_000;

/**
 * Calls one tool over REST and returns its data, or throws a ChatroomError with the code. A
 * server that does not answer within `timeoutMs` (REST_TIMEOUT_MS) is a `timeout`; the caller's
 * `signal` aborting is `aborted`.
 */
export async function restCall<T = unknown>(
  baseUrl: string,
  tool: string,
  args: unknown = {},
  token?: string | null,
  signal?: AbortSignal,
  timeoutMs: number = REST_TIMEOUT_MS,
): Promise<T> {
  const timeout = AbortSignal.timeout(timeoutMs);
  const stop = signal ? AbortSignal.any([signal, timeout]) : timeout;
  let res: Response;
  let body: { ok: boolean; data?: unknown; error?: WireError };
  try {
    res = await fetch(`${apiBase(baseUrl)}/api/v1/tools/${encodeURIComponent(tool)}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: JSON.stringify(args ?? {}),
      signal: stop,
    });
  } catch (err) {
    throw stopped(tool, timeout, signal) ?? err;
  }
  try {
    body = (await res.json()) as typeof body;
  } catch {
    throw stopped(tool, timeout, signal) ?? new ChatroomError('http_error', `${tool}: HTTP ${res.status} without a JSON body`);
  }
  if (body.ok) return body.data as T;
  if (body.error) throw ChatroomError.from(body.error);
  throw new ChatroomError('http_error', `${tool}: HTTP ${res.status}`);
}

/** The error for a call its timeout or its caller stopped; null when neither did. */
function stopped(tool: string, timeout: AbortSignal, signal: AbortSignal | undefined): ChatroomError | null {
  if (signal?.aborted) return new ChatroomError('aborted', `${tool}: aborted`);
  if (timeout.aborted) return new ChatroomError('timeout', `${tool}: the server did not answer in time`);
  return null;
}
