// `backup <dir>`: a consistent copy of a live DATA_DIR, without stopping the server.
//
// Why this is consistent: snapshots are only ever replaced by rename, so each copied snapshot
// is a whole version; logs only grow. Copying every snapshot *before* any log means each log
// copy holds at least every message the copied snapshots refer to (seqs, processed marks,
// rounds). A log may also hold later messages and a half-written last line; the copy is cut at
// its last complete line, so the backup looks exactly like the data after a crash, which the
// server recovers from by design. Restore = start a server with DATA_DIR pointing at the copy.
import { copyFile, mkdir, open, readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { fsyncPath } from './storage/fs-ops.js';

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

/** Copies a log up to its last newline (a torn tail is left behind). */
async function copyCompleteLines(from: string, to: string): Promise<number> {
  const source = await open(from, 'r');
  try {
    const { size } = await source.stat();
    const buffer = Buffer.alloc(size);
    const { bytesRead } = await source.read(buffer, 0, size, 0);
    const end = buffer.lastIndexOf(0x0a, bytesRead - 1) + 1;
    const target = await open(to, 'wx');
    try {
      await target.write(buffer, 0, end);
      await target.sync();
    } finally {
      await target.close();
    }
    return end;
  } finally {
    await source.close();
  }
}

export async function backupDataDir(dataDir: string, targetDir: string): Promise<BackupResult> {
  if (!(await exists(dataDir))) throw new Error(`DATA_DIR ${dataDir} does not exist`);
  await mkdir(targetDir, { recursive: true });
  if ((await readdir(targetDir)).length > 0) throw new Error(`Backup target ${targetDir} is not empty`);
  const result: BackupResult = { snapshots: 0, logs: 0, uploads: 0, bytes: 0 };

  for (const name of SNAPSHOTS) {
    const from = path.join(dataDir, name);
    if (!(await exists(from))) continue;
    await copyFile(from, path.join(targetDir, name));
    await fsyncPath(path.join(targetDir, name));
    result.snapshots += 1;
    result.bytes += (await stat(from)).size;
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
  return result;
}
