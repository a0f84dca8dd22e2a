// DATA_DIR is private to the server's user (SPEC §10): directories 0700, files 0600. The process
// umask makes every file and directory the server creates private whatever the code that creates
// it (state, logs, indexes, the journal, uploads, exports); the places that create the data's own
// directories and files also pass the modes explicitly. A DATA_DIR made by an older version or
// by hand with looser modes is reported at start, with the command that fixes it.
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
 * Paths under DATA_DIR (the directory itself, its entries and theirs, two levels: not every log
 * file of a large store) that the group or others may read, write or enter. Missing: none.
 */
export async function looseEntries(dataDir: string): Promise<string[]> {
  const loose: string[] = [];
  const check = async (p: string, depth: number): Promise<void> => {
    const info = await stat(p).catch(() => null);
    if (!info) return;
    if ((info.mode & GROUP_OTHER) !== 0) loose.push(p);
    if (!info.isDirectory() || depth === 0) return;
    for (const name of await readdir(p).catch(() => [] as string[])) await check(path.join(p, name), depth - 1);
  };
  // A DATA_DIR that is not a directory is refused by the store, with its own one-line error.
  if (!(await stat(dataDir).catch(() => null))?.isDirectory()) return [];
  await check(dataDir, 2);
  return loose;
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
