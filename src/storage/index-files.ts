// Persisted message indexes: a cache of what the start-up scan of the room logs would build,
// never the record (the logs are). Two kinds of file under room_messages/:
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
import { open, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../logger.js';
import { readAt } from './log-reader.js';
import { RoomIndex } from './room-index.js';

export const MANIFEST_FILE = 'indexes.json';

/** A room log as the manifest recorded it at a clean shutdown. */
export interface ManifestEntry {
  size: number;
  mtimeMs: number;
  lastSeq: number;
  count: number;
}

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
   */
  async load(roomId: string, logPath: string, fileSize: number, unchanged = false): Promise<{ index: RoomIndex; from: number } | undefined> {
    let buf: Buffer;
    try {
      buf = await readFile(this.idxPath(roomId));
    } catch {
      return undefined;
    }
    try {
      const { index, size, fingerprint } = RoomIndex.deserialize(buf);
      if (size > fileSize) throw new Error(`covers ${size} bytes, the log has ${fileSize}`);
      if (!(unchanged && size === fileSize) && (await this.fingerprint(logPath, size)) !== fingerprint) throw new Error('the log changed');
      return { index, from: size };
    } catch (err) {
      this.opts.logger.info({ room_id: roomId, reason: (err as Error).message }, 'persisted message index not used; scanning the log');
      return undefined;
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
      const parsed = JSON.parse(text) as { v: number; rooms: Record<string, [number, number, number, number]> };
      if (parsed.v !== 1 || typeof parsed.rooms !== 'object' || parsed.rooms === null) throw new Error(`version ${parsed.v}`);
      for (const [roomId, row] of Object.entries(parsed.rooms)) {
        if (!Array.isArray(row) || row.length !== 4 || !row.every((n) => typeof n === 'number' && Number.isFinite(n) && n >= 0)) continue;
        const [size, mtimeMs, lastSeq, count] = row;
        entries.set(roomId, { size, mtimeMs, lastSeq, count });
      }
    } catch (err) {
      this.opts.logger.info({ reason: (err as Error).message }, 'index manifest not used; every room log is checked at start');
    }
    return entries;
  }

  async writeManifest(entries: ReadonlyMap<string, ManifestEntry>): Promise<void> {
    const rooms: Record<string, [number, number, number, number]> = {};
    for (const [roomId, e] of entries) rooms[roomId] = [e.size, e.mtimeMs, e.lastSeq, e.count];
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
