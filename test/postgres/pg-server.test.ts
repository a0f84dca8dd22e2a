// The throwaway-cluster helper itself: it starts a real server, answers queries, and leaves
// nothing behind.
import { existsSync } from 'node:fs';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { pgTestsEnabled, startPgServer } from './pg-server.js';

describe.skipIf(!pgTestsEnabled())('throwaway PostgreSQL cluster', () => {
  it('starts on 127.0.0.1, serves a fresh database, and is removed on stop', async () => {
    const server = await startPgServer();
    try {
      const url = await server.createDatabase('helper_check');
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      const { rows } = await client.query<{ db: string; addr: string }>('SELECT current_database() AS db, inet_server_addr()::text AS addr');
      await client.end();
      expect(rows[0]).toEqual({ db: 'helper_check', addr: '127.0.0.1/32' });
    } finally {
      await server.stop();
    }
    expect(existsSync(server.dataDir)).toBe(false);
    const client = new pg.Client({ connectionString: server.url, connectionTimeoutMillis: 2_000 });
    await expect(client.connect()).rejects.toThrow();
  });
});
