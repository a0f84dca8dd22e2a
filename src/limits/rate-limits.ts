// Abuse limits shared by every transport: per token (participant) and per client address,
// over a sliding 10 s window. Defaults leave a busy agent (long-polling wait_for_turn and
// posting every turn) far below the limit.
import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import { AppError } from '../errors.js';

export const RATE_WINDOW_S = 10;

export interface RateLimitOptions {
  /** Calls per 10 s per participant; 0 disables. */
  perToken: number;
  /** Calls per 10 s per client address; 0 disables. */
  perAddress: number;
}

export class RateLimits {
  private readonly byToken: RateLimiterMemory | null;
  private readonly byAddress: RateLimiterMemory | null;

  constructor(options: RateLimitOptions) {
    this.byToken = options.perToken > 0 ? new RateLimiterMemory({ points: options.perToken, duration: RATE_WINDOW_S }) : null;
    this.byAddress = options.perAddress > 0 ? new RateLimiterMemory({ points: options.perAddress, duration: RATE_WINDOW_S }) : null;
  }

  /** Counts one call; throws `rate_limited` (with retry_after_ms) when a limit is passed. */
  async consume(keys: { participantId?: string | null; address?: string | null }): Promise<void> {
    try {
      if (this.byToken && keys.participantId) await this.byToken.consume(keys.participantId);
      if (this.byAddress && keys.address) await this.byAddress.consume(keys.address);
    } catch (err) {
      if (err instanceof RateLimiterRes) {
        throw new AppError('rate_limited', 'Too many requests; slow down', { retry_after_ms: err.msBeforeNext });
      }
      throw err;
    }
  }
}

/**
 * Slows repeated password failures (people's logins, room passwords): from the fourth failure
 * for a key on, each attempt first waits 250 ms × 2ⁿ, at most 8 s. A success clears the key.
 */
export class FailureDelay {
  private readonly failures = new Map<string, number>();

  constructor(
    private readonly sleep: (ms: number) => Promise<void> = (ms) => new Promise((r) => setTimeout(r, ms)),
    private readonly freeFailures = 3,
    private readonly maxDelayMs = 8000,
  ) {}

  async beforeAttempt(key: string): Promise<void> {
    const count = this.failures.get(key) ?? 0;
    if (count >= this.freeFailures) await this.sleep(Math.min(this.maxDelayMs, 250 * 2 ** (count - this.freeFailures)));
  }

  failed(key: string): void {
    this.failures.set(key, (this.failures.get(key) ?? 0) + 1);
    // Bound memory under a flood of distinct keys.
    if (this.failures.size > 100_000) this.failures.delete(this.failures.keys().next().value!);
  }

  succeeded(key: string): void {
    this.failures.delete(key);
  }
}
