// Structured JSON logs (pino). Message texts and tokens are never logged at info level.
import { pino, type Logger } from 'pino';

export type { Logger };

/** JSON lines on stdout, written asynchronously (a write per call would slow every call). */
export function createLogger(level: string): Logger {
  return pino(
    {
      level,
      base: undefined,
      redact: { paths: ['token', '*.token', 'authorization', '*.authorization', 'password', '*.password'], censor: '[redacted]' },
    },
    pino.destination({ dest: 1, sync: false }),
  );
}

/** Writes out buffered log lines (before the process exits). */
export function flushLogger(logger: Logger): Promise<void> {
  return new Promise((resolve) => logger.flush(() => resolve()));
}

/** A logger that drops everything: for unit tests and tools that run in-process. */
export const silentLogger: Logger = pino({ level: 'silent' });
