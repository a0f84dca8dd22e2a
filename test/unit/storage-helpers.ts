// Shared by the storage tests and their child-process fixture: record factories, temp dirs and
// a logger that keeps what it logs.
import { mkdir, mkdtemp, rm, type FileHandle } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { pino, type Logger } from 'pino';
import { afterEach, beforeEach } from 'vitest';
import { silentLogger } from '../../src/logger.js';
import { FileStore, type FileStoreOptions } from '../../src/storage/file-store.js';
import { defaultFsOps, type FsOps } from '../../src/storage/fs-ops.js';
import type { AgentRecord, Message, RoomRecord, UserRecord } from '../../src/types.js';

export async function tempDir(): Promise<{ dir: string; cleanup: () => Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'chatroom-store-'));
  return { dir, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

/**
 * A fresh DATA_DIR for each test of the file (with its `room_messages` folder made when
 * `withLogDir`), and the FileStores opened on it: closed, and the directory removed, after each
 * test. Read `dir`, `logDir` and `indexDir` (the persisted indexes) inside the tests (they
 * change per test).
 */
export function fileStoresPerTest(
  options: { withLogDir?: boolean } = {},
): {
  readonly dir: string;
  readonly logDir: string;
  readonly indexDir: string;
  store: (logger?: Logger, options?: Partial<FileStoreOptions>) => FileStore;
  /** Closes `store` after the test with the others (for stores made elsewhere). */
  track: (store: FileStore) => void;
} {
  let dir = '';
  let cleanup = async (): Promise<void> => undefined;
  const stores: FileStore[] = [];
  beforeEach(async () => {
    ({ dir, cleanup } = await tempDir());
    if (options.withLogDir) await mkdir(join(dir, 'room_messages'), { recursive: true });
  });
  afterEach(async () => {
    await Promise.all(stores.splice(0).map((s) => s.close().catch(() => undefined)));
    await cleanup();
  });
  return {
    get dir() {
      return dir;
    },
    get logDir() {
      return join(dir, 'room_messages');
    },
    get indexDir() {
      return join(dir, 'indexes');
    },
    store(logger = silentLogger, options = {}) {
      const s = new FileStore({ dataDir: dir, logger, ...options });
      stores.push(s);
      return s;
    },
    track(store) {
      stores.push(store);
    },
  };
}

export interface LogLine {
  level: number;
  msg: string;
  [key: string]: unknown;
}

/** A pino logger whose lines land in `lines` (parsed). */
export function memoryLogger(): { logger: Logger; lines: LogLine[]; warnings: () => LogLine[] } {
  const lines: LogLine[] = [];
  const logger = pino({ level: 'debug' }, { write: (s: string) => void lines.push(JSON.parse(s) as LogLine) });
  return { logger, lines, warnings: () => lines.filter((l) => l.level === 40) };
}

export function makeMessage(roomId: string, seq: number, over: Partial<Message> = {}): Message {
  return {
    message_id: randomUUID(),
    room_id: roomId,
    seq,
    timestamp: new Date().toISOString(),
    sender: 'alice',
    sender_id: 'u-alice',
    role: 'user',
    text_content: `message ${seq} — 你好`,
    text_content_i18n: null,
    source_language: 'en',
    file_url: '',
    file_type: '',
    mentions: [],
    visible: true,
    processed: false,
    response_to: null,
    display_timezone: 'UTC',
    round_id: null,
    skip_reason: null,
    deleted: false,
    ...over,
  };
}

export function makeRoom(roomId: string, over: Partial<RoomRecord> = {}): RoomRecord {
  return {
    room_id: roomId,
    room_name: `Room ${roomId}`,
    room_description: 'test',
    created_at: '2026-01-01T00:00:00.000Z',
    created_by: 'alice',
    created_by_id: 'u-alice',
    password_hash: null,
    interaction_mode: 'default',
    user_participation: true,
    system_status: 'active',
    language: 'en',
    timezone: 'UTC',
    members: [],
    announcement: { user_announcement: '', announcement_publisher: '', timestamp: null, system_announcement: '' },
    current_round: null,
    history_rounds: [],
    settings: { display_time_format: '24h', display_date_format: 'yyyy-MM-dd', max_auto_rounds: 10, turn_timeout_ms: null },
    archived: false,
    processed_through_seq: 0,
    ...over,
  };
}

export function makeAgent(agentId: string, over: Partial<AgentRecord> = {}): AgentRecord {
  return {
    agent_id: agentId,
    name: `agent-${agentId}`,
    introduce: 'hi',
    rooms: [],
    status: 'offline',
    last_active: '2026-01-01T00:00:00.000Z',
    capabilities: [],
    skip_list: [],
    language_support: ['en'],
    preferred_language: 'en',
    timezone: 'UTC',
    created_at: '2026-01-01T00:00:00.000Z',
    token_hashes: ['abc'],
    ...over,
  };
}

export function makeUser(userId: string, over: Partial<UserRecord> = {}): UserRecord {
  return {
    user_id: userId,
    name: `user-${userId}`,
    language: 'en',
    timezone: 'UTC',
    rooms: [],
    last_active: '2026-01-01T00:00:00.000Z',
    created_at: '2026-01-01T00:00:00.000Z',
    token_hashes: ['def'],
    password_hash: null,
    ...over,
  };
}

/** The ways a FileStore write can fail, as `faultyFsOps().set(kind)` injects them. */
export const FS_FAULT_KINDS = ['open', 'write', 'enospc', 'fsync', 'rename', 'fsyncDir'] as const;
export type FsFaultKind = (typeof FS_FAULT_KINDS)[number];

/**
 * fsOps for FileStore whose operations fail while a fault kind is set (every call of that kind,
 * until cleared): `write` lands half the bytes then fails with EIO (a torn write), `enospc` lands
 * a quarter then fails with ENOSPC, the others fail before doing anything. `truncate` and
 * `close` never fail: they are how a store cleans up. `calls` counts failures injected.
 */
export function faultyFsOps(): { ops: Partial<FsOps>; set(kind: string | null): void; injected: () => number } {
  let kind: string | null = null;
  let injected = 0;
  const fail = (code: string, what: string) => {
    injected++;
    return Object.assign(new Error(`injected ${what} failure`), { code });
  };
  const ops: Partial<FsOps> = {
    async open(path, flags) {
      if (kind === 'open') throw fail('EMFILE', 'open');
      return defaultFsOps.open(path, flags);
    },
    async write(handle, data) {
      if (kind === 'write' || kind === 'enospc') {
        const part = kind === 'write' ? 2 : 4;
        await defaultFsOps.write(handle, data.subarray(0, Math.floor(data.length / part)));
        throw kind === 'write' ? fail('EIO', 'write') : fail('ENOSPC', 'write (disk full)');
      }
      return defaultFsOps.write(handle, data);
    },
    async fsync(handle) {
      if (kind === 'fsync') throw fail('EIO', 'fsync');
      return defaultFsOps.fsync(handle);
    },
    async rename(from, to) {
      if (kind === 'rename') throw fail('EIO', 'rename');
      return defaultFsOps.rename(from, to);
    },
    async fsyncDir(dir) {
      if (kind === 'fsyncDir') throw fail('EIO', 'fsyncDir');
      return defaultFsOps.fsyncDir(dir);
    },
  };
  return { ops, set: (k) => void (kind = k), injected: () => injected };
}

/**
 * fsOps whose fsync waits for `release()` while held: a write held between its write and its
 * fsync. `hold(path)` holds only the files whose path matches (the log, not the snapshot);
 * `hold()` holds every file. `pathOf` names the file of a handle opened through these ops.
 */
export function heldFsyncOps() {
  const paths = new WeakMap<FileHandle, string>();
  let holding: RegExp | undefined;
  let held: (() => void)[] = [];
  const pathOf = (handle: FileHandle): string => paths.get(handle) ?? '';
  const wait = async (handle: FileHandle): Promise<void> => {
    if (holding?.test(pathOf(handle))) await new Promise<void>((r) => held.push(r));
  };
  const ops: Partial<FsOps> = {
    open: async (path, flags) => {
      const handle = await defaultFsOps.open(path, flags);
      paths.set(handle, path);
      return handle;
    },
    fsync: async (handle) => {
      await wait(handle);
      return defaultFsOps.fsync(handle);
    },
  };
  return {
    ops,
    pathOf,
    wait,
    hold: (path: RegExp = /(?:)/) => void (holding = path),
    release: () => {
      holding = undefined;
      const h = held;
      held = [];
      for (const r of h) r();
    },
    waiting: () => held.length,
  };
}
