// Reconnect delays: exponential growth up to a cap, with jitter so that many clients dropped
// together (a server restart) do not all come back in the same millisecond.

export interface BackoffOptions {
  /** First delay (default 250 ms). */
  initialMs: number;
  /** Largest delay (default 10 s). */
  maxMs: number;
  /** Growth per attempt (default 2). */
  factor: number;
  /** Share of the delay that is random, 0..1 (default 0.5: between 50 % and 100 % of it). */
  jitter: number;
}

export const BACKOFF_DEFAULTS: Readonly<BackoffOptions> = { initialMs: 250, maxMs: 10_000, factor: 2, jitter: 0.5 };

/** Delay before reconnect attempt `attempt` (0 = the first retry). */
export function backoffDelay(attempt: number, options: BackoffOptions = BACKOFF_DEFAULTS, random: () => number = Math.random): number {
  const base = Math.min(options.maxMs, options.initialMs * options.factor ** Math.max(0, attempt));
  const jitter = Math.min(1, Math.max(0, options.jitter));
  return Math.round(base * (1 - jitter + jitter * random()));
}
