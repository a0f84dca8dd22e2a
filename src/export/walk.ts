// One pass over a room's messages for the Markdown, HTML and PDF exports: drops skip records
// (visible:false), marks where each round starts and resolves what a reply answers. Its memory
// is bounded whatever the room's size: it remembers the last `RECENT` to 2 × `RECENT` messages
// (id → seq and sender) and rounds, and asks `findEarlier` for a reply to anything older (a
// store lookup by id); a room of 3,000,000 messages held 3,000,000 ids here before.
import type { Message } from '../types.js';

export interface ReplyRef {
  seq: number;
  sender: string;
}

export type ExportItem =
  /** Before the first visible message of a round; each round is announced once. */
  | { kind: 'round'; roundId: string; number: number; timestamp: string }
  | {
      kind: 'message';
      message: Message;
      /** null: not a reply; 'unknown': answers a message not (yet) in the export. */
      reply: ReplyRef | 'unknown' | null;
    };

/**
 * How long an export may run before it lets other work (requests, timers, sockets) in. The
 * writers render synchronously between writes, and a PDF's writes rarely have to wait, so
 * without this a 10,000-message export would hold the event loop for seconds. Two exports may
 * run at once (slots.ts), so a turn of the loop waits at most about twice this.
 */
export const EXPORT_SLICE_MS = 10;

/** How many recent messages and rounds the walk remembers at least (at most twice as many: a few MB). */
export const RECENT = 20_000;

/** An earlier message of the exported room, found by id (null or undefined when there is none). */
export type FindEarlier = (messageId: string) => Promise<Pick<Message, 'room_id' | 'seq' | 'sender' | 'visible'> | null | undefined>;

export interface WalkOptions {
  /** Finds a replied-to message older than the walk remembers (ExportInput.findEarlier). */
  findEarlier?: FindEarlier | undefined;
  sliceMs?: number;
  recent?: number;
}

export async function* exportItems(
  messages: Iterable<Message> | AsyncIterable<Message>,
  { findEarlier, sliceMs = EXPORT_SLICE_MS, recent = RECENT }: WalkOptions = {},
): AsyncGenerator<ExportItem> {
  const roundNumbers = new RecentMap<number>(recent);
  let rounds = 0;
  const seen = new RecentMap<ReplyRef>(recent);
  const announced = new RecentMap<true>(recent);
  let sliceStart = performance.now();
  for await (const message of messages) {
    const roundId = message.round_id ?? null;
    if (roundId !== null && roundNumbers.get(roundId) === undefined) roundNumbers.set(roundId, ++rounds);
    if (!message.visible) continue;
    // A person's message during a round carries the round's id (it was posted in it) but does
    // not open the round: the divider stands before the round's first visible agent or system
    // message, once.
    if (roundId !== null && message.role !== 'user' && announced.get(roundId) === undefined) {
      announced.set(roundId, true);
      yield { kind: 'round', roundId, number: roundNumbers.get(roundId) ?? 0, timestamp: message.timestamp };
    }
    let reply: ReplyRef | 'unknown' | null = null;
    if (message.response_to) reply = seen.get(message.response_to) ?? (await earlier(message, findEarlier));
    seen.set(message.message_id, { seq: message.seq, sender: message.sender });
    yield { kind: 'message', message, reply };
    // Measured once the consumer has rendered the message (it runs inside the yield).
    if (performance.now() - sliceStart >= sliceMs) {
      await new Promise<void>((resolve) => setImmediate(resolve));
      sliceStart = performance.now();
    }
  }
}

/**
 * The last `limit` to `2 × limit` keys set: two generations of maps, the older dropped whole
 * when the newer is full (deleting a Map's oldest key one at a time leaves holes that its
 * iterator walks over again and again).
 */
class RecentMap<V> {
  private newer = new Map<string, V>();
  private older = new Map<string, V>();

  constructor(private readonly limit: number) {}

  get(key: string): V | undefined {
    return this.newer.get(key) ?? this.older.get(key);
  }

  set(key: string, value: V): void {
    if (this.newer.size >= this.limit) {
      this.older = this.newer;
      this.newer = new Map();
    }
    this.newer.set(key, value);
  }
}

/** What a reply to a message the walk no longer remembers answers: a visible earlier message of the same room. */
async function earlier(reply: Message, findEarlier: FindEarlier | undefined): Promise<ReplyRef | 'unknown'> {
  const answered = findEarlier ? await findEarlier(reply.response_to!) : null;
  if (!answered || answered.room_id !== reply.room_id || answered.seq >= reply.seq || !answered.visible) return 'unknown';
  return { seq: answered.seq, sender: answered.sender };
}
