// One pass over a room's messages for both exports: drops skip records (visible:false), marks
// round boundaries and resolves what a reply answers. It keeps only small maps (round id →
// number, message id → seq and sender), never the messages themselves.
import type { Message } from '../types.js';

export interface ReplyRef {
  seq: number;
  sender: string;
}

export type ExportItem =
  | { kind: 'round'; roundId: string; number: number }
  /** Visible messages without a round follow messages of a round. */
  | { kind: 'outside' }
  | {
      kind: 'message';
      message: Message;
      /** null: not a reply; 'unknown': answers a message not (yet) in the export. */
      reply: ReplyRef | 'unknown' | null;
    };

/**
 * How long an export may run before it lets other work (requests, timers, sockets) in. Both
 * writers render synchronously between writes, and a PDF's writes rarely have to wait, so
 * without this a 10,000-message export would hold the event loop for seconds.
 */
export const EXPORT_SLICE_MS = 20;

export async function* exportItems(
  messages: Iterable<Message> | AsyncIterable<Message>,
  sliceMs = EXPORT_SLICE_MS,
): AsyncGenerator<ExportItem> {
  const roundNumbers = new Map<string, number>();
  const seen = new Map<string, ReplyRef>();
  let shownRound: string | null | undefined;
  let sliceStart = performance.now();
  for await (const message of messages) {
    const roundId = message.round_id ?? null;
    if (roundId !== null && !roundNumbers.has(roundId)) roundNumbers.set(roundId, roundNumbers.size + 1);
    if (!message.visible) continue;
    if (roundId !== shownRound) {
      if (roundId !== null) yield { kind: 'round', roundId, number: roundNumbers.get(roundId) ?? 0 };
      else if (shownRound !== undefined) yield { kind: 'outside' };
      shownRound = roundId;
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
