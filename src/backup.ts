// `backup <dir>`: a consistent copy of a live DATA_DIR, without stopping the server.
//
// Why this is consistent: snapshots are only ever replaced by rename, so each copied snapshot
// is a whole version, and the three are copied again until none was replaced meanwhile (so
// they are versions that were in place together); the state journal and the logs only grow. While the copy runs, a hold
// file (journal/backup.hold) asks the server not to delete compacted journal files, so the
// journal copied after the snapshots holds every change the snapshots may lack (a record's
// last journal line is its newest version; docs/storage.md). Copying snapshots and journal
// *before* any log means each log copy holds at least every message the copied state refers to
// (seqs, processed marks, rounds). A log or journal may also hold later lines and a
// half-written last line; the copy is cut at its last complete line, so the backup looks
// exactly like the data after a crash, which the server recovers from by design.
// Restore = start a server with DATA_DIR pointing at the copy.
import { createReadStream } from 'node:fs';
import { copyFile, mkdir, open, readdir, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fsyncPath } from './storage/fs-ops.js';
import { BACKUP_HOLD, JOURNAL_DIR } from './storage/state-journal.js';

const SNAPSHOTS = ['agents.json', 'users.json', 'rooms.json'];

export interface BackupResult {
  snapshots: number;
  logs: number;
  uploads: number;
  bytes: number;
}

async function exists(p: string): Promise<boolean> {
  return stat(p).then(() => true, () => false);
}

/** Copies a log up to its last newline (a torn tail is left behind), streaming: logs may exceed 2 GiB. */
async function copyCompleteLines(from: string, to: string): Promise<number> {
  const { size } = await stat(from);
  const target = await open(to, 'wx');
  try {
    let written = 0;
    let pending: Buffer[] = []; // bytes after the last newline seen so far
    for await (const chunk of createReadStream(from, { start: 0, end: Math.max(0, size - 1) }) as AsyncIterable<Buffer>) {
      if (size === 0) break;
      const nl = chunk.lastIndexOf(0x0a);
      if (nl < 0) {
        pending.push(chunk);
        continue;
      }
      const whole = Buffer.concat([...pending, chunk.subarray(0, nl + 1)]);
      await target.write(whole, 0, whole.length);
      written += whole.length;
      pending = [chunk.subarray(nl + 1)];
    }
    await target.sync();
    return written;
  } finally {
    await target.close();
  }
}

/** Test seams: called as the copy goes, to change the data directory at chosen points. */
export interface BackupHooks {
  afterSnapshotCopy?(name: string, attempt: number): Promise<void>;
}

export async function backupDataDir(dataDir: string, targetDir: string, hooks: BackupHooks = {}): Promise<BackupResult> {
  if (!(await exists(dataDir))) throw new Error(`DATA_DIR ${dataDir} does not exist`);
  await mkdir(targetDir, { recursive: true });
  if ((await readdir(targetDir)).length > 0) throw new Error(`Backup target ${targetDir} is not empty`);
  const result: BackupResult = { snapshots: 0, logs: 0, uploads: 0, bytes: 0 };
  const journalFrom = path.join(dataDir, JOURNAL_DIR);
  const hold = path.join(journalFrom, BACKUP_HOLD);
  const hasJournal = await exists(journalFrom);
  if (hasJournal) await writeFile(hold, `${process.pid} ${new Date().toISOString()}\n`);
  try {
    await copyState(dataDir, targetDir, result, hasJournal, hooks);
  } finally {
    if (hasJournal) await rm(hold, { force: true });
  }
  return result;
}

/** How often the three snapshots are copied again when one was replaced during the copy. */
const SNAPSHOT_ATTEMPTS = 50;

/** Which version of each snapshot is in place: every write replaces the file (a new inode). */
async function snapshotVersions(dataDir: string): Promise<string> {
  const versions = await Promise.all(
    SNAPSHOTS.map((name) => stat(path.join(dataDir, name)).then((s) => `${s.ino}:${s.size}:${s.mtimeMs}`, () => 'none')),
  );
  return versions.join(' ');
}

/**
 * The three snapshots as they were at one moment. While the state is small the server keeps it
 * in the snapshots alone (no journal) and replaces one with every change, so copies made one
 * after another could pair a room with a member whose record is not in the copied agents.json;
 * the set is copied again until no snapshot was replaced while it was being copied.
 */
async function copySnapshots(dataDir: string, targetDir: string, result: BackupResult, hooks: BackupHooks): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    const before = await snapshotVersions(dataDir);
    let copied = 0;
    let bytes = 0;
    for (const name of SNAPSHOTS) {
      const from = path.join(dataDir, name);
      if (!(await exists(from))) continue;
      await copyFile(from, path.join(targetDir, name));
      copied += 1;
      bytes += (await stat(path.join(targetDir, name))).size;
      await hooks.afterSnapshotCopy?.(name, attempt);
    }
    if ((await snapshotVersions(dataDir)) === before) {
      for (const name of SNAPSHOTS) if (await exists(path.join(targetDir, name))) await fsyncPath(path.join(targetDir, name));
      result.snapshots = copied;
      result.bytes += bytes;
      return;
    }
    if (attempt === SNAPSHOT_ATTEMPTS) throw new Error(`the snapshots in ${dataDir} kept changing during ${SNAPSHOT_ATTEMPTS} copies; try again`);
  }
}

async function copyState(dataDir: string, targetDir: string, result: BackupResult, hasJournal: boolean, hooks: BackupHooks): Promise<void> {
  await copySnapshots(dataDir, targetDir, result, hooks);

  // The state journal, after the snapshots (see the top of this file).
  if (hasJournal) {
    const journalTo = path.join(targetDir, JOURNAL_DIR);
    await mkdir(journalTo, { recursive: true });
    for (const name of await readdir(path.join(dataDir, JOURNAL_DIR))) {
      if (!name.endsWith('.jsonl')) continue;
      result.bytes += await copyCompleteLines(path.join(dataDir, JOURNAL_DIR, name), path.join(journalTo, name));
    }
    await fsyncPath(journalTo);
  }

  const logsFrom = path.join(dataDir, 'room_messages');
  const logsTo = path.join(targetDir, 'room_messages');
  await mkdir(logsTo, { recursive: true });
  if (await exists(logsFrom)) {
    for (const name of await readdir(logsFrom)) {
      if (!name.endsWith('.jsonl')) continue;
      result.bytes += await copyCompleteLines(path.join(logsFrom, name), path.join(logsTo, name));
      result.logs += 1;
    }
  }

  const uploadsFrom = path.join(dataDir, 'uploads');
  if (await exists(uploadsFrom)) {
    for (const room of await readdir(uploadsFrom)) {
      const roomDir = path.join(uploadsFrom, room);
      if (!(await stat(roomDir)).isDirectory()) continue;
      const roomTarget = path.join(targetDir, 'uploads', room);
      await mkdir(roomTarget, { recursive: true });
      for (const file of await readdir(roomDir)) {
        await copyFile(path.join(roomDir, file), path.join(roomTarget, file));
        await fsyncPath(path.join(roomTarget, file));
        result.uploads += 1;
      }
      await fsyncPath(roomTarget);
    }
  }
  // The copies' directory entries too: a backup that reported success survives a power cut.
  for (const dir of [logsTo, path.join(targetDir, 'uploads'), targetDir]) {
    if (await exists(dir)) await fsyncPath(dir);
  }
}
