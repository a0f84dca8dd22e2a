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

/** Calls one tool over REST and returns its data, or throws a ChatroomError with the code. */
export async function restCall<T = unknown>(
  baseUrl: string,
  tool: string,
  args: unknown = {},
  token?: string | null,
  signal?: AbortSignal,
): Promise<T> {
  const res = await fetch(`${apiBase(baseUrl)}/api/v1/tools/${encodeURIComponent(tool)}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(args ?? {}),
    ...(signal ? { signal } : {}),
  });
  let body: { ok: boolean; data?: unknown; error?: WireError };
  try {
    body = (await res.json()) as typeof body;
  } catch {
    throw new ChatroomError('http_error', `${tool}: HTTP ${res.status} without a JSON body`);
  }
  if (body.ok) return body.data as T;
  if (body.error) throw ChatroomError.from(body.error);
  throw new ChatroomError('http_error', `${tool}: HTTP ${res.status}`);
}
