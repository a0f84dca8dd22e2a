// The Store contract (store-contract.ts) run against every embedded implementation.
import { silentLogger } from '../../src/logger.js';
import { FileStore } from '../../src/storage/file-store.js';
import { MemoryStore } from '../../src/storage/memory-store.js';
import { faultyFsOps, FS_FAULT_KINDS, heldFsyncOps, tempDir } from './storage-helpers.js';
import { storeContract } from './store-contract.js';

storeContract('MemoryStore', async () => {
  let failing: string | null = null;
  const store = new MemoryStore({
    beforeWrite: (kind, detail) => {
      if (failing) throw new Error(`injected ${failing} failure (${kind} ${detail})`);
    },
  });
  await store.open();
  return {
    store,
    faults: { kinds: ['error'], set: (kind) => void (failing = kind) },
    cleanup: async () => undefined,
  };
}, { reopen: false });

for (const [name, cacheMessages] of [
  ['FileStore', undefined],
  // Every message read comes from the logs: the cold paths must answer exactly the same.
  ['FileStore without a message cache', 0],
] as const) {
storeContract(name, async () => {
  const { dir, cleanup } = await tempDir();
  const faults = faultyFsOps();
  const held = heldFsyncOps();
  // The fault switch's ops, with each fsync first waiting while writes are held.
  const ops = { ...faults.ops, fsync: async (handle: Parameters<NonNullable<typeof faults.ops.fsync>>[0]) => {
    await held.wait(handle);
    return faults.ops.fsync!(handle);
  } };
  const make = () => new FileStore({ dataDir: dir, logger: silentLogger, fsOps: ops, cacheMessages, compactEveryMs: 0 });
  const harness = {
    store: make(),
    async reopen() {
      await harness.store.close();
      harness.store = make();
      await harness.store.open();
      return harness.store;
    },
    faults: { kinds: FS_FAULT_KINDS, set: (kind: string | null) => faults.set(kind) },
    holdWrites: { hold: () => held.hold(), release: () => held.release(), waiting: () => held.waiting() },
    cleanup,
  };
  await harness.store.open();
  return harness;
});
}
