// Rate-limit counters that every node shares (SPEC §11: rate limits work whichever node a
// client talks to). A small factory so the app's RateLimits (src/limits/rate-limits.ts) can
// build its limiters without knowing where the counters live:
//
//   const limiters = store instanceof PgStore ? postgresLimiters(store.connectionPool) : memoryLimiters;
//   const byToken = limiters({ keyPrefix: 'token', points: perToken, duration: RATE_WINDOW_S });
//   await byToken.consume(participantId);   // rejects with RateLimiterRes when over the limit
//
// On PostgreSQL the counters are rows of the table that 001_initial.sql creates (the store must
// be open), counted by `BatchedPostgresLimiter` (below): one atomic upsert per
// key, with the calls that arrive together on a node counted in one statement, so parallel calls
// on several nodes never let more than `points` through per window. If the database cannot be
// reached, an in-memory limiter with the same limits takes over on that node instead of failing
// the call: limits then hold per node until it is back. Windows use the nodes' clocks (expiry is
// stored in epoch ms, like rate-limiter-flexible's RateLimiterPostgres): keep them in sync.
import type pg from 'pg';
import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import { StatementGroup } from './statement-group.js';

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
  /** How often expired counter rows are deleted (default every 5 minutes). */
  clearEveryMs?: number;
}

/** How often expired counter rows are deleted, and how long after their window (as the library did). */
const CLEAR_EVERY_MS = 5 * 60_000;
const CLEAR_AFTER_MS = 60 * 60_000;

/**
 * Counters in PostgreSQL, shared by every node on the same database. Rows whose window ended
 * over an hour ago are deleted every 5 minutes, so keys that stop calling (participants gone,
 * addresses that came once) do not pile up in the table. The clean-up stops when the pool ends.
 */
export function postgresLimiters(pool: pg.Pool, options: PostgresLimiterOptions = {}): LimiterFactory {
  let clearing: NodeJS.Timeout | undefined;
  const clear = (): void => {
    if (pool.ending || pool.ended) {
      clearInterval(clearing);
      return;
    }
    void clearExpiredCounters(pool);
  };
  return (spec) => {
    clearing ??= setInterval(clear, options.clearEveryMs ?? CLEAR_EVERY_MS).unref();
    return new BatchedPostgresLimiter(pool, spec, options.insurance !== false);
  };
}

/** Deletes the counter rows whose window ended over an hour before `now`; never rejects (not critical). */
export async function clearExpiredCounters(pool: pg.Pool, now = Date.now()): Promise<number> {
  try {
    const { rowCount } = await pool.query(`DELETE FROM ${RATE_LIMIT_TABLE} WHERE expire < $1`, [now - CLEAR_AFTER_MS]);
    return rowCount ?? 0;
  } catch {
    return 0;
  }
}

// ── BatchedPostgresLimiter ──
// Every authenticated call takes a point (RATE_LIMIT_PER_TOKEN), so with one upsert per call the
// counter was a second round trip beside each send's commit; at 64 busy senders it cost a
// quarter to a third of the cluster's throughput (BENCHMARKS.md). Here the calls a node reads in
// one turn of its event loop, and those that arrive while its two counter statements are busy,
// are added up per key and counted by one statement (./statement-group.ts).
//
// It stays exact across nodes: one statement adds a key's n points atomically (the same upsert
// as rate-limiter-flexible's RateLimiterPostgres, on the same table and keys), and the total it
// returns says which of the n calls fell over the limit: the calls of a batch take the counts
// total−n+1 … total in their order, as n separate upserts in a row would have. While the
// database cannot be reached, an in-memory limiter with the same limits counts on this node
// (like the library's `insuranceLimiter`).

/** Counter statements in flight at once on a node; the rest wait and go together. */
const SLOTS = 2;
/** Most calls counted by one statement. */
const MAX_CALLS = 500;

interface CounterRow {
  key: string;
  points: number;
  expire: string | null;
}

export class BatchedPostgresLimiter {
  private readonly group = new StatementGroup<string, RateLimiterRes>((keys) => this.count(keys), { slots: SLOTS, maxGroup: MAX_CALLS });
  private readonly insurance: RateLimiterMemory | undefined;

  constructor(
    private readonly pool: pg.Pool,
    private readonly spec: LimiterSpec,
    insurance = true,
  ) {
    this.insurance = insurance ? new RateLimiterMemory(spec) : undefined;
  }

  /** Takes a point for `key`: resolves while within the limit, rejects with RateLimiterRes over it. */
  async consume(key: string): Promise<RateLimiterRes> {
    const res = await this.group.submit(key);
    if (res.consumedPoints > this.spec.points) throw res;
    return res;
  }

  /** One statement for a group of calls (each an entry of `keys`, a key possibly repeated). */
  private async count(keys: string[]): Promise<Promise<RateLimiterRes>[]> {
    const perKey = new Map<string, number>();
    // Sorted, so that two nodes' statements lock shared keys' rows in the same order (no deadlock).
    for (const key of [...keys].sort()) perKey.set(key, (perKey.get(key) ?? 0) + 1);
    const now = Date.now();
    let rows: CounterRow[];
    try {
      ({ rows } = await this.pool.query<CounterRow>({
        name: 'chatroom-count-calls',
        text: `INSERT INTO ${RATE_LIMIT_TABLE} AS t (key, points, expire)
                 SELECT k, p, $3 FROM unnest($1::text[], $2::int[]) AS u(k, p)
               ON CONFLICT (key) DO UPDATE SET
                 points = CASE WHEN t.expire <= $4 THEN EXCLUDED.points ELSE t.points + EXCLUDED.points END,
                 expire = CASE WHEN t.expire <= $4 THEN EXCLUDED.expire ELSE t.expire END
               RETURNING key, points, expire`,
        values: [[...perKey.keys()].map((key) => this.tableKey(key)), [...perKey.values()], now + this.spec.duration * 1000, now],
      }));
    } catch (err) {
      if (!this.insurance) throw err;
      const insurance = this.insurance;
      return keys.map((key) => insurance.consume(key).catch((res: unknown) => res as RateLimiterRes));
    }
    // The calls of each key take its counts in order: total − n + 1, …, total.
    const total = new Map(rows.map((row) => [row.key, row]));
    const taken = new Map<string, number>();
    return keys.map((key) => {
      const row = total.get(this.tableKey(key));
      if (!row) return Promise.reject(new Error(`no counter row for ${key}`));
      const n = perKey.get(key)!;
      const index = (taken.get(key) ?? 0) + 1;
      taken.set(key, index);
      const consumed = row.points - n + index;
      const msBeforeNext = row.expire === null ? -1 : Math.max(Number(row.expire) - Date.now(), 0);
      return Promise.resolve(new RateLimiterRes(Math.max(this.spec.points - consumed, 0), msBeforeNext, consumed, consumed === 1));
    });
  }

  /** The table's key: the library's `<prefix>:<key>`, so both kinds of limiter share the table. */
  private tableKey(key: string): string {
    return `${this.spec.keyPrefix}:${key}`;
  }
}
