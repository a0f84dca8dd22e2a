// The PostgreSQL store and its companions (STORE=postgres, SPEC §11); docs/scale-out.md tells
// how to run several nodes on one database.
//
// How a server node puts them together:
// 1. Config: `parseStoreConfig(env)` → { kind: 'file' } | { kind: 'postgres', databaseUrl, poolSize }.
// 2. Store: `new PgStore({ connectionString: databaseUrl, poolSize, onPoolError })`, `open()`
//    migrates. (No DATA_DIR lock on this path: nodes share DATA_DIR for uploads and exports.)
// 3. Room runtime: a commit may reject with StaleRoomError (another node wrote the room):
//    drop the cached room, reload, recompute — `commitWithRetry` does exactly that.
// 4. Events: one `RoomFeed` per node; `onChange` → `Rooms.remoteChange` (the room's runtime
//    takes a carried commit that follows its version as it came, else reads what changed since
//    its copy in one snapshot, `PgStore.readChangesSince`, and publishes the difference; versions
//    it has seen are ignored, so its own commits coming back change nothing). `onResync` →
//    `Rooms.refreshAll()`; `poll: { pool, everyMs: 2000, rooms }` covers a notification lost
//    with a dead node.
// 5. Deadlines: one `DeadlineWatcher` per node (claiming rows due for more than a 1 s grace);
//    its handler loads the room (`Rooms.fireDue`), whose timer fires the ordinary timeout. The
//    commit that fires it updates the stored row by itself.
// 6. Rate limits: build the limiters with `postgresLimiters(store.connectionPool)`.
// 7. A2A tasks: `new PgA2aTasks(store.connectionPool, nodeId)`, the feed's `onA2aTaskCanceled`
//    → `heardCancel`; the rooms' A2A interface receives it as its SharedTaskTable.
export { PgStore, type PgStoreOptions } from './pg-store.js';
export { parseStoreConfig, type StoreConfig } from './store-config.js';
export { RoomFeed, parseRoomChange, ROOM_CHANNEL, type RoomChange, type RoomFeedOptions } from './feed.js';
export { commitWithRetry, type CommitPlan, type RetryOptions, type RetryResult } from './stale-retry.js';
export {
  DeadlineWatcher,
  claimDueDeadlines,
  completeDeadline,
  storedDeadline,
  turnDeadlineOf,
  type DueDeadline,
  type TurnDeadline,
  type DeadlineWatcherOptions,
} from './deadlines.js';
export { memoryLimiters, postgresLimiters, type LimiterFactory, type LimiterSpec } from './rate-limits.js';
export { PgA2aTasks } from './a2a-tasks.js';
export { NodePresence, type NodePresenceOptions } from './node-presence.js';
export { migrate, loadMigrations, MIGRATIONS_DIR } from './migrations.js';
