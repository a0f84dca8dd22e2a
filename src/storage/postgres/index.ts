// The PostgreSQL store and its companions (STORE=postgres, SPEC §11); docs/scale-out.md tells
// how to run several nodes on one database.
export { PgStore, type PgStoreOptions } from './pg-store.js';
export { parseStoreConfig, type StoreConfig } from './store-config.js';
export { RoomFeed, RoomFollower, parseRoomChange, ROOM_CHANNEL, type RoomChange, type RoomFeedOptions, type RoomFollowerHandler, type FollowerPosition } from './feed.js';
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
export { migrate, loadMigrations, MIGRATIONS_DIR } from './migrations.js';
