// Rate-limit counters that every node shares (SPEC §11: rate limits work whichever node a
// client talks to). A small factory so the app's RateLimits (src/limits/rate-limits.ts) can
// build its limiters without knowing where the counters live:
//
//   const limiters = store instanceof PgStore ? postgresLimiters(store.connectionPool) : memoryLimiters;
//   const byToken = limiters({ keyPrefix: 'token', points: perToken, duration: RATE_WINDOW_S });
//   await byToken.consume(participantId);   // rejects with RateLimiterRes when over the limit
//
// On PostgreSQL the counters are rows of the table that 001_initial.sql creates (the store must
// be open), counted by `BatchedPostgresLimiter` (./batched-limiter.ts): one atomic upsert per
// key, with the calls that arrive together on a node counted in one statement, so parallel calls
// on several nodes never let more than `points` through per window. If the database cannot be
// reached, an in-memory limiter with the same limits takes over on that node instead of failing
// the call: limits then hold per node until it is back. Windows use the nodes' clocks (expiry is
// stored in epoch ms, like rate-limiter-flexible's RateLimiterPostgres): keep them in sync.
import type pg from 'pg';
import { RateLimiterMemory, type RateLimiterRes } from 'rate-limiter-flexible';
import { BatchedPostgresLimiter } from './batched-limiter.js';

export const RATE_LIMIT_TABLE = 'chatroom_rate_limits';

export interface LimiterSpec {
  /** Namespaces the keys of one limiter ('token', 'address', …) in the shared table. */
  keyPrefix: string;
  /** Points per window. */
  points: number;
  /** Window length in seconds. */
  duration: number;
}

/** What the server asks of a limiter: a point taken, or a RateLimiterRes rejection over the limit. */
export interface Limiter {
  consume(key: string): Promise<RateLimiterRes>;
}

export type LimiterFactory = (spec: LimiterSpec) => Limiter;

/** Counters in this process only (the file store, or a single node). */
export const memoryLimiters: LimiterFactory = (spec) => new RateLimiterMemory(spec);

export interface PostgresLimiterOptions {
  /** Fall back to per-node memory counters while the database is unreachable (default true). */
  insurance?: boolean;
}

/** Counters in PostgreSQL, shared by every node on the same database. */
export function postgresLimiters(pool: pg.Pool, options: PostgresLimiterOptions = {}): LimiterFactory {
  return (spec) => new BatchedPostgresLimiter(pool, spec, options.insurance !== false);
}
