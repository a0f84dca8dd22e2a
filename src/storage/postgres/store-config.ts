// Which store the server runs on (SPEC §11): parsed with the rest of the configuration in
// src/config.ts (STORE, DATABASE_URL, DATABASE_POOL_SIZE); re-exported here for the store's own
// users and tests.
export { parseStoreConfig, type StoreConfig } from '../../config.js';
