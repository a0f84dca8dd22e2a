// Abuse limits shared by every transport: per token (participant) and per client address,
// over a sliding 10 s window. Defaults leave a busy agent (long-polling wait_for_turn and
// posting every turn) far below the limit.
//
// Where the counters live is the caller's choice (`limiters`): this process's memory by
// default, or a table every node shares (STORE=postgres: src/storage/postgres/rate-limits.ts),
// so that a client spreading its calls over N nodes still gets one budget (SPEC §11).
import { LRUCache } from 'lru-cache';
import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import type { Config } from '../config.js';
import { AppError } from '../errors.js';
import { addressKey } from './address.js';

export const RATE_WINDOW_S = 10;
/**
 * Room passwords a participant may set per minute (create_room, update_room): each is a scrypt
 * hash (~40 ms of a thread-pool thread the file store also needs), so a flood of them would slow
 * every other caller's writes; the call budget alone allows hundreds a second.
 */
export const PASSWORD_SETS_PER_MINUTE = 10;

export interface RateLimitOptions {
  /** Calls per 10 s per participant; 0 disables. */
  perToken: number;
  /** Calls per 10 s per client address; 0 disables. */
  perAddress: number;
  /** Registrations (successful or refused) per hour per address; 0 disables. */
  registerPerHour?: number;
  /** Password logins per minute per address; 0 disables. */
  loginPerMinute?: number;
  /** MCP sessions opened (`initialize`) per minute per address; 0 disables. */
  mcpInitPerMinute?: number;
  /** Room passwords set per minute per participant (default PASSWORD_SETS_PER_MINUTE); 0 disables. */
  passwordSetsPerMinute?: number;
  /** Builds each limiter (default: counters in this process's memory). */
  limiters?: LimiterFactory;
}

/** What a limiter does: takes a point, or rejects with RateLimiterRes when the key is over its limit. */
interface Limiter {
  consume(key: string): Promise<RateLimiterRes>;
}

/** One limiter: `keyPrefix` keeps the limiters' keys apart where they share a table. */
export type LimiterFactory = (spec: { keyPrefix: string; points: number; duration: number }) => Limiter;

const inMemory: LimiterFactory = (spec) => new RateLimiterMemory(spec);

export class RateLimits {
  private readonly byToken: Limiter | null;
  private readonly byAddress: Limiter | null;
  private readonly registrations: Limiter | null;
  private readonly logins: Limiter | null;
  private readonly mcpInits: Limiter | null;
  private readonly passwordSets: Limiter | null;

  constructor(options: RateLimitOptions) {
    const make = options.limiters ?? inMemory;
    const limiter = (keyPrefix: string, points: number | undefined, duration: number): Limiter | null =>
      points !== undefined && points > 0 ? make({ keyPrefix, points, duration }) : null;
    this.byToken = limiter('token', options.perToken, RATE_WINDOW_S);
    this.byAddress = limiter('address', options.perAddress, RATE_WINDOW_S);
    this.registrations = limiter('register', options.registerPerHour, 3600);
    this.logins = limiter('login', options.loginPerMinute, 60);
    this.mcpInits = limiter('mcp-init', options.mcpInitPerMinute, 60);
    this.passwordSets = limiter('password-set', options.passwordSetsPerMinute ?? PASSWORD_SETS_PER_MINUTE, 60);
  }

  static fromConfig(config: Config, limiters?: LimiterFactory): RateLimits {
    return new RateLimits({
      ...(limiters ? { limiters } : {}),
      perToken: config.rateLimitPerToken,
      perAddress: config.rateLimitPerAddress,
      registerPerHour: config.rateLimitRegisterPerHour,
      loginPerMinute: config.rateLimitLoginPerMinute,
      mcpInitPerMinute: config.rateLimitMcpInitPerMinute,
    });
  }

  /**
   * Counts one call against the client address. The registry calls this before it looks at the
   * tool name or the token, so unknown tools and bad tokens cost the address like any call.
   */
  consumeAddress(address: string | null): Promise<void> {
    return keyed(this.byAddress, address);
  }

  /**
   * Counts one registration attempt (`register_agent`, `register_user`) against the address,
   * whatever its outcome: refused names cost like accepted ones, so names cannot be probed
   * and the participant files cannot be grown faster than this (SPEC §10).
   */
  consumeRegistration(address: string | null): Promise<void> {
    return keyed(this.registrations, address, 'Too many registrations from this address; try again later');
  }

  /** Counts one password login against the address (guessing many names from one place). */
  consumeLogin(address: string | null): Promise<void> {
    return keyed(this.logins, address, 'Too many login attempts from this address; try again later');
  }

