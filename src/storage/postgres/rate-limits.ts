// Rate-limit counters that every node shares (SPEC §11: rate limits work whichever node a
// client talks to). A small factory so the app's RateLimits (src/limits/rate-limits.ts) can
// build its limiters without knowing where the counters live:
//
//   const limiters = store instanceof PgStore ? postgresLimiters(store.connectionPool) : memoryLimiters;
//   const byToken = limiters({ keyPrefix: 'token', points: perToken, duration: RATE_WINDOW_S });
//   await byToken.consume(participantId);   // rejects with RateLimiterRes when over the limit
//
// On PostgreSQL this is rate-limiter-flexible's RateLimiterPostgres on the table that
// 001_initial.sql creates (the store must be open). Each consume is one atomic upsert, so
// parallel calls on several nodes never let more than `points` through per window. If the
// database cannot be reached, an in-memory limiter with the same limits takes over on that node
// (`insuranceLimiter`) instead of failing the call: limits then hold per node until it is back.
// Windows use the nodes' clocks (the library stores expiry in epoch ms): keep them in sync.
import type pg from 'pg';
import { RateLimiterMemory, RateLimiterPostgres, type RateLimiterAbstract } from 'rate-limiter-flexible';

export const RATE_LIMIT_TABLE = 'chatroom_rate_limits';

export interface LimiterSpec {
  /** Namespaces the keys of one limiter ('token', 'address', …) in the shared table. */
  keyPrefix: string;
  /** Points per window. */
  points: number;
  /** Window length in seconds. */
  duration: number;
}

export type LimiterFactory = (spec: LimiterSpec) => RateLimiterAbstract;

/** Counters in this process only (the file store, or a single node). */
export const memoryLimiters: LimiterFactory = (spec) => new RateLimiterMemory(spec);

export interface PostgresLimiterOptions {
  /** Fall back to per-node memory counters while the database is unreachable (default true). */
  insurance?: boolean;
}

/** Counters in PostgreSQL, shared by every node on the same database. */
export function postgresLimiters(pool: pg.Pool, options: PostgresLimiterOptions = {}): LimiterFactory {
  return (spec) =>
    new RateLimiterPostgres({
      ...spec,
      storeClient: pool,
      storeType: 'pool',
      tableName: RATE_LIMIT_TABLE,
      tableCreated: true,
      ...(options.insurance === false ? {} : { insuranceLimiter: new RateLimiterMemory(spec) }),
    });
}
