// Composition of the services (no transports): storage → identity → room runtimes → reads and
// waits → tools. The server mounts transports on top; tests may use it directly. Time (clock
// and timers) is injected here and passed to every service that waits or times out.
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import type { Config } from './config.js';
import { InProcessBus, type EventBus } from './events/bus.js';
import { RateLimits } from './limits/rate-limits.js';
import { LastActiveRecorder } from './identity/last-active.js';
import { LinkSigner } from './identity/links.js';
import { confusableKeys, nameKey } from './identity/names.js';
import { Participants } from './identity/participants.js';
import { seedParticipants } from './identity/seed.js';
import { Presence, PRESENCE_WINDOW_MS, realTimers, SOCKET_GRACE_MS, type Timers } from './identity/presence.js';
import type { Logger } from './logger.js';
import { instrumentBus, instrumentStore, Metrics } from './observability/metrics.js';
import { RoomReads } from './runtime/reads.js';
import { Rooms } from './runtime/rooms.js';
import { TurnWaits } from './runtime/waits.js';
import { makeDirectory } from './storage/fs-ops.js';
import { createStore } from './storage/index.js';
import type { SharedTaskTable } from './storage/a2a-tasks.js';
import { DeadlineWatcher, NodePresence, PgA2aTasks, PgStore, postgresLimiters, RoomFeed } from './storage/postgres/index.js';
import type { Store } from './storage/store.js';
import { buildRegistry, type ToolServices } from './tools/index.js';
import type { ToolRegistry } from './tools/registry.js';

export interface App extends ToolServices {
  bus: EventBus;
  registry: ToolRegistry;
  timers: Timers;
  /** The A2A tasks the nodes share (STORE=postgres); absent: the gateway keeps them in memory. */
  a2aTasks?: SharedTaskTable;
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
  const rawStore = options.store ?? openStore(config, logger);
  await rawStore.open();
  const metrics = new Metrics(rawStore, config.dataDir);
  const store = instrumentStore(rawStore, metrics);
  const bus = instrumentBus(new InProcessBus(), metrics);
  const shared = rawStore instanceof PgStore;
  // Uploads and exports stay files under DATA_DIR (shared by the nodes, docs/scale-out.md).
  if (shared) {
    for (const dir of ['uploads', 'exports']) {
      await makeDirectory(path.join(config.dataDir, dir)).catch((err: NodeJS.ErrnoException) => {
        throw new Error(`DATA_DIR ${config.dataDir} cannot hold uploads and exports (${err.code ?? err.message})`);
      });
    }
  }
  const participants = new Participants(
    store,
    { language: config.defaultLanguage, timezone: config.displayTimezone },
    undefined,
    shared,
    now,
  );
  const presence = new Presence(now, timers, options.presenceWindowMs ?? PRESENCE_WINDOW_MS, options.socketGraceMs ?? SOCKET_GRACE_MS);
  await seedParticipants(store, participants, presence);
  const lastActive = new LastActiveRecorder(participants, presence, now, timers, logger);
  lastActive.start();
  // This node among the nodes sharing the database (random per start): heartbeats, deadline claims.
  const nodeId = randomUUID();
  const nodePresence = rawStore instanceof PgStore ? nodePresenceOf(rawStore, nodeId, presence, options.socketGraceMs ?? SOCKET_GRACE_MS, logger) : undefined;
  const a2aTasks = rawStore instanceof PgStore ? new PgA2aTasks(rawStore.connectionPool, nodeId) : undefined;
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
    shared,
    ...(nodePresence ? { onlineElsewhere: (id: string) => nodePresence.onlineElsewhere(id) } : {}),
  });
  // A dead node's clients go offline (stored), unless they came back to this node.
  nodePresence?.onOrphaned((ids) => {
    for (const id of ids) if (!presence.isOnline(id)) rooms.storePresence({ participantId: id, online: false, lastActive: now() });
  });
  await nodePresence?.start();
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
    lastActive,
    rooms,
    reads,
    waits,
    links: new LinkSigner(config.linkSecret, now),
    // One budget per client across the nodes (SPEC §11): the counters live in the database.
    limits: RateLimits.fromConfig(config, rawStore instanceof PgStore ? postgresLimiters(rawStore.counterPool) : undefined),
    metrics,
  };
  // One object: the server sets config.port once it listens, and the tools must see it.
  const app: App = Object.assign(services, {
    bus,
    timers,
    registry: buildRegistry(services),
    ...(a2aTasks ? { a2aTasks } : {}),
    async close() {
      // Before the rooms stop: sockets closed a moment ago count as activity until now (SPEC §6,
      // presence after a restart starts from the stored last_active).
      await lastActive.flush();
      await nodePresence?.stop();
      rooms.stop();
      presence.stop();
      participants.stop();
      await store.close();
    },
  });
  if (rawStore instanceof PgStore) {
    // Other nodes commit to the same rooms: their changes reach this node's subscribers.
    const feed = new RoomFeed({
      connectionString: rawStore.connectionString,
      onChange: (change) =>
        rooms.remoteChange(change.roomId, change.version, change.carried && { version: change.version, lastSeq: change.lastSeq, ...change.carried }, change.events),
      onResync: () => {
        rooms.refreshAll();
        participants.recheckAll(); // token revocations may have been missed too
      },
      onTokensRevoked: (hashes) => participants.revokedElsewhere(hashes),
      onSocketsClosed: (participantId, at) => presence.closedElsewhere(participantId, at),
      ...(a2aTasks ? { onA2aTaskCanceled: (taskId: string) => a2aTasks.heardCancel(taskId) } : {}),
      onError: (err) => logger.warn({ err }, 'room feed connection lost; reconnecting'),
      poll: { pool: rawStore.connectionPool, everyMs: 2000, rooms: () => rooms.loadedIds() },
    });
    await feed.start();
    // The 15 s rule after a participant's last WebSocket closes holds across nodes (SPEC §6).
    presence.onLastSocketClosed((participantId, at) => {
      rawStore.announceSocketsClosed(participantId, at).catch((err: unknown) => logger.warn({ err }, 'could not announce a closed socket'));
    });
    const close = app.close;
    app.close = async () => {
      await feed.stop();
      await close();
    };
  }
  await rooms.restoreAll({ shared });
  if (rawStore instanceof PgStore) {
    // After the restore (a deadline that passed while no node ran the room is renewed there, not
    // fired): from now on this node also fires the due deadlines of rooms no live node holds.
    const watcher = deadlineWatcherOf(rawStore, nodeId, rooms, logger);
    watcher.start();
    const close = app.close;
    app.close = async () => {
      await watcher.stop();
      await close();
    };
  }
  return app;
}

