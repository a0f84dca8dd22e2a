// get_context's message shape (reads.ts `contextMessage`, built in one pass): exactly what
// presentMessage gives plus the cut text and the display time, keys in the same order.
import { describe, expect, it } from 'vitest';
import { displayTime } from '../../src/messages/time.js';
import { presentMessage } from '../../src/rooms/present.js';
import { CONTEXT_TEXT_LIMIT, contextMessage } from '../../src/runtime/reads.js';
import type { Message } from '../../src/types.js';
import { makeMessage } from './storage-helpers.js';

const room = { processed_through_seq: 5, timezone: 'Asia/Shanghai' };

/** The definition it replaces: presentMessage, then the cut and the display time spread on. */
function reference(m: Message) {
  const presented = presentMessage(m, room);
  const display_time = displayTime(m.timestamp, room.timezone);
  const chars = [...m.text_content];
  if (chars.length <= CONTEXT_TEXT_LIMIT) return { ...presented, display_time };
  return { ...presented, text_content: chars.slice(0, CONTEXT_TEXT_LIMIT).join(''), truncated: true, display_time };
}

describe('contextMessage', () => {
  const long = '架'.repeat(CONTEXT_TEXT_LIMIT - 1) + '🎉🎉 tail';
  const cases: Message[] = [
    makeMessage('r', 3),
    makeMessage('r', 9, { client_msg_id: 'c-9', text_content: 'with a client id' }),
    makeMessage('r', 5, { text_content: long }),
    makeMessage('r', 6, { text_content: '🎉'.repeat(CONTEXT_TEXT_LIMIT) }),
    makeMessage('r', 7, { text_content: 'x'.repeat(CONTEXT_TEXT_LIMIT + 1), client_msg_id: 'c-7', deleted: true }),
  ];
  it.each(cases.map((m) => [m.seq, m] as const))('seq %i: same keys, order and values as presentMessage + display time', (_seq, m) => {
    const got = contextMessage(m, room);
    const want = reference(m);
    expect(got).toStrictEqual(want);
    expect(Object.keys(got)).toEqual(Object.keys(want));
    expect(JSON.stringify(got)).toBe(JSON.stringify(want));
    expect('client_msg_id' in got).toBe(false);
  });

  it('does not change the message it is given', () => {
    const m = makeMessage('r', 2, { client_msg_id: 'keep', text_content: long });
    const before = structuredClone(m);
    contextMessage(m, room);
    expect(m).toStrictEqual(before);
  });
});
