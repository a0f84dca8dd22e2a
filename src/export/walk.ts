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

export async function* exportItems(messages: Iterable<Message> | AsyncIterable<Message>): AsyncGenerator<ExportItem> {
  const roundNumbers = new Map<string, number>();
  const seen = new Map<string, ReplyRef>();
  let shownRound: string | null | undefined;
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
  }
}
