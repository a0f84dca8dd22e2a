// get_room_stats' numbers (src/rounds/stats.ts), from a log whose turns are known; the messages
// come as an async stream, as the store pages them.
import { describe, expect, it } from 'vitest';
import { roomStats } from '../../src/rounds/stats.js';
import type { Message } from '../../src/types.js';
import { makeMessage, makeRoom } from './storage-helpers.js';

const at = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s)).toISOString();
const agent = (name: string) => ({ sender: name, sender_id: `id-${name}`, role: 'ai_agent' as const });

async function* streamed(messages: Message[]): AsyncGenerator<Message> {
  for (const m of messages) yield m;
}

describe('roomStats', () => {
  it('counts turns by outcome, one answer per turn however many posts, and the median answer time', async () => {
    const room = makeRoom('r', {
      members: ['Ann', 'Bot', 'Cat'].map((name, i) => ({
        name, role: i === 0 ? 'user' : 'ai_agent', introduce: '', status: 'online', last_active: at(0), is_host: false, skip_list: [],
        language_preference: 'en', timezone_preference: 'UTC', participant_id: `id-${name}`, joined_at: at(0),
      })),
      history_rounds: ['r1'],
      current_round: { round_id: 'r2', start_time: at(30), current_agent_index: 0, agent_queue: ['Bot', 'Cat'], completed: false } as never,
    });
    const log = [
      makeMessage('r', 1, { sender: 'Ann', sender_id: 'id-Ann', timestamp: at(0) }),
      // Round 1: Bot answers in two posts (one turn) after 4 s, Cat skips.
      makeMessage('r', 2, { ...agent('Bot'), round_id: 'r1', timestamp: at(4) }),
      makeMessage('r', 3, { ...agent('Bot'), round_id: 'r1', timestamp: at(5) }),
      makeMessage('r', 4, { ...agent('Cat'), round_id: 'r1', timestamp: at(6), visible: false, skip_reason: 'skip' }),
      // Round 2: Bot answers after 10 s, Cat times out, then is passed, then offline.
      makeMessage('r', 5, { ...agent('Bot'), round_id: 'r2', timestamp: at(16) }),
      makeMessage('r', 6, { ...agent('Cat'), round_id: 'r2', timestamp: at(20), visible: false, skip_reason: 'timeout' }),
      makeMessage('r', 7, { ...agent('Cat'), round_id: 'r2', timestamp: at(21), visible: false, skip_reason: 'passed' }),
      makeMessage('r', 8, { ...agent('Cat'), round_id: 'r2', timestamp: at(22), visible: false, skip_reason: 'offline' }),
      // Cat answers after 8 s.
      makeMessage('r', 9, { ...agent('Cat'), round_id: 'r2', timestamp: at(30) }),
    ];
    const stats = await roomStats(room, streamed(log));
    expect(stats).toEqual({
      room_id: 'r',
      rounds: 2,
      messages: 5,
      agents: [
        { name: 'Bot', turns_answered: 2, turns_skipped: 0, turns_timed_out: 0, turns_passed: 0, turns_offline: 0, median_answer_ms: 7000 },
        { name: 'Cat', turns_answered: 1, turns_skipped: 1, turns_timed_out: 1, turns_passed: 1, turns_offline: 1, median_answer_ms: 8000 },
      ],
    });
    // The same from an array.
    expect(await roomStats(room, log)).toEqual(stats);
  });
});