  /** Counts one new MCP session (`initialize`) against the address. */
  consumeMcpInitialize(address: string | null): Promise<void> {
    return keyed(this.mcpInits, address, 'Too many new MCP sessions from this address; try again later');
  }

  /** Counts one room password about to be hashed against the participant who sets it. */
  consumePasswordSet(participantId: string): Promise<void> {
    return this.passwordSets ? take(this.passwordSets, participantId, 'Too many room passwords set; try again in a minute') : Promise.resolve();
  }

  /** Counts one call against the participant (once the token is known to be valid). */
  consumeParticipant(participantId: string | null): Promise<void> {
    return participantId && this.byToken ? take(this.byToken, participantId) : Promise.resolve();
  }
}

function keyed(limiter: Limiter | null, address: string | null, message?: string): Promise<void> {
  const key = addressKey(address);
  return key && limiter ? take(limiter, key, message) : Promise.resolve();
}

/** Takes a point; throws `rate_limited` (with retry_after_ms) when the key is over its limit. */
async function take(limiter: Limiter, key: string, message = 'Too many requests; slow down'): Promise<void> {
  try {
    await limiter.consume(key);
  } catch (err) {
    if (err instanceof RateLimiterRes) {
      throw new AppError('rate_limited', message, { retry_after_ms: err.msBeforeNext });
    }
    throw err;
  }
}

/**
 * The key a password failure is counted under: the name (or room) together with the guessing
 * address, never the name alone, so a flood of wrong guesses from one address slows only that
 * address and the owner logging in from elsewhere is never locked out (SPEC §10).
 */
export function failureKey(subject: string, address: string | null | undefined): string {
  return `${subject}\u0000${addressKey(address) ?? 'local'}`;
}

/**
 * Slows repeated password failures (people's logins, room passwords): from the fourth failure
 * for a key on, each attempt first waits 250 ms × 2ⁿ, at most 8 s. A success clears the key.
 *
 * Parallel attempts cannot skip the wait: an attempt counts as a failure from `beforeAttempt`
 * until it reports (`failed`/`succeeded`), and an attempt that would need a delay while another
 * attempt for the same key is still pending is refused at once with `rate_limited` (with
 * retry_after_ms) rather than queued. So a key is tried at most once per delay however many
 * requests arrive together, and no queue of waiting requests builds up in memory.
 * Every `beforeAttempt` must be followed by `failed` or `succeeded`; a pending attempt that
 * never reports (its caller threw) stops blocking the key after `stalePendingMs`.
 */
export class FailureDelay {
  private readonly failures = new LRUCache<string, number>({ max: 100_000 });
  /** Attempts past beforeAttempt that have not reported yet, and when the last one began. */
  private readonly pending = new Map<string, { count: number; since: number }>();

  constructor(
    private readonly sleep: (ms: number) => Promise<void> = (ms) => new Promise((r) => setTimeout(r, ms)),
    private readonly freeFailures = 3,
    private readonly maxDelayMs = 8000,
    private readonly stalePendingMs = 60_000,
    private readonly now: () => number = Date.now,
  ) {}

  async beforeAttempt(key: string): Promise<void> {
    const failures = this.failures.get(key) ?? 0;
    const pending = this.livePending(key);
    // Attempts in flight are counted as the failures they will most likely be.
    const counted = failures + pending;
    if (counted >= this.freeFailures && pending > 0) {
      throw new AppError('rate_limited', 'Another attempt with this password is still pending; try again later', {
        retry_after_ms: this.delayFor(counted),
      });
    }
    this.pending.set(key, { count: pending + 1, since: this.now() });
    if (failures >= this.freeFailures) await this.sleep(this.delayFor(failures));
  }

  failed(key: string): void {
    this.settle(key);
    // Bounded under a flood of distinct keys: the least recently failed are forgotten first.
    this.failures.set(key, (this.failures.get(key) ?? 0) + 1);
  }

  succeeded(key: string): void {
    this.settle(key);
    this.failures.delete(key);
  }

  private delayFor(failures: number): number {
    return Math.min(this.maxDelayMs, 250 * 2 ** (failures - this.freeFailures));
  }

  private livePending(key: string): number {
    const entry = this.pending.get(key);
    if (!entry) return 0;
    if (this.now() - entry.since < this.stalePendingMs) return entry.count;
    this.pending.delete(key);
    return 0;
  }

  private settle(key: string): void {
    const entry = this.pending.get(key);
    if (!entry) return;
    if (entry.count > 1) entry.count -= 1;
    else this.pending.delete(key);
  }
}
