// Write failures (injected through the fsOps hook): the callers of the failed batch are
// rejected, the store stays usable, and the files never end up corrupt.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { silentLogger } from '../../src/logger.js';
import { defaultFsOps, type FsOps } from '../../src/storage/fs-ops.js';
import { FileStore } from '../../src/storage/file-store.js';
import { makeMessage, makeRoom, memoryLogger, tempDir } from './storage-helpers.js';

let dir: string;
let cleanup: () => Promise<void>;
const stores: FileStore[] = [];

beforeEach(async () => {
  ({ dir, cleanup } = await tempDir());
});
afterEach(async () => {
  await Promise.all(stores.splice(0).map((s) => s.close().catch(() => undefined)));
  await cleanup();
});

/** fsOps whose named operation fails while `faults[op]` is above zero (counting down). */
function faultyOps(faults: Partial<Record<keyof FsOps, number>>): Partial<FsOps> {
  const boom = (op: string) => Object.assign(new Error(`injected ${op} failure`), { code: 'EIO' });
  const wrap = <K extends keyof FsOps>(op: K): FsOps[K] =>
    (async (...args: unknown[]) => {
      if ((faults[op] ?? 0) > 0) {
        faults[op]!--;
        if (op === 'write') {
          // A torn write: half the bytes land, then the error.
          const [handle, data] = args as [Parameters<FsOps['write']>[0], Buffer];
          await defaultFsOps.write(handle, data.subarray(0, Math.floor(data.length / 2)));
        }
        throw boom(op);
      }
      return (defaultFsOps[op] as (...a: unknown[]) => Promise<unknown>)(...args);
    }) as FsOps[K];
  return { open: wrap('open'), write: wrap('write'), fsync: wrap('fsync'), rename: wrap('rename'), fsyncDir: wrap('fsyncDir') };
}

async function openStore(fsOps?: Partial<FsOps>, logger = silentLogger): Promise<FileStore> {
  const s = new FileStore({ dataDir: dir, logger, fsOps });
  stores.push(s);
  await s.open();
  return s;
}

async function reopenClean(s: FileStore): Promise<FileStore> {
  await s.close();
  return openStore();
}

const next = (s: FileStore, room = 'r1') => makeMessage(room, s.nextSeq(room));

describe('room log write failures', () => {
  it.each(['fsync', 'write', 'open', 'fsyncDir'] as const)(
    'rejects the batch when %s fails, then a later append writes both without a seq gap',
    async (op) => {
      const faults: Partial<Record<keyof FsOps, number>> = {};
      const { logger, lines } = memoryLogger();
      const s = await openStore(faultyOps(faults), logger);
      await s.appendMessages('r1', [next(s)]); // the log exists and is open
      if (op === 'open' || op === 'fsyncDir') {
        // Those only happen when a log is (re)opened: use a fresh room.
        faults[op] = 1;
        await expect(s.appendMessages('r2', [next(s, 'r2')])).rejects.toThrow(`injected ${op} failure`);
        await s.appendMessages('r2', [next(s, 'r2')]);
        const again = await reopenClean(s);
        expect(again.roomMessages('r2').map((m) => m.seq)).toEqual([1, 2]);
        return;
      }
      faults[op] = 1;
      const failed = next(s);
      const first = s.appendMessages('r1', [failed]);
      const second = s.appendMessages('r1', [next(s)]);
      const results = await Promise.allSettled([first, second]);
      expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']); // same batch
      expect(lines.some((l) => l.level === 50 && l.msg === 'room log write failed')).toBe(true);
      // Memory already has them (documented); the next batch makes the disk catch up.
      expect(s.getMessage(failed.message_id)).toEqual(failed);
      const later = next(s);
      await s.appendMessages('r1', [later]);
      const again = await reopenClean(s);
      expect(again.roomMessages('r1').map((m) => m.seq)).toEqual([1, 2, 3, 4]);
      expect(again.getMessage(later.message_id)).toEqual(later);
    },
  );

  it('leaves no torn bytes behind a failed write even if nothing else is appended before close', async () => {
    const faults: Partial<Record<keyof FsOps, number>> = {};
    const s = await openStore(faultyOps(faults));
    await s.appendMessages('r1', [next(s)]);
    faults.write = 1;
    await expect(s.appendMessages('r1', [next(s)])).rejects.toThrow(/injected/);
    await s.close(); // retries the failed bytes
    const text = await readFile(join(dir, 'room_messages', 'r1.jsonl'), 'utf8');
    expect(text.split('\n').filter(Boolean).map((l) => (JSON.parse(l) as { seq: number }).seq)).toEqual([1, 2]);
  });

  it('rejects close when the final flush fails, yet releases the lock', async () => {
    const faults: Partial<Record<keyof FsOps, number>> = {};
    const s = await openStore(faultyOps(faults));
    await s.appendMessages('r1', [next(s)]);
    faults.fsync = 2;
    await expect(s.appendMessages('r1', [next(s)])).rejects.toThrow(/injected/);
    await expect(s.close()).rejects.toThrow(/injected fsync/);
    await expect(stat(join(dir, 'server.lock'))).rejects.toThrow(/ENOENT/);
    const again = await openStore();
    expect(again.roomMessages('r1').map((m) => m.seq)).toEqual([1]); // never acknowledged, never written
  });
});

