// Schema migrations for the PostgreSQL store: numbered SQL files in ./migrations
// (`001_initial.sql`, `002_….sql`, …) applied in order, each once, recorded in the
// `chatroom_migrations` table. Every node runs this at open; a transaction-scoped advisory lock
// makes nodes that start together apply each file exactly once, and all pending files go in
// one transaction, so a failed upgrade leaves the schema as it was.
//
// The SQL files ship in the package (src/storage/postgres/migrations); the built server reads
// them from there too, so they are found whether the code runs from src/ or dist/.
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import type pg from 'pg';
import { PACKAGE_ROOT } from '../../paths.js';

export const MIGRATIONS_DIR = path.join(PACKAGE_ROOT, 'src', 'storage', 'postgres', 'migrations');

/** Arbitrary constant naming this application's migration lock. */
const MIGRATION_LOCK_KEY = 0x63_68_61_74; // "chat"

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export async function loadMigrations(dir = MIGRATIONS_DIR): Promise<Migration[]> {
  const files = (await readdir(dir)).filter((f) => /^\d+_[\w-]+\.sql$/.test(f)).sort();
  const migrations: Migration[] = [];
  for (const file of files) {
    const version = Number(file.slice(0, file.indexOf('_')));
    if (migrations.some((m) => m.version === version)) throw new Error(`two migrations numbered ${version} in ${dir}`);
    migrations.push({ version, name: file.replace(/\.sql$/, ''), sql: await readFile(path.join(dir, file), 'utf8') });
  }
  return migrations;
}

/** Applies every pending migration; resolves with the names applied (empty when up to date). */
export async function migrate(pool: pg.Pool, migrations?: Migration[]): Promise<string[]> {
  const all = migrations ?? (await loadMigrations());
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK_KEY]);
    await client.query(`CREATE TABLE IF NOT EXISTS chatroom_migrations (
      version integer PRIMARY KEY,
      name text NOT NULL,
      applied_at timestamptz NOT NULL DEFAULT now()
    )`);
    const { rows } = await client.query<{ version: number }>('SELECT version FROM chatroom_migrations');
    const applied = new Set(rows.map((r) => r.version));
    const newest = Math.max(0, ...all.map((m) => m.version));
    const unknown = [...applied].filter((v) => v > newest);
    if (unknown.length > 0) {
      throw new Error(`the database has schema version ${Math.max(...unknown)}, newer than this server knows (${newest}); upgrade the server`);
    }
    const done: string[] = [];
    for (const migration of all) {
      if (applied.has(migration.version)) continue;
      await client.query(migration.sql);
      await client.query('INSERT INTO chatroom_migrations (version, name) VALUES ($1, $2)', [migration.version, migration.name]);
      done.push(migration.name);
    }
    await client.query('COMMIT');
    return done;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}
