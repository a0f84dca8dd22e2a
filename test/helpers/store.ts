// One way to open a FileStore in tests (issue 42: it was written five times). The defaults are
// the ones the storage tests want: a silent logger, no compaction timer (tests compact by hand)
// and every change through the state journal; `small` keeps small state in the snapshots alone,
// each change rewriting the snapshot it touches (syncSnapshotBytes, state-writer.ts).
import { silentLogger } from '../../src/logger.js';
import { FileStore, type FileStoreOptions } from '../../src/storage/file-store.js';

/** syncSnapshotBytes of a "small" store: the test states stay far below it. */
export const SMALL_STATE_BYTES = 256 * 1024;

/** What a call may change: any FileStore option (dataDir included), or `small`. */
export type OpenStoreOptions = Partial<FileStoreOptions> & { small?: boolean };

export interface StoreOpenerOptions extends Omit<OpenStoreOptions, 'dataDir'> {
  /** The DATA_DIR of the running test (read at each call: it changes per test). */
  dataDir: () => string;
  /** Called with each store before it opens, so the test file closes it after the test. */
  track?: (store: FileStore) => void;
}

/**
 * Returns `openStore(options?)`: a FileStore with the test defaults, the opener's options and
 * then the call's options (later wins), tracked and opened.
 */
export function storeOpener(opener: StoreOpenerOptions): (options?: OpenStoreOptions) => Promise<FileStore> {
  const { dataDir, track, ...defaults } = opener;
  return async (options = {}) => {
    const { small, ...rest } = { ...defaults, ...options };
    const store = new FileStore({
      dataDir: dataDir(),
      logger: silentLogger,
      compactEveryMs: 0,
      syncSnapshotBytes: small ? SMALL_STATE_BYTES : 0,
      ...rest,
    });
    track?.(store);
    await store.open();
    return store;
  };
}