describe('snapshot write failures', () => {
  it.each(['rename', 'fsync', 'write'] as const)('rejects putRoom when %s fails; the file stays valid; later puts work', async (op) => {
    const faults: Partial<Record<keyof FsOps, number>> = {};
    const s = await openStore(faultyOps(faults));
    await s.putRoom(makeRoom('r1'));
    const before = await readFile(join(dir, 'rooms.json'), 'utf8');
    faults[op] = 1;
    await expect(s.putRoom(makeRoom('r2'))).rejects.toThrow(`injected ${op} failure`);
    expect(await readFile(join(dir, 'rooms.json'), 'utf8')).toBe(before);
    expect(s.getRoom('r2')).toBeDefined(); // memory keeps the change (documented)
    await s.putRoom(makeRoom('r3'));
    const onDisk = JSON.parse(await readFile(join(dir, 'rooms.json'), 'utf8')) as Array<{ room_id: string }>;
    expect(onDisk.map((r) => r.room_id)).toEqual(['r1', 'r2', 'r3']);
  });

  it('replaces a snapshot in the durable order: write the temp file, fsync it, rename, fsync the directory', async () => {
    const ops: string[] = [];
    const record = <K extends keyof FsOps>(op: K, describe: (...args: never[]) => string): FsOps[K] =>
      (async (...args: unknown[]) => {
        ops.push(`${op}${describe(...(args as never[]))}`);
        return (defaultFsOps[op] as (...a: unknown[]) => Promise<unknown>)(...args);
      }) as FsOps[K];
    const name = (p: string) => (p.endsWith('rooms.json') ? ' rooms.json' : p.includes('rooms.json') ? ' temp' : ` ${p}`);
    const s = await openStore({
      open: record('open', (p: string) => name(p)),
      write: record('write', () => ''),
      fsync: record('fsync', () => ''),
      close: record('close', () => ''),
      rename: record('rename', (from: string, to: string) => `${name(from)} →${name(to)}`),
      fsyncDir: record('fsyncDir', (d: string) => (d === dir ? ' data dir' : ` ${d}`)),
    });
    ops.length = 0;
    await s.putRoom(makeRoom('r1'));
    expect(ops.filter((op) => op !== 'write')).toEqual(['open temp', 'fsync', 'close', 'rename temp → rooms.json', 'fsyncDir data dir']);
    expect(ops).toContain('write');
  });

  it('rejects putRoom when the directory fsync fails; the renamed file is whole and later puts work', async () => {
    const faults: Partial<Record<keyof FsOps, number>> = {};
    const s = await openStore(faultyOps(faults));
    await s.putRoom(makeRoom('r1'));
    faults.fsyncDir = 1;
    await expect(s.putRoom(makeRoom('r2'))).rejects.toThrow('injected fsyncDir failure');
    expect(() => JSON.parse(readFileSync(join(dir, 'rooms.json'), 'utf8'))).not.toThrow();
    await s.putRoom(makeRoom('r3'));
    const again = await reopenClean(s);
    expect(again.listRooms().map((r) => r.room_id)).toEqual(['r1', 'r2', 'r3']);
  });

  it('logs a failed touchRoom write and writes it on close', async () => {
    const faults: Partial<Record<keyof FsOps, number>> = {};
    const { logger, lines } = memoryLogger();
    const s = await openStore(faultyOps(faults), logger);
    await s.putRoom(makeRoom('r1'));
    faults.rename = 1;
    const room = s.getRoom('r1')!;
    room.system_status = 'paused';
    s.touchRoom(room);
    await new Promise((r) => setTimeout(r, 50));
    expect(lines.some((l) => l.level === 50 && l.msg === 'snapshot write failed')).toBe(true);
    const again = await reopenClean(s);
    expect(again.getRoom('r1')!.system_status).toBe('paused');
  });
});
