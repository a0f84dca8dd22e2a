// The file store's options, statistics and folder names (file-store.ts is the store itself).
import type { Logger } from '../logger.js';
import type { FsOps, IoStats } from './fs-ops.js';

export interface FileStoreOptions {
  dataDir: string;
  logger: Logger;
  /** Replaces file operations on the write paths; tests use it to inject failures. */
  fsOps?: Partial<FsOps>;
  /** Room log descriptors kept open at once; idle ones beyond are closed LRU. Default 256. */
  maxOpenLogs?: number;
  /** Room logs scanned at once at open. Default 4. */
  loadConcurrency?: number;
  /**
   * Compact the state journal into the snapshots once it holds this many bytes, or the size of
   * the snapshots if that is larger (so a change costs at most about twice its own size,
   * however many records exist). Default 8 MiB.
   */
  compactBytes?: number;
  /**
   * Compact at least this often while the journal holds changes — as long as that costs little:
   * once the snapshots are larger than `compactBytes`, only when the journal holds at least an
   * eighth of their size (rewriting 80 MB of snapshots every minute for a trickle of changes
   * was most of the server's CPU with 100,000 participants). Default 60 s; 0 = never (tests).
   */
  compactEveryMs?: number;
  /**
   * While the snapshots together are smaller than this, a change is made durable by rewriting
   * the snapshot files it touches; larger state goes through the journal. Default 0: every
   * change goes through the journal and the snapshots are its checkpoints (SPEC §5, see
   * `checkpointMs`). Rewriting the snapshots with each change cost a hand-off two more fsyncs
   * and a serialisation of every room (BENCHMARKS.md).
   */
  syncSnapshotBytes?: number;
  /**
   * The snapshots trail the journal by at most about this long: the first change after a
   * checkpoint schedules the next one this much later (SPEC §5: "at most about a second").
   * Snapshots larger than `compactBytes` follow the amortised rule of `compactEveryMs` instead
   * (rewriting tens of MB each second would be most of the server's work). Default 1000 ms;
   * 0 = none, and so is the default when `compactEveryMs` is 0 (tests that compact by hand).
   */
  checkpointMs?: number;
  /**
   * Messages kept in memory over all rooms (an LRU cache of recent and recently read ones;
   * everything else is read from the logs). Default 50,000 (CACHE_MESSAGES).
   */
  cacheMessages?: number;
  /**
   * The name uniqueness key of a participant loaded from disk (the records do not store the
   * key the services passed to putParticipant). Must be the function the services use; it is
   * passed in because names are a domain rule above the storage layer. Default: NFC and
   * lower case (enough for stores opened by storage tests).
   */
  nameKeyOf?: (name: string) => string;
  /**
   * After open, load the indexes of the rooms start-up registered lazily, one at a time in the
   * background (so a `getMessage` by id never waits for them all). Default true.
   */
  warmIndexes?: boolean;
  /**
   * How long after open the warm-up starts (default 0). The server waits 2 s: until then the
   * start itself (participants, presence) and its first requests have the disk and the CPU.
   */
  warmUpDelayMs?: number;
  /**
   * Bytes of per-room message indexes kept loaded (least recently used dropped first; the one
   * in use, and indexes changed since start, always stay). Default 128 MiB (INDEX_CACHE_BYTES).
   */
  indexCacheBytes?: number;
}

export interface FileStoreStats extends IoStats {
  openLogFiles: number;
  messages: number;
  /** Messages in the cache. */
  cachedMessages: number;
  cacheHits: number;
  cacheMisses: number;
  /** Bytes of the per-room message indexes loaded. */
  indexBytes: number;
  /** Bytes of the message id → room directory (get_full_message). */
  idDirectoryBytes: number;
  /** Rooms whose message ids the directory holds (all of them once the warm-up is done). */
  idDirectoryRooms: number;
}

export const ROOM_MESSAGES_DIR = 'room_messages';
/**
 * The persisted message indexes (`index-files.ts`): a cache beside the logs, in a folder of its
 * own so that room_messages/ holds only the JSON Lines logs (SPEC §5: human-readable JSON).
 */
export const INDEXES_DIR = 'indexes';
export const LOG_SUFFIX = '.jsonl';
// Room ids become file names: no separators, no leading dot, nothing a shell or Windows chokes on.
export const SAFE_ROOM_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$/;

/** Below this total size of the snapshots, each record's JSON is kept for the next rewrite. */
export const CACHE_JSON_BELOW_BYTES = 256 * 1024;
