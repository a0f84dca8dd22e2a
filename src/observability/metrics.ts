// Prometheus metrics (GET /api/v1/metrics). One registry per app, so several servers in one
// process (tests) do not share counters.
import { statfs } from 'node:fs/promises';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { EventBus } from '../events/bus.js';
import type { Store } from '../storage/store.js';

/**
 * How often the event-loop delay is sampled (prom-client's default is 10 ms). Each sample is a
 * timer that wakes the loop: at 10 ms an idle server woke 100 times a second and spent about
 * 4 ms of CPU a second on it, 400 µs for each message of a room that gets 10 a second (issue 40).
 * At 100 ms a stall of 100 ms or more always shows, a shorter one only when a sample falls in it.
 */
export const EVENT_LOOP_SAMPLE_MS = 100;

const LATENCY_BUCKETS = [0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

export type TurnOutcome = 'issued' | 'answered' | 'skipped' | 'timed_out' | 'offline' | 'passed';

export class Metrics {
  readonly registry = new Registry();
  readonly turns: Counter<'outcome'>;
  readonly rounds: Counter<'event'>;
  readonly toolCalls: Counter<'tool' | 'transport' | 'outcome'>;
  readonly appendSeconds: Histogram;
  readonly snapshotSeconds: Histogram;
  readonly broadcastSeconds: Histogram;
  private socketCount: () => number = () => 0;

  /** `dataDir`: DATA_DIR, whose disk's free space is reported (null: a store with no data directory). */
  constructor(store: Store, dataDir: string | null = null) {
    const registers = [this.registry];
    // prom-client's process and Node.js metrics (SPEC §2): process_cpu_seconds_total (user and
    // system), nodejs_eventloop_lag_* (event-loop delay percentiles), heap, handles, GC.
    collectDefaultMetrics({ register: this.registry, eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS });
    if (dataDir !== null) {
      new Gauge({
        name: 'chatroom_data_dir_free_bytes',
        help: 'Free bytes (available to this process) on the disk that holds DATA_DIR',
        registers,
        async collect() {
          try {
            const fs = await statfs(dataDir);
            this.set(fs.bavail * fs.bsize);
          } catch {
            // The directory is gone or unreadable: no value rather than a failed scrape.
            this.reset();
          }
        },
      });
    }
    this.turns = new Counter({ name: 'chatroom_turns_total', help: 'Turns by outcome', labelNames: ['outcome'], registers });
    this.rounds = new Counter({ name: 'chatroom_rounds_total', help: 'Rounds started and ended', labelNames: ['event'], registers });
    this.toolCalls = new Counter({
      name: 'chatroom_tool_calls_total',
      help: 'Tool calls by tool, transport and outcome (ok or error code)',
      labelNames: ['tool', 'transport', 'outcome'],
      registers,
    });
    this.appendSeconds = new Histogram({
      name: 'chatroom_storage_append_seconds',
      help: 'Time from a log append to its fsync (the acknowledgement wait)',
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.snapshotSeconds = new Histogram({
      name: 'chatroom_storage_snapshot_seconds',
      help: 'Time from a snapshot change to its durable write',
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.broadcastSeconds = new Histogram({
      name: 'chatroom_broadcast_seconds',
      help: 'Time to hand one event to every subscriber',
      buckets: LATENCY_BUCKETS,
      registers,
    });
    const self = this;
    new Gauge({
      name: 'chatroom_sockets',
      help: 'Open WebSocket connections',
      registers,
      collect() {
        this.set(self.socketCount());
      },
    });
    new Gauge({
      name: 'chatroom_rooms',
      help: 'Rooms stored',
      registers,
      collect() {
        return store.listRoomIds().then((ids) => this.set(ids.length));
      },
    });
    new Gauge({
      name: 'chatroom_memory_bytes',
      help: 'Process memory by kind (process.memoryUsage): rss, heap_used, heap_total, external, array_buffers',
      labelNames: ['kind'],
      registers,
      collect() {
        const m = process.memoryUsage();
        this.set({ kind: 'rss' }, m.rss);
        this.set({ kind: 'heap_used' }, m.heapUsed);
        this.set({ kind: 'heap_total' }, m.heapTotal);
        this.set({ kind: 'external' }, m.external);
        this.set({ kind: 'array_buffers' }, m.arrayBuffers);
      },
    });
    new Gauge({
      name: 'chatroom_messages',
      help: 'Messages stored (all rooms)',
      registers,
      collect() {
        return store.messageCount().then((n) => this.set(n));
      },
    });
  }

  private readonly callCounters = new Map<string, { inc(): void }>();

  /** Counts a tool call; label children are kept, as prom-client hashes labels on every inc. */
  countCall(tool: string, transport: string, outcome: string): void {
    const key = `${tool}\u0000${transport}\u0000${outcome}`;
    let child = this.callCounters.get(key);
    if (!child) {
      child = this.toolCalls.labels(tool, transport, outcome);
      this.callCounters.set(key, child);
    }
    child.inc();
  }

  /** The WebSocket hub tells how many sockets are open. */
  countSocketsWith(counter: () => number): void {
    this.socketCount = counter;
  }

  text(): Promise<string> {
    return this.registry.metrics();
  }
}

/** A view of `target` with some methods replaced; every other method runs on the target itself. */
function withOverrides<T extends object>(target: T, overrides: Partial<T>): T {
  // Methods are bound once, not on every access: the store is called several times per command.
  const bound = new Map<PropertyKey, { from: unknown; to: unknown }>();
  return new Proxy(target, {
    get(obj, prop) {
      if (Object.prototype.hasOwnProperty.call(overrides, prop)) return overrides[prop as keyof T];
      const value = Reflect.get(obj, prop, obj) as unknown;
      if (typeof value !== 'function') return value;
      let entry = bound.get(prop);
      if (entry?.from !== value) bound.set(prop, (entry = { from: value, to: value.bind(obj) }));
      return entry.to;
    },
  });
}

/** Wraps a store so every durable write is timed; reads pass straight through. */
export function instrumentStore(store: Store, metrics: Metrics): Store {
  const timed = <A extends unknown[], R>(histogram: Histogram, write: (...args: A) => Promise<R>) =>
    (...args: A) => {
      const stop = histogram.startTimer();
      const done = write(...args);
      done.then(() => void stop(), () => undefined);
      return done;
    };
  return withOverrides(store, {
    commitRoom: timed(metrics.appendSeconds, store.commitRoom.bind(store)),
    createRoom: timed(metrics.snapshotSeconds, store.createRoom.bind(store)),
    putParticipant: timed(metrics.snapshotSeconds, store.putParticipant.bind(store)),
  });
}

/** Wraps a bus so the time to hand each event to all listeners is measured. */
export function instrumentBus(bus: EventBus, metrics: Metrics): EventBus {
  return withOverrides(bus, {
    publish: (event) => {
      const stop = metrics.broadcastSeconds.startTimer();
      bus.publish(event);
      stop();
    },
  });
}
