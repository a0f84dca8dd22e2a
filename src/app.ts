// Composition of the services (no transports): storage → identity → rooms → rounds → messages
// → tools. The server mounts transports on top; tests may use it directly.
import type { Config } from './config.js';
import { InProcessBus, type EventBus } from './events/bus.js';
import { RateLimits } from './limits/rate-limits.js';
import { LinkSigner } from './identity/links.js';
import { Participants } from './identity/participants.js';
import { Presence, realTimers, type Timers } from './identity/presence.js';
import type { Logger } from './logger.js';
import { instrumentBus, instrumentStore, Metrics } from './observability/metrics.js';
import { MessageService } from './messages/service.js';
import { Committer } from './rooms/commit.js';
import { RoomService } from './rooms/service.js';
import { RoundsDriver } from './rounds/driver.js';
import { TurnService } from './rounds/turn-service.js';
import { createStore } from './storage/index.js';
import type { Store } from './storage/store.js';
import { buildRegistry } from './tools/index.js';
import type { ToolRegistry } from './tools/registry.js';

export interface App {
  config: Config;
  logger: Logger;
  store: Store;
  bus: EventBus;
  committer: Committer;
  participants: Participants;
  presence: Presence;
  driver: RoundsDriver;
  rooms: RoomService;
  messages: MessageService;
  turns: TurnService;
  registry: ToolRegistry;
  links: LinkSigner;
  /** One set of rate-limit counters for every route and transport (tool calls and file routes). */
  limits: RateLimits;
  metrics: Metrics;
  now: () => number;
  close(): Promise<void>;
}

export interface AppOptions {
  now?: () => number;
  timers?: Timers;
  store?: Store;
  /** Presence window (SPEC §6: 90 s); tests shorten it to watch agents go offline. */
  presenceWindowMs?: number;
}

export async function createApp(config: Config, logger: Logger, options: AppOptions = {}): Promise<App> {
  const now = options.now ?? Date.now;
  const timers = options.timers ?? realTimers;
  const rawStore = options.store ?? createStore(config.dataDir, logger);
  await rawStore.open();
  const metrics = new Metrics(rawStore);
  const store = instrumentStore(rawStore, metrics);
  const bus = instrumentBus(new InProcessBus(), metrics);
  const committer = new Committer(store, bus);
  const participants = new Participants(store, { language: config.defaultLanguage, timezone: config.displayTimezone });
  const presence = new Presence(now, timers, options.presenceWindowMs);
  for (const agent of store.listAgents()) presence.seed(agent.agent_id, Date.parse(agent.last_active));
  for (const user of store.listUsers()) presence.seed(user.user_id, Date.parse(user.last_active));
  const driver = new RoundsDriver({ store, committer, presence, turnTimeoutMs: config.turnTimeoutMs, now, timers, logger, metrics });
  const rooms = new RoomService(store, committer, driver, presence, bus, {
    language: config.defaultLanguage,
    timezone: config.displayTimezone,
  }, now);
  const messages = new MessageService(store, committer, rooms, driver, config.maxMessageChars, now);
  const turns = new TurnService(store, rooms, messages, driver);

  presence.onChange((change) => {
    rooms.presenceChanged(change.participantId, change.online, change.lastActive);
    const record = store.getAgent(change.participantId) ?? store.getUser(change.participantId);
    if (record) {
      record.last_active = new Date(change.lastActive).toISOString();
      if ('agent_id' in record) record.status = change.online ? 'online' : 'offline';
    }
  });

  const app: App = {
    config, logger, store, bus, committer, participants, presence, driver, rooms, messages, turns,
    registry: undefined as unknown as ToolRegistry,
    links: new LinkSigner(config.linkSecret, now),
    limits: RateLimits.fromConfig(config),
    metrics,
    now,
    async close() {
      driver.stop();
      presence.stop();
      await store.close();
    },
  };
  app.registry = buildRegistry(app);
  await Promise.all(driver.restoreAll());
  return app;
}
