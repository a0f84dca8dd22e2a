// A snapshot is written in parts (about 1 MiB each, serialised a few ms per event-loop turn):
// the file is still exactly one record per line in one JSON array, and loads back the same.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/logger.js';
import { defaultFsOps, newIoStats } from '../../src/storage/fs-ops.js';
import { SnapshotFile } from '../../src/storage/snapshot.js';
import { tempDir } from './storage-helpers.js';

type Rec = { id: string; text: string };

describe('snapshot writes', () => {
  let dir = '';
  let cleanup = async (): Promise<void> => undefined;
  beforeEach(async () => ({ dir, cleanup } = await tempDir()));
  afterEach(() => cleanup());

  const file = (options: { cacheJsonBelowBytes?: number } = {}) =>
    new SnapshotFile<Rec>({ path: join(dir, 'things.json'), dir, key: (r) => r.id, fsOps: defaultFsOps, stats: newIoStats(), logger: silentLogger, ...options });

  for (const count of [0, 1, 3, 9000]) {
    it(`writes ${count} records as one array, one per line, and loads them back`, async () => {
      const records: Rec[] = Array.from({ length: count }, (_, i) => ({ id: `r${i}`, text: `记录 ${i} ${'x'.repeat(i % 300)}` }));
      const snap = file({ cacheJsonBelowBytes: 1000 });
      for (const r of records) snap.set(r);
      await snap.write();
      const text = await readFile(snap.path, 'utf8');
      expect(text).toBe(count === 0 ? '[]\n' : `[\n${records.map((r) => JSON.stringify(r)).join(',\n')}\n]\n`);
      expect(snap.bytes).toBe(Buffer.byteLength(text));
      // A second write (records' JSON cached or not) gives the same file.
      await snap.write();
      expect(await readFile(snap.path, 'utf8')).toBe(text);
      const again = file();
      expect(await again.load()).toBe(true);
      expect([...again.records.values()]).toEqual(records);
    });
  }
});
