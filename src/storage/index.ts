// The storage seam: the rest of the server asks for a Store here. A database-backed store
// would be chosen in createStore without anything else changing.
import type { Logger } from '../logger.js';
import { FileStore, type FileStoreOptions } from './file-store.js';
import type { Store } from './store.js';

export type { Store } from './store.js';
export { FileStore, type FileStoreOptions, type FileStoreStats } from './file-store.js';

/** Default of the message cache (CACHE_MESSAGES): about 50–100 MB of typical messages. */
export const DEFAULT_CACHE_MESSAGES = 50_000;

/**
 * The file store for a DATA_DIR. `options` come from the server config (cacheMessages from
 * CACHE_MESSAGES); without it the environment variable is read here.
 */
export function createStore(dataDir: string, logger: Logger, options: Partial<FileStoreOptions> = {}): Store {
  return new FileStore({ dataDir, logger, cacheMessages: cacheMessagesFromEnv(), ...options });
}

function cacheMessagesFromEnv(): number {
  const raw = process.env.CACHE_MESSAGES;
  if (raw === undefined || raw === '') return DEFAULT_CACHE_MESSAGES;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0) throw new Error(`CACHE_MESSAGES must be a whole number ≥ 0, got ${JSON.stringify(raw)}`);
  return n;
}
