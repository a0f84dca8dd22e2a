// Shared rate limits: two nodes on one database count against the same budget, atomically;
// an unreachable database falls back to per-node counters instead of failing calls.
import pg from 'pg';
import { RateLimiterRes } from 'rate-limiter-flexible';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { PgStore } from '../../src/storage/postgres/pg-store.js';
import { clearExpiredCounters, memoryLimiters, postgresLimiters } from '../../src/storage/postgres/rate-limits.js';
import { pgTestsEnabled, startPgServer, type PgServer } from './pg-server.js';

const enabled = pgTestsEnabled();

describe('memory limiters', () => {
  it('limit per key within one process', async () => {
    const limiter = memoryLimiters({ keyPrefix: 'token', points: 2, duration: 10 });
    await limiter.consume('a');
    await limiter.consume('a');
    await expect(limiter.consume('a')).rejects.toBeInstanceOf(RateLimiterRes);
    await limiter.consume('b');
  });
});

describe.skipIf(!enabled)('PostgreSQL limiters', () => {
  let server: PgServer;
  let nodes: PgStore[];
  beforeAll(async () => {
    server = await startPgServer();
    const url = await server.createDatabase();
    nodes = [new PgStore({ connectionString: url, poolSize: 6 }), new PgStore({ connectionString: url, poolSize: 6 })];
    await Promise.all(nodes.map((n) => n.open()));
  });
  afterAll(async () => {
    await Promise.all((nodes ?? []).map((n) => n.close()));
    await server?.stop();
  });

  it('two nodes share one budget per key: of 40 parallel calls exactly `points` pass', async () => {
    const [a, b] = nodes.map((n) => postgresLimiters(n.connectionPool)({ keyPrefix: 'token', points: 10, duration: 10 }));
    const calls = Array.from({ length: 40 }, (_, i) => (i % 2 ? a! : b!).consume('agent-1'));
    const results = await Promise.allSettled(calls);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(10);
    const refused = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected').map((r) => r.reason);
    expect(refused).toHaveLength(30);
    for (const reason of refused) {
      expect(reason).toBeInstanceOf(RateLimiterRes);
      expect((reason as RateLimiterRes).msBeforeNext).toBeGreaterThan(0);
    }
    // Another key, and the same key under another prefix, have their own budgets.
    await a!.consume('agent-2');
    const byAddress = postgresLimiters(nodes[1]!.connectionPool)({ keyPrefix: 'address', points: 1, duration: 10 });
    await byAddress.consume('agent-1');
    await expect(byAddress.consume('agent-1')).rejects.toBeInstanceOf(RateLimiterRes);
  });

  it('counts the calls that arrive together in one statement, each call still counted in order', async () => {
    const pool = nodes[0]!.connectionPool;
    await pool.query(`
      CREATE TABLE test_counter_statements (n int);
      CREATE FUNCTION test_count_statement() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN INSERT INTO test_counter_statements VALUES (1); RETURN NULL; END $$;
      CREATE TRIGGER test_counter AFTER INSERT ON chatroom_rate_limits FOR EACH STATEMENT EXECUTE FUNCTION test_count_statement();`);
    try {
      const limiter = postgresLimiters(pool)({ keyPrefix: 'together', points: 15, duration: 10 });
      // 24 calls at once on one node, two keys: counted by one statement.
      const results = await Promise.allSettled(Array.from({ length: 24 }, (_, i) => limiter.consume(i < 20 ? 'busy' : 'quiet')));
      const statements = await pool.query<{ n: string }>('SELECT count(*) AS n FROM test_counter_statements');
      expect(Number(statements.rows[0]!.n)).toBe(1);
      // The first 15 calls of the busy key pass, in the order they were made; all quiet ones pass.
      expect(results.map((r) => r.status === 'fulfilled')).toEqual([...Array(15).fill(true), ...Array(5).fill(false), ...Array(4).fill(true)]);
      const counts = results.slice(0, 15).map((r) => (r as PromiseFulfilledResult<RateLimiterRes>).value.consumedPoints);
      expect(counts).toEqual(Array.from({ length: 15 }, (_, i) => i + 1));
      // A call that waited for the next statement counts after them.
      await expect(limiter.consume('quiet')).resolves.toMatchObject({ consumedPoints: 5 });
    } finally {
      await pool.query('DROP TRIGGER test_counter ON chatroom_rate_limits');
    }
  });

  it('the counter pool (what the server counts in) shares the budget and skips only the WAL flush wait, the store\'s pool keeps it', async () => {
    const [a, b] = nodes.map((n) => postgresLimiters(n.counterPool)({ keyPrefix: 'counted', points: 5, duration: 10 }));
    const results = await Promise.allSettled(Array.from({ length: 12 }, (_, i) => (i % 2 ? a! : b!).consume('agent-1')));
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(5);
    const setting = async (pool: pg.Pool): Promise<string> => (await pool.query<{ s: string }>('SELECT current_setting($1) AS s', ['synchronous_commit'])).rows[0]!.s;
    expect(await setting(nodes[0]!.counterPool)).toBe('off');
    expect(await setting(nodes[0]!.connectionPool)).toBe('on');
  });

  it('a window that ran out starts a fresh budget', async () => {
    const limiter = postgresLimiters(nodes[0]!.connectionPool)({ keyPrefix: 'short', points: 1, duration: 1 });
    await limiter.consume('k');
    const refused = (await limiter.consume('k').catch((e: unknown) => e)) as RateLimiterRes;
    expect(refused).toBeInstanceOf(RateLimiterRes);
    expect(refused.msBeforeNext).toBeLessThanOrEqual(1_000);
    await expect
      .poll(() => limiter.consume('k').then(() => 'passed', () => 'refused'), { timeout: 3_000, interval: 100 })
      .toBe('passed');
  });

  it('deletes counter rows whose window ended over an hour ago, and keeps the others', async () => {
    const pool = nodes[0]!.connectionPool;
    const limiter = postgresLimiters(pool)({ keyPrefix: 'cleared', points: 3, duration: 10 });
    await limiter.consume('live');
    await pool.query(`INSERT INTO chatroom_rate_limits (key, points, expire) VALUES ('cleared:gone', 1, $1), ('cleared:recent', 1, $2)`, [
      Date.now() - 2 * 3_600_000,
      Date.now() - 60_000,
    ]);
    expect(await clearExpiredCounters(pool)).toBeGreaterThanOrEqual(1);
    const { rows } = await pool.query<{ key: string }>(`SELECT key FROM chatroom_rate_limits WHERE key LIKE 'cleared:%' ORDER BY key`);
    expect(rows.map((r) => r.key)).toEqual(['cleared:live', 'cleared:recent']);
  });

  it('deletes them on its own, periodically, and stops once its pool has ended', async () => {
    const pool = new pg.Pool({ connectionString: nodes[0]!.connectionString, max: 2 });
    // The clean-up's interval, caught as it is made, to see it stopped (no waiting for "nothing happened").
    const setInterval = vi.spyOn(globalThis, 'setInterval');
    const clearInterval = vi.spyOn(globalThis, 'clearInterval');
    const limiter = postgresLimiters(pool, { clearEveryMs: 20 })({ keyPrefix: 'periodic', points: 3, duration: 10 });
    const cleanup = setInterval.mock.results.at(-1)!.value as unknown;
    setInterval.mockRestore();
    await limiter.consume('live');
    await pool.query(`INSERT INTO chatroom_rate_limits (key, points, expire) VALUES ('periodic:gone', 1, $1)`, [Date.now() - 2 * 3_600_000]);
    const keys = async () => (await nodes[0]!.connectionPool.query<{ key: string }>(`SELECT key FROM chatroom_rate_limits WHERE key LIKE 'periodic:%' ORDER BY key`)).rows.map((r) => r.key);
    await expect.poll(keys).toEqual(['periodic:live']);
    await pool.end();
    // Any query on the ended pool from here on would be the clean-up's timer still running.
    let queried = 0;
    pool.query = (async () => {
      queried++;
      throw new Error('Cannot use a pool after calling end on the pool');
    }) as unknown as typeof pool.query;
    await expect.poll(() => clearInterval.mock.calls.some(([handle]) => handle === cleanup)).toBe(true);
    clearInterval.mockRestore();
    expect(queried).toBe(0);
  });

  it('falls back to per-node counters while the database is unreachable', async () => {
    // A pool pointing at a port nobody listens on stands for a database that went away.
    const dead = new pg.Pool({ connectionString: `postgres://postgres@127.0.0.1:1/none`, connectionTimeoutMillis: 500 });
    try {
      const limiter = postgresLimiters(dead)({ keyPrefix: 'token', points: 2, duration: 10 });
      await limiter.consume('x');
      await limiter.consume('x');
      await expect(limiter.consume('x')).rejects.toBeInstanceOf(RateLimiterRes);
      const strict = postgresLimiters(dead, { insurance: false })({ keyPrefix: 'token', points: 2, duration: 10 });
      await expect(strict.consume('x')).rejects.not.toBeInstanceOf(RateLimiterRes);
      // The clean-up of expired rows is not critical: it reports nothing deleted, never throws.
      expect(await clearExpiredCounters(dead)).toBe(0);
    } finally {
      await dead.end();
    }
  });
});
