// The room logs as the file store opens and closes (file-store.ts): registering them at start
// (lazily when the last clean shutdown's manifest vouches for them, else scanned), and
// persisting the message indexes and the manifest at a clean shutdown (index-files.ts).
import { statSync } from 'node:fs';
import { readdir, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../logger.js';
import { LOG_SUFFIX } from './file-store-options.js';
import { MANIFEST_FILE, type IndexFiles, type ManifestEntry } from './index-files.js';
import { scanRoomLog } from './log-reader.js';
import type { MessageLogs } from './message-logs.js';
import { forEachConcurrent } from './pool.js';
import type { RoomMessages } from './room-messages.js';

/** What the registry works on: the store's log folders, logs, message indexes and index files. */
export interface LogParts {
  logDir: string;
  indexDir: string;
  logs: MessageLogs;
  messages: RoomMessages;
  indexFiles: IndexFiles;
  logger: Logger;
  /** Room logs scanned at once. */
  loadConcurrency: number;
  /** Log mtimes of the rooms registered lazily at open (carried into the next manifest). */
  lazyMtimes: Map<string, number>;
}

/**
 * Start-up: registers every room log. A log the manifest of the last clean shutdown vouches for
 * (same size and mtime) is registered lazily: its index is loaded on first use. The others are
 * scanned (a torn tail cut, the index built, from a persisted index where one still matches).
 * Index files an older version kept beside the logs are moved first.
 */
export async function registerLogs(parts: LogParts): Promise<{ files: number; indexed: number; lazy: number }> {
  const { logDir, indexFiles, messages, logs, logger, loadConcurrency, lazyMtimes } = parts;
  const names = await readdir(logDir);
  await moveIndexFiles(logDir, names, parts.indexDir);
  const files = names.filter((f) => f.endsWith(LOG_SUFFIX));
  const manifest = await indexFiles.readManifest();
  let indexed = 0;
  let lazy = 0;
  // Logs the manifest vouches for are checked with synchronous stats: nothing is served yet,
  // and 10,000 promise stats cost ~0.25 s of CPU where these cost ~0.05 s.
  const toScan: Array<{ file: string; fileSize: number }> = [];
  for (const file of files) {
    const roomId = file.slice(0, -LOG_SUFFIX.length);
    const known = manifest.get(roomId);
    const { size: fileSize, mtimeMs } = statSync(join(logDir, file));
    if (known && known.size === fileSize && known.mtimeMs === mtimeMs) {
      // Untouched since the clean shutdown that wrote the manifest: no torn tail, last seq
      // known. Its index is loaded on first use (index-files.ts).
      messages.registerLazy(roomId, known.lastSeq, known.count, known.lastPersonSeq);
      lazyMtimes.set(roomId, mtimeMs);
      logs.registerExisting(roomId, fileSize);
      lazy++;
    } else toScan.push({ file, fileSize });
  }
  await forEachConcurrent(toScan, loadConcurrency, async ({ file, fileSize }) => {
    const roomId = file.slice(0, -LOG_SUFFIX.length);
    const path = join(logDir, file);
    const resume = await indexFiles.load(roomId, path, fileSize);
    if (resume) indexed++;
    const { index, size } = await scanRoomLog(path, roomId, logger, fileSize, resume);
    messages.register(roomId, index);
    logs.registerExisting(roomId, size);
  });
  return { files: files.length, indexed, lazy };
}

/**
 * Clean shutdown: the `.idx` of each room whose index changed, then the manifest (every room
 * log's size, mtime, last seq and count), so the next start need not read them.
 */
export async function persistIndexes(parts: LogParts): Promise<void> {
  const { messages, logs, indexFiles, logger, lazyMtimes } = parts;
  const started = Date.now();
  let written = 0;
  const manifest = new Map<string, ManifestEntry>();
  for (const [roomId, entry] of messages.lazyEntries()) {
    // A room scanned at start whose clean index was dropped since has no mtime recorded.
    const mtimeMs = lazyMtimes.get(roomId) ?? (await logMtime(messages, roomId, logs.sizeOf(roomId)));
    manifest.set(roomId, { ...entry, size: logs.sizeOf(roomId), mtimeMs });
  }
  for (const [roomId, index] of messages.entries()) {
    if (index.count === 0) continue;
    const path = messages.fileOf(roomId);
    const size = logs.sizeOf(roomId);
    if (index.dirty) {
      if (!(await indexFiles.write(roomId, index, path, size))) continue;
      index.dirty = false;
      written++;
    }
    manifest.set(roomId, { size, mtimeMs: await logMtime(messages, roomId, size), lastSeq: index.lastSeq, count: index.count, lastPersonSeq: index.lastPersonSeq() });
  }
  for (const [roomId, e] of manifest) if (e.mtimeMs < 0) manifest.delete(roomId);
  await indexFiles.writeManifest(manifest);
  logger.info({ rooms: written, manifest: manifest.size, ms: Date.now() - started }, 'message indexes persisted');
}

/** The log's mtime if it has the size given (-1 otherwise: left out of the manifest). */
function logMtime(messages: RoomMessages, roomId: string, size: number): Promise<number> {
  return stat(messages.fileOf(roomId)).then((s) => (s.size === size ? s.mtimeMs : -1), () => -1);
}

/**
 * A DATA_DIR of an older version kept its persisted indexes beside the logs (`names`, the log
 * folder's listing, which start-up reads anyway): they move to their own folder (a rename each),
 * so the first start after the upgrade still uses them instead of scanning every log, and a start
 * that stopped half-way through the move finishes it. They are a cache: one that fails to move
 * is deleted.
 */
async function moveIndexFiles(logDir: string, names: readonly string[], indexDir: string): Promise<void> {
  for (const name of names) {
    if (!name.endsWith('.idx') && name !== MANIFEST_FILE) continue;
    await rename(join(logDir, name), join(indexDir, name)).catch(() => rm(join(logDir, name), { force: true }));
  }
}
