// Composition of the services (no transports): storage → identity → room runtimes → reads and
// waits → tools. The server mounts transports on top; tests may use it directly. Time (clock
// and timers) is injected here and passed to every service that waits or times out.
import type { Config } from './config.js';
import { InProcessBus, type EventBus } from './events/bus.js';
import { RateLimits } from './limits/rate-limits.js';
import { LinkSigner } from './identity/links.js';
import { nameKey } from './identity/names.js';
import { Participants } from './identity/participants.js';
import { Presence, PRESENCE_WINDOW_MS, realTimers, SOCKET_GRACE_MS, type Timers } from './identity/presence.js';
import type { Logger } from './logger.js';
import { instrumentBus, instrumentStore, Metrics } from './observability/metrics.js';
import { RoomReads } from './runtime/reads.js';
import { Rooms } from './runtime/rooms.js';
import { TurnWaits } from './runtime/waits.js';
import { createStore } from './storage/index.js';
import type { Store } from './storage/store.js';
import { buildRegistry, type ToolServices } from './tools/index.js';
import type { ToolRegistry } from './tools/registry.js';

export interface App extends ToolServices {
  bus: EventBus;
  registry: ToolRegistry;
  timers: Timers;
  close(): Promise<void>;
}

export interface AppOptions {
  now?: () => number;
  timers?: Timers;
  store?: Store;
  /** Presence window (SPEC §6: 90 s) and the grace after the last WebSocket closes (15 s). */
  presenceWindowMs?: number;
  socketGraceMs?: number;
}

export async function createApp(config: Config, logger: Logger, options: AppOptions = {}): Promise<App> {
  const now = options.now ?? Date.now;
  const timers = options.timers ?? realTimers;
  const rawStore = options.store ?? createStore(config.dataDir, logger, { nameKeyOf: nameKey });
  await rawStore.open();
  const metrics = new Metrics(rawStore);
  const store = instrumentStore(rawStore, metrics);
  const bus = instrumentBus(new InProcessBus(), metrics);
  const participants = new Participants(store, { language: config.defaultLanguage, timezone: config.displayTimezone });
  await participants.load();
  const presence = new Presence(now, timers, options.presenceWindowMs ?? PRESENCE_WINDOW_MS, options.socketGraceMs ?? SOCKET_GRACE_MS);
  for (const found of await store.listParticipants()) {
    const id = found.kind === 'agent' ? found.record.agent_id : found.record.user_id;
    presence.seed(id, Date.parse(found.record.last_active));
  }
  const rooms = new Rooms({
    store,
    bus,
    presence,
    logger,
    now,
    timers,
    turnTimeoutMs: config.turnTimeoutMs,
    maxMessageChars: config.maxMessageChars,
    defaults: { language: config.defaultLanguage, timezone: config.displayTimezone },
  });
  const reads = new RoomReads(rooms, store);
  const waits = new TurnWaits(rooms, reads, store, presence, timers, now);
  countTurns(bus, metrics);

  const services: ToolServices = {
    config,
    logger,
    now,
    store,
    participants,
    presence,
    rooms,
    reads,
    waits,
    links: new LinkSigner(config.linkSecret, now),
    limits: RateLimits.fromConfig(config),
    metrics,
  };
  // One object: the server sets config.port once it listens, and the tools must see it.
  const app: App = Object.assign(services, {
    bus,
    timers,
    registry: buildRegistry(services),
    async close() {
      rooms.stop();
      presence.stop();
      await store.close();
    },
  });
  await rooms.restoreAll();
  return app;
}

/** Turn and round counters (GET /api/v1/metrics), fed from the published events. */
function countTurns(bus: EventBus, metrics: Metrics): void {
  bus.subscribe((event) => {
    if (event.event === 'agent_turn') metrics.turns.inc({ outcome: 'issued' });
    else if (event.event === 'round_start') metrics.rounds.inc({ event: 'started' });
    else if (event.event === 'round_end') metrics.rounds.inc({ event: 'ended' });
    else if (event.event === 'message_new' && event.data.message.role === 'ai_agent') {
      const reason = event.data.message.skip_reason;
      const outcome = reason === null ? 'answered' : reason === 'skip' ? 'skipped' : reason === 'timeout' ? 'timed_out' : reason;
      metrics.turns.inc({ outcome });
    }
  });
}
