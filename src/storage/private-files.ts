// DATA_DIR is private to the server's user (SPEC §10): directories 0700, files 0600. The process
// umask makes every file and directory the server creates private whatever the code that creates
// it (state, logs, indexes, the journal, uploads, exports); the places that create the data's own
// directories and files also pass the modes explicitly. A DATA_DIR made by an older version or
// by hand with looser modes is reported at start, with the command that fixes it.
import { readdirSync, statSync, type Stats } from 'node:fs';
import { chmod, readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from '../logger.js';

export const PRIVATE_DIR_MODE = 0o700;
export const PRIVATE_FILE_MODE = 0o600;
/** Permission bits for the group and for others: none of them may be set. */
const GROUP_OTHER = 0o077;
/** Entries named in the warning (the rest are counted). */
const NAMED = 5;

/** From now on every file and directory this process creates is private to its user. */
export function makeNewFilesPrivate(): void {
  process.umask(GROUP_OTHER);
}

/**
 * Paths under DATA_DIR (the directory itself, its entries and theirs: two levels) that the group
 * or others may read, write or enter. Missing: none.
 *
 * Synchronous on purpose: it runs once before the server serves anything, and two levels are
 * every room log and index file (20,000 entries on a store of 10,000 rooms). A promise `stat`
 * each cost ~0.35 s of CPU there and up to a second of start-up on a loaded machine; `statSync`
 * ~0.09 s (BENCHMARKS.md, "Start-up and the 3M room, re-measured 2026-11-29").
 */
export async function looseEntries(dataDir: string): Promise<string[]> {
  const loose: string[] = [];
  const check = (p: string, depth: number): void => {
    const info = statOrNull(p);
    if (!info) return;
    if ((info.mode & GROUP_OTHER) !== 0) loose.push(p);
    if (!info.isDirectory() || depth === 0) return;
    for (const name of readdirOrEmpty(p)) check(path.join(p, name), depth - 1);
  };
  // A DATA_DIR that is not a directory is refused by the store, with its own one-line error.
  if (!(await stat(dataDir).catch(() => null))?.isDirectory()) return [];
  check(dataDir, 2);
  return loose;
}

function statOrNull(p: string): Stats | null {
  try {
    return statSync(p);
  } catch {
    return null; // gone meanwhile, or not ours to see: nothing to report
  }
}

function readdirOrEmpty(p: string): string[] {
  try {
    return readdirSync(p);
  } catch {
    return [];
  }
}

/** Logs a warning when DATA_DIR or what it holds is open to other local users. */
export async function warnIfLoose(dataDir: string, logger: Logger): Promise<void> {
  // A fresh checkout's data/ holds only the .gitkeep that git created 0755/0644: nothing has been
  // stored, so it is made private here instead of warning on a first `npm start`.
  const entries = await readdir(dataDir).catch(() => null);
  if (entries && entries.every((name) => name === '.gitkeep')) {
    await chmod(dataDir, PRIVATE_DIR_MODE).catch(() => undefined);
    if (entries.length) await chmod(path.join(dataDir, '.gitkeep'), PRIVATE_FILE_MODE).catch(() => undefined);
  }
  const loose = await looseEntries(dataDir);
  if (loose.length === 0) return;
  logger.warn(
    { data_dir: dataDir, loose: loose.slice(0, NAMED), loose_count: loose.length, fix: `chmod -R go-rwx ${dataDir}` },
    `DATA_DIR holds ${loose.length} entr${loose.length === 1 ? 'y' : 'ies'} other users of this machine may read or change (state, logs, uploads, exports); run: chmod -R go-rwx ${dataDir}`,
  );
}
