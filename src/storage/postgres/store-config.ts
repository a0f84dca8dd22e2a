// Which store the server runs on (SPEC §11), read from the environment. The app's loadConfig
// (src/config.ts) calls this and keeps the result; nothing else here reads process.env.
//
//   STORE               file (default) | postgres
//   DATABASE_URL        postgres://user:password@host:5432/database — required with STORE=postgres
//   DATABASE_POOL_SIZE  connections per node (default 10, 1–200)
//
// Errors are ConfigErrors naming the variable; the URL itself is never echoed (it may hold a
// password).
import { ConfigError } from '../../config.js';

export type StoreConfig = { kind: 'file' } | { kind: 'postgres'; databaseUrl: string; poolSize: number };

type Env = Record<string, string | undefined>;

export function parseStoreConfig(env: Env): StoreConfig {
  const kind = (env.STORE ?? '').trim().toLowerCase() || 'file';
  if (kind === 'file') return { kind: 'file' };
  if (kind !== 'postgres') throw new ConfigError('STORE', `expected "file" or "postgres", got "${env.STORE}"`);

  const databaseUrl = env.DATABASE_URL?.trim() ?? '';
  if (!databaseUrl) throw new ConfigError('DATABASE_URL', 'STORE=postgres needs DATABASE_URL (postgres://user:password@host:5432/database)');
  let url: URL;
  try {
    url = new URL(databaseUrl);
  } catch {
    throw new ConfigError('DATABASE_URL', 'not a URL; expected postgres://user:password@host:5432/database');
  }
  if (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:') {
    throw new ConfigError('DATABASE_URL', `expected a postgres:// or postgresql:// URL, got a ${url.protocol}// one`);
  }
  if (!url.hostname && !url.searchParams.get('host')) throw new ConfigError('DATABASE_URL', 'names no host');

  const rawPool = env.DATABASE_POOL_SIZE?.trim() ?? '';
  let poolSize = 10;
  if (rawPool !== '') {
    if (!/^\d+$/.test(rawPool)) throw new ConfigError('DATABASE_POOL_SIZE', `expected an integer, got "${rawPool}"`);
    poolSize = Number(rawPool);
    if (poolSize < 1 || poolSize > 200) throw new ConfigError('DATABASE_POOL_SIZE', `must be between 1 and 200, got ${poolSize}`);
  }
  return { kind: 'postgres', databaseUrl, poolSize };
}
