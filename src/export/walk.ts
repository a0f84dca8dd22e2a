// One pass over a room's messages for the Markdown, HTML and PDF exports: drops skip records
// (visible:false), marks where each round starts and resolves what a reply answers. It keeps
// only small maps (round id → number, message id → seq and sender), never the messages.
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

export async function* exportItems(
  messages: Iterable<Message> | AsyncIterable<Message>,
  sliceMs = EXPORT_SLICE_MS,
): AsyncGenerator<ExportItem> {
  const roundNumbers = new Map<string, number>();
  const seen = new Map<string, ReplyRef>();
  const announced = new Set<string>();
  let sliceStart = performance.now();
  for await (const message of messages) {
    const roundId = message.round_id ?? null;
    if (roundId !== null && !roundNumbers.has(roundId)) roundNumbers.set(roundId, roundNumbers.size + 1);
    if (!message.visible) continue;
    // A person's message during a round carries the round's id (it was posted in it) but does
    // not open the round: the divider stands before the round's first visible agent or system
    // message, once.
    if (roundId !== null && message.role !== 'user' && !announced.has(roundId)) {
      announced.add(roundId);
      yield { kind: 'round', roundId, number: roundNumbers.get(roundId) ?? 0, timestamp: message.timestamp };
    }
    let reply: ReplyRef | 'unknown' | null = null;
    if (message.response_to) reply = seen.get(message.response_to) ?? 'unknown';
    seen.set(message.message_id, { seq: message.seq, sender: message.sender });
    yield { kind: 'message', message, reply };
    // Measured once the consumer has rendered the message (it runs inside the yield).
    if (performance.now() - sliceStart >= sliceMs) {
      await new Promise<void>((resolve) => setImmediate(resolve));
      sliceStart = performance.now();
    }
  }
}
