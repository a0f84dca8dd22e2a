// The runners' prompt says how many unread messages its transcript does not quote (SPEC §7
// `omitted`), in the room's language, so the model knows it has not seen everything.
import { describe, expect, it } from 'vitest';
import { buildPrompt, unreadNotQuoted } from '../../src/agent/prompt.js';
import { buildCliPrompt } from '../../src/cli-agent/prompt.js';
import type { TurnInfo } from '../../src/client/turns.js';
import type { Message } from '../../src/types.js';

function message(seq: number): Message & { display_time: string } {
  return {
    message_id: `00000000-0000-4000-8000-${String(seq).padStart(12, '0')}`, room_id: 'r', seq, timestamp: '2026-01-01T00:00:00.000Z',
    sender: 'Ann', sender_id: 'u1', role: 'user', text_content: `m${seq}`, text_content_i18n: null, source_language: 'en', file_url: '',
    file_type: '', mentions: [], visible: true, processed: false, response_to: null, display_timezone: 'UTC', round_id: null,
    skip_reason: null, deleted: false, display_time: '2026-01-01 00:00:00',
  };
}

function turn(language: string, unread: number[], omitted: number): TurnInfo {
  return {
    room_id: 'r', round_id: 'x', can_skip: true, deadline: '2026-01-01T00:03:00.000Z', reason: 'rotation', timeout_ms: 180_000,
    signal: new AbortController().signal,
    context: {
      messages: unread.map(message), omitted, members: [],
      room: {
        room_id: 'r', room_name: 'Room', room_description: '', interaction_mode: 'default', system_status: 'active', user_participation: true,
        announcement: { user_announcement: '', announcement_publisher: '', timestamp: null, system_announcement: '' }, language, timezone: 'UTC',
        current_round: null, current_agent: null,
      },
      your_turn: null,
    },
  };
}

describe('unread messages not quoted', () => {
  it('counts omitted ones and unread ones older than the transcript', () => {
    // Unread 21..70 in the context, 20 older omitted; the transcript quotes the last 30 (41..70).
    const t = turn('en', Array.from({ length: 50 }, (_, i) => 21 + i), 20);
    const history = Array.from({ length: 30 }, (_, i) => message(41 + i));
    expect(unreadNotQuoted(t, history)).toBe(40);
    expect(unreadNotQuoted(turn('en', [5, 6], 0), [message(4), message(5), message(6)])).toBe(0);
  });

  it('says so under the transcript in the room language, and says nothing when all is quoted', () => {
    const history = [message(69), message(70)];
    const en = buildPrompt({ name: 'Bot' }, turn('en', [68, 69, 70], 20), history)[1]!.content;
    expect(en).toContain('21 earlier messages not shown; call get_messages');
    const zh = buildCliPrompt({ name: 'Bot' }, turn('zh-CN', [68, 69, 70], 20), history, { mcp: true });
    expect(zh).toContain('还有 21 条更早的消息未显示；调用 get_messages');
    const none = buildPrompt({ name: 'Bot' }, turn('en', [69, 70], 0), history)[1]!.content;
    expect(none).not.toMatch(/not shown/);
  });
});
