// Persisted message indexes: a cache of what the start-up scan of the room logs would build,
// never the record (the logs are). Two kinds of file under indexes/ (room_messages/ holds only
// the logs; a DATA_DIR of an older version had them there and they are moved at start):
//
// - `{room_id}.idx`, one room's index (room-index.ts), written on a clean shutdown for the rooms
//   whose index changed. It is trusted only if its checksum holds, the log is at least as long
//   as the bytes it covers, and the last bytes it covers are unchanged (a fingerprint); the log
//   after them is scanned as usual (appends after it was written, a torn tail). Anything else —
//   missing, stale, damaged — means a full scan of that log, which is always correct.
// - `indexes.json`, the manifest, written on a clean shutdown after the `.idx` files: for each
//   room log, its size and modification time then, and its last seq and message count. A log
//   whose size and mtime are still those was not touched since that clean shutdown, so it has no
//   torn tail and its last seq is known: start-up registers it without reading it or its `.idx`
//   (serving needs only the last seq), and its index is loaded on first use. Every other log
//   (appended after the shutdown, by a server that then crashed; restored; edited) goes through
//   the `.idx` + tail scan at start, which cuts a torn tail with a warning (SPEC §5).
//
// All of them are written without fsync (a torn one fails its checksum or JSON parse and is
// ignored), are not backed up, and may be deleted at any time.
import { open, readFile, rename, rm, writeFile, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../logger.js';
import { readAt, scanRoomLog } from './log-reader.js';
import { crc32Yielding, RoomIndex, type IndexHeader } from './room-index.js';
import type { SeqTable } from './seq-table.js';

export const MANIFEST_FILE = 'indexes.json';
/** First read of an `.idx`: enough for the header of a room with a few hundred senders. */
const HEAD_BYTES = 64 * 1024;

/** A room log as the manifest recorded it at a clean shutdown. */
export interface ManifestEntry {
  size: number;
  mtimeMs: number;
  lastSeq: number;
  count: number;
  /**
   * The room's last seq written by a person (a room runtime needs it at load): with it, a state
   * change of a cold room (a join, presence) reads no index. Absent in manifests before it.
   */
  lastPersonSeq?: number;
}

/** A manifest row: size, mtime, last seq, count[, last person seq]. */
type ManifestRow = [number, number, number, number] | [number, number, number, number, number];

export class IndexFiles {
  constructor(private readonly opts: { dir: string; logger: Logger }) {}

  idxPath(roomId: string): string {
    return join(this.opts.dir, `${roomId}.idx`);
  }

  /** The 64 bytes of the log before `size`, hex (what an `.idx` remembers of the log it covers). */
  private async fingerprint(logPath: string, size: number): Promise<string> {
    if (size === 0) return '';
    const handle = await open(logPath, 'r');
    try {
      const from = Math.max(0, size - 64);
      return (await readAt(handle, from, size - from)).toString('hex');
    } finally {
      await handle.close();
    }
  }

  /**
   * The room's persisted index and the log size it covers, if it still matches the log.
   * `unchanged`: the manifest vouches that the log was not touched since a clean shutdown, so an
   * index covering the whole log needs no fingerprint read (an open, a read and a close a room).
   * A v3 file is read in two steps: now the header and the core arrays (one positional read,
   * checked by their own CRC-32), and the id and client tables when first needed
   * (`RoomIndex.loadTables`): a room's first page reads 13 bytes a message, not 30.
   */
  async load(roomId: string, logPath: string, fileSize: number, unchanged = false): Promise<{ index: RoomIndex; from: number } | undefined> {
    const path = this.idxPath(roomId);
    let handle: FileHandle;
    try {
      handle = await open(path, 'r');
    } catch {
      return undefined;
    }
    try {
      const { index, size, fingerprint } = await this.readCore(roomId, handle, path, logPath);
      if (size > fileSize) throw new Error(`covers ${size} bytes, the log has ${fileSize}`);
      if (!(unchanged && size === fileSize) && (await this.fingerprint(logPath, size)) !== fingerprint) throw new Error('the log changed');
      return { index, from: size };
    } catch (err) {
      this.opts.logger.info({ room_id: roomId, reason: (err as Error).message }, 'persisted message index not used; scanning the log');
      return undefined;
    } finally {
      await handle.close();
    }
  }

  /** The header and core of a v3 file (its tables deferred); an older file is read whole. */
  private async readCore(roomId: string, handle: FileHandle, path: string, logPath: string): Promise<{ index: RoomIndex; size: number; fingerprint: string }> {
    const fileBytes = (await handle.stat()).size;
    const { head, nl } = await readHeader(handle, fileBytes, fileBytes);
    if (nl < 0) throw new Error('no header');
    const h = RoomIndex.parseHeader(head, nl);
    if (h.v !== 3) return RoomIndex.fromOlderFormat(await readAt(handle, 0, fileBytes));
    const parts = RoomIndex.partBytes(h);
    const coreAt = nl + 1;
    if (fileBytes !== coreAt + parts.core + parts.tables) throw new Error(fileBytes < coreAt + parts.core + parts.tables ? 'truncated' : 'trailing bytes');
    const index = RoomIndex.fromCore(h, await readAt(handle, coreAt, parts.core));
    const headerText = head.toString('latin1', 0, coreAt);
    index.deferTables(() => this.readTables(roomId, path, logPath, h, headerText, coreAt + parts.core, parts.tables));
    return { index, size: h.size, fingerprint: h.fingerprint };
  }

  /**
   * The tables of a v3 file whose core was loaded: read if the file is still the one the core
   * came from (same header) and they check out; otherwise (deleted, damaged, replaced) rebuilt by
   * a scan of the log bytes the core covers (unchanged: nothing is added before the tables are in).
   */
  private async readTables(
    roomId: string,
    path: string,
    logPath: string,
    h: IndexHeader,
    headerText: string,
    at: number,
    bytes: number,
  ): Promise<{ ids: SeqTable; clients: SeqTable }> {
    try {
      const handle = await open(path, 'r');
      try {
        if ((await readAt(handle, 0, headerText.length)).toString('latin1') !== headerText) throw new Error('the index file changed');
        const tables = await readAt(handle, at, bytes);
        if ((await crc32Yielding(tables)) !== h.crc32Tables) throw new Error('checksum');
        return RoomIndex.tablesFrom(h, tables, true);
      } finally {
        await handle.close();
      }
    } catch (err) {
      this.opts.logger.info({ room_id: roomId, reason: (err as Error).message }, 'persisted message index not used; scanning the log');
      return (await scanRoomLog(logPath, roomId, this.opts.logger, h.size, undefined, false)).index.tables();
    }
  }

  /**
   * The id table's hash slots of a room's v3 `.idx`, read alone (the warm-up fills the id
   * directory from them without loading the room's core), if the file covers exactly the log's
   * `size` bytes of a log the manifest vouches for (`load`'s `unchanged` case) and its tables
   * check out; undefined otherwise (the caller then loads the index the usual way). With them,
   * the room's last person seq from the same header.
   */
  async readIdHashes(roomId: string, size: number): Promise<{ hashes: Int32Array; lastPersonSeq: number } | undefined> {
    let handle: FileHandle;
    try {
      handle = await open(this.idxPath(roomId), 'r');
    } catch {
      return undefined;
    }
    try {
      const fileBytes = (await handle.stat()).size;
      const { head, nl } = await readHeader(handle, fileBytes, HEAD_BYTES);
      if (nl < 0) return undefined;
      const h = RoomIndex.parseHeader(head, nl);
      const parts = RoomIndex.partBytes(h);
      const at = nl + 1 + parts.core;
      if (h.v !== 3 || h.size !== size || fileBytes !== at + parts.tables) return undefined;
      const tables = await readAt(handle, at, parts.tables);
      if ((await crc32Yielding(tables)) !== h.crc32Tables) return undefined;
      return { hashes: RoomIndex.tablesFrom(h, tables, true).ids.export().keys, lastPersonSeq: h.lastPerson };
    } catch {
      return undefined; // the usual load reports what is wrong
    } finally {
      await handle.close();
    }
  }

  /** Writes the room's index covering the log's first `size` bytes; false (logged) if that failed. */
  async write(roomId: string, index: RoomIndex, logPath: string, size: number): Promise<boolean> {
    const path = this.idxPath(roomId);
    try {
      await writeFile(`${path}.tmp`, index.serialize(size, await this.fingerprint(logPath, size)));
      await rename(`${path}.tmp`, path);
      return true;
    } catch (err) {
      this.opts.logger.warn({ err, room_id: roomId }, 'writing a persisted message index failed; the next start scans that log');
      await rm(`${path}.tmp`, { force: true }).catch(() => undefined);
      return false;
    }
  }

  /** The manifest's entries; empty if it is missing or unreadable (every log is then checked). */
  async readManifest(): Promise<Map<string, ManifestEntry>> {
    const entries = new Map<string, ManifestEntry>();
    let text: string;
    try {
      text = await readFile(join(this.opts.dir, MANIFEST_FILE), 'utf8');
    } catch {
      return entries;
    }
    try {
      const parsed = JSON.parse(text) as { v: number; rooms: Record<string, ManifestRow> };
      if (parsed.v !== 1 || typeof parsed.rooms !== 'object' || parsed.rooms === null) throw new Error(`version ${parsed.v}`);
      for (const [roomId, row] of Object.entries(parsed.rooms)) {
        if (!Array.isArray(row) || (row.length !== 4 && row.length !== 5) || !row.every((n) => typeof n === 'number' && Number.isFinite(n) && n >= 0)) continue;
        const [size, mtimeMs, lastSeq, count, lastPersonSeq] = row;
        entries.set(roomId, { size, mtimeMs, lastSeq, count, ...(lastPersonSeq !== undefined && lastPersonSeq <= lastSeq ? { lastPersonSeq } : {}) });
      }
    } catch (err) {
      this.opts.logger.info({ reason: (err as Error).message }, 'index manifest not used; every room log is checked at start');
    }
    return entries;
  }

  async writeManifest(entries: ReadonlyMap<string, ManifestEntry>): Promise<void> {
    const rooms: Record<string, ManifestRow> = {};
    for (const [roomId, e] of entries) {
      rooms[roomId] = e.lastPersonSeq === undefined ? [e.size, e.mtimeMs, e.lastSeq, e.count] : [e.size, e.mtimeMs, e.lastSeq, e.count, e.lastPersonSeq];
    }
    const path = join(this.opts.dir, MANIFEST_FILE);
    try {
      await writeFile(`${path}.tmp`, JSON.stringify({ v: 1, rooms }));
      await rename(`${path}.tmp`, path);
    } catch (err) {
      this.opts.logger.warn({ err }, 'writing the index manifest failed; the next start checks every room log');
      await rm(`${path}.tmp`, { force: true }).catch(() => undefined);
    }
  }

}

/**
 * The first line of an index file (its JSON header) and where it ends (-1: not within `max`
 * bytes). Most headers are a few hundred bytes, so 4 KiB is read first, then up to HEAD_BYTES,
 * then `max` (a room with very many senders): reading 64 KiB a room at once was 640 MB of
 * reads for 10,000 rooms.
 */
async function readHeader(handle: FileHandle, fileBytes: number, max: number): Promise<{ head: Buffer; nl: number }> {
  let head: Buffer = Buffer.alloc(0);
  for (const step of [4096, HEAD_BYTES, max]) {
    const want = Math.min(fileBytes, step);
    if (want <= head.length) continue;
    head = await readAt(handle, 0, want);
    const nl = head.indexOf(0x0a);
    if (nl >= 0) return { head, nl };
  }
  return { head, nl: -1 };
}
