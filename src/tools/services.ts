// What the tools need, passed in by the composition root (no service locator: each tool module
// names what it uses from here).
import type { Config } from '../config.js';
import type { LastActiveRecorder } from '../identity/last-active.js';
import type { LinkSigner } from '../identity/links.js';
import type { Participants } from '../identity/participants.js';
import type { Presence } from '../identity/presence.js';
import type { RateLimits } from '../limits/rate-limits.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../observability/metrics.js';
import type { RoomReads } from '../runtime/reads.js';
import type { Rooms } from '../runtime/rooms.js';
import type { TurnWaits } from '../runtime/waits.js';
import type { Store } from '../storage/store.js';

export interface ToolServices {
  config: Config;
  logger: Logger;
  now: () => number;
  store: Store;
  participants: Participants;
  presence: Presence;
  /** Stores last_active after calls (tools/index.ts). */
  lastActive: Pick<LastActiveRecorder, 'called'>;
  rooms: Rooms;
  reads: RoomReads;
  waits: TurnWaits;
  links: LinkSigner;
  limits: RateLimits;
  metrics: Metrics;
}
