// Structured JSON logs (pino). Message texts, tokens and passwords are never logged: log calls
// pass named fields only (ids, tool names, outcomes), never request arguments or records —
// test/integration/observability.test.ts checks the output. (pino's `redact` would cost ~10 µs on
// every line.)
import { pino, type Logger } from 'pino';

export type { Logger };

/** JSON lines on stdout, written asynchronously (a write per call would slow every call). */
export function createLogger(level: string): Logger {
  return pino(
    {
      level,
      base: undefined,
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
