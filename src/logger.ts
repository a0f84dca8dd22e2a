// Structured JSON logs (pino). Message texts and tokens are never logged at info level.
import { pino, type Logger } from 'pino';

export type { Logger };

export function createLogger(level: string): Logger {
  return pino({
    level,
    base: undefined,
    redact: { paths: ['token', '*.token', 'authorization', '*.authorization', 'password', '*.password'], censor: '[redacted]' },
  });
}

/** A logger that drops everything: for unit tests and tools that run in-process. */
export const silentLogger: Logger = pino({ level: 'silent' });
