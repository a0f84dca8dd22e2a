// The storage seam: the rest of the server asks for a Store here. A database-backed store
// would be chosen in createStore without anything else changing.
import type { Logger } from '../logger.js';
import { FileStore } from './file-store.js';
import type { Store } from './store.js';

export type { Store } from './store.js';
export { FileStore, type FileStoreOptions, type FileStoreStats } from './file-store.js';

/** `nameKeyOf`: the participants' name uniqueness key (a domain rule, passed down). */
export function createStore(dataDir: string, logger: Logger, nameKeyOf?: (name: string) => string): Store {
  return new FileStore({ dataDir, logger, ...(nameKeyOf ? { nameKeyOf } : {}) });
}
