// Error codes of SPEC §7. These are the only errors that cross the wire; anything else
// becomes `internal_error` without detail.

export const ERROR_STATUS = {
  validation_error: 400,
  unauthorized: 401,
  forbidden: 403,
  not_a_member: 403,
  wrong_password: 403,
  not_found: 404,
  room_not_found: 404,
  message_not_found: 404,
  unknown_tool: 404,
  name_taken: 409,
  not_your_turn: 409,
  cannot_skip: 409,
  room_paused: 409,
  conflict: 409,
  room_full: 409,
  payload_too_large: 413,
  rate_limited: 429,
  internal_error: 500,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

/** A message already written per language (zh-CN, en), for one that is built at run time. */
export interface ErrorTexts {
  readonly 'zh-CN'?: string;
  readonly en?: string;
}

export class AppError extends Error {
  /**
   * The message in each language, when the thrower wrote them (schema errors); otherwise
   * src/i18n/errors.ts translates `message` (English) where the error is answered.
   */
  texts?: ErrorTexts;
  /** Set once the message is in the caller's language (the registry did it): kept as it is. */
  localized?: true;

  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: unknown,
  ) {
    super(message);
    this.name = 'AppError';
  }

  get status(): number {
    return ERROR_STATUS[this.code];
  }
}

export interface WireError {
  code: ErrorCode;
  message: string;
  details?: unknown;
}

/** Turns anything thrown into a wire error; unknown errors never leak their message or stack. */
export function toWireError(err: unknown): WireError {
  if (err instanceof AppError) {
    return err.details === undefined
      ? { code: err.code, message: err.message }
      : { code: err.code, message: err.message, details: err.details };
  }
  return { code: 'internal_error', message: 'Internal server error' };
}

export function isAppError(err: unknown, code?: ErrorCode): err is AppError {
  return err instanceof AppError && (code === undefined || err.code === code);
}