/** The file store's index warm-up starts this long after open (FileStoreOptions.warmUpDelayMs). */
const WARM_UP_DELAY_MS = 2000;

/** The store the configuration names: PostgreSQL (STORE=postgres) or the file store under DATA_DIR. */
function openStore(config: Config, logger: Logger): Store {
  if (config.store.kind === 'postgres') {
    return new PgStore({
      connectionString: config.store.databaseUrl,
      poolSize: config.store.poolSize,
      onPoolError: (err) => logger.warn({ err }, 'PostgreSQL connection error (the pool reconnects)'),
      lookAlikeKeysOf: confusableKeys,
    });
  }
  return createStore(config.dataDir, logger, { nameKeyOf: nameKey, cacheMessages: config.cacheMessages, indexCacheBytes: config.indexCacheBytes, warmUpDelayMs: WARM_UP_DELAY_MS });
}

/** This node's heartbeat and the presence it serves, stored for the other nodes (SPEC §11). */
function nodePresenceOf(store: PgStore, nodeId: string, presence: Presence, graceMs: number, logger: Logger): NodePresence {
  const node = new NodePresence({
    pool: store.connectionPool,
    nodeId,
    deadAfterMs: graceMs,
    heartbeatMs: Math.min(2_000, Math.max(100, Math.floor(graceMs / 4))),
    onError: (err) => logger.warn({ err }, 'could not store node presence'),
  });
  // Served, not merely online: a participant online here only from the start-up seed is not this node's client.
  presence.onServed((participantId, served) => node.setOnline(participantId, served));
  return node;
}

/**
 * Stored deadlines no live node fired (SPEC §11: each deadline fires once, on some live node).
 * A node fires the deadlines of the rooms it holds by their own timers; it loads a room it does
 * not hold when a notification announces a running turn. When that notification is lost (its
 * node died between COMMIT and NOTIFY, a LISTEN connection blipped) and the node holding the
 * room dies, no timer is left: every node polls the `deadlines` table (kept in step by each
 * commit) for rows passed by more than the grace, claims them with a lease (one node at a time,
 * another after the lease if it dies) and loads the room (`Rooms.fireDue`), which arms its
 * timer from the stored state: the ordinary timeout fires it. A deadline whose node is dead
 * fires within grace + poll ≈ 1.5 s of it; within another lease (2 s) if the claiming node dies
 * too. The firing commit replaces or deletes the row.
 */
function deadlineWatcherOf(store: PgStore, nodeId: string, rooms: Rooms, logger: Logger): DeadlineWatcher {
  return new DeadlineWatcher(
    store.connectionPool,
    nodeId,
    (due) => rooms.fireDue(due.roomId),
    {
      pollMs: DEADLINE_POLL_MS,
      graceMs: DEADLINE_GRACE_MS,
      leaseMs: DEADLINE_LEASE_MS,
      onError: (err) => logger.warn({ err }, 'could not fire a stored turn deadline'),
    },
  );
}

/** How often each node looks for stored deadlines no node fired. */
const DEADLINE_POLL_MS = 500;
/** The node holding a room fires its deadline by its own timer first; the others wait this long. */
const DEADLINE_GRACE_MS = 1000;
/** A claim keeps the other nodes away this long (then another node takes the deadline). */
const DEADLINE_LEASE_MS = 2000;

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
