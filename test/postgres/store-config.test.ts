// STORE / DATABASE_URL parsing: the file store by default, PostgreSQL only with a usable URL.
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/config.js';
import { parseStoreConfig } from '../../src/storage/postgres/store-config.js';

describe('parseStoreConfig', () => {
  it('defaults to the file store and ignores DATABASE_URL there', () => {
    expect(parseStoreConfig({})).toEqual({ kind: 'file' });
    expect(parseStoreConfig({ STORE: ' FILE ', DATABASE_URL: 'postgres://x/y' })).toEqual({ kind: 'file' });
  });

  it('reads STORE=postgres with DATABASE_URL and the pool size', () => {
    expect(parseStoreConfig({ STORE: 'postgres', DATABASE_URL: 'postgres://u:p@db:5432/chat' })).toEqual({
      kind: 'postgres',
      databaseUrl: 'postgres://u:p@db:5432/chat',
      poolSize: 10,
    });
    expect(parseStoreConfig({ STORE: 'postgres', DATABASE_URL: 'postgresql://db/chat', DATABASE_POOL_SIZE: '25' })).toMatchObject({ poolSize: 25 });
  });

  it.each([
    [{ STORE: 'mysql' }, 'STORE'],
    [{ STORE: 'postgres' }, 'DATABASE_URL'],
    [{ STORE: 'postgres', DATABASE_URL: 'not a url' }, 'DATABASE_URL'],
    [{ STORE: 'postgres', DATABASE_URL: 'mysql://u:secret@db/chat' }, 'DATABASE_URL'],
    [{ STORE: 'postgres', DATABASE_URL: 'postgres://db/chat', DATABASE_POOL_SIZE: '0' }, 'DATABASE_POOL_SIZE'],
    [{ STORE: 'postgres', DATABASE_URL: 'postgres://db/chat', DATABASE_POOL_SIZE: 'many' }, 'DATABASE_POOL_SIZE'],
  ])('rejects %j naming %s, without echoing secrets', (env, variable) => {
    let error: unknown;
    try {
      parseStoreConfig(env);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).variable).toBe(variable);
    expect((error as Error).message).not.toContain('secret');
  });
});
