// Per-agent turn statistics of a room, computed from its durable log (so they survive
// restarts): turns answered, skipped, timed out, passed, offline, and the median answer time.
//
// Answer time is measured from the message that handed the agent its turn to the agent's
// answer: the previous entry of the log (a person's message, another agent's answer or a
// skip/timeout record) — the log has no separate "turn issued" entry.
import type { Message, RoomRecord } from '../types.js';

export interface AgentStats {
  name: string;
  turns_answered: number;
  turns_skipped: number;
  turns_timed_out: number;
  turns_passed: number;
  turns_offline: number;
  median_answer_ms: number | null;
}

export interface RoomStats {
  room_id: string;
  rounds: number;
  messages: number;
  agents: AgentStats[];
}

function median(values: number[]): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : Math.round((sorted[mid - 1]! + sorted[mid]!) / 2);
}

/** One pass over the room's messages in seq order; only the per-agent answer times are kept. */
export async function roomStats(room: RoomRecord, messages: Iterable<Message> | AsyncIterable<Message>): Promise<RoomStats> {
  const byName = new Map<string, AgentStats & { times: number[] }>();
  const entry = (name: string) => {
    let stats = byName.get(name);
    if (!stats) {
      stats = {
        name,
        turns_answered: 0,
        turns_skipped: 0,
        turns_timed_out: 0,
        turns_passed: 0,
        turns_offline: 0,
        median_answer_ms: null,
        times: [],
      };
      byName.set(name, stats);
    }
    return stats;
  };
  for (const member of room.members) if (member.role === 'ai_agent') entry(member.name);

  let previous: Message | undefined;
  let visible = 0;
  for await (const m of messages) {
    if (m.visible) visible++;
    // Imported history names its authors as text only (SPEC §10): a name in a file says nothing
    // about who is an agent here, so it counts for no one.
    if (m.role === 'ai_agent' && !m.imported) {
      const stats = entry(m.sender);
      switch (m.skip_reason) {
        case 'skip':
          stats.turns_skipped++;
          break;
        case 'timeout':
          stats.turns_timed_out++;
          break;
        case 'passed':
          stats.turns_passed++;
          break;
        case 'offline':
          stats.turns_offline++;
          break;
        case null:
          if (m.visible && m.round_id !== null) {
            // Several posts in one turn (end_turn: false) count as one answer: a post right
            // after the same agent's visible post in the same round continues that turn; after
            // its skip, timeout, pass or offline record it is a new turn.
            const continues = previous?.sender === m.sender && previous.round_id === m.round_id && previous.visible && previous.skip_reason === null;
            if (!continues) {
              stats.turns_answered++;
              if (previous) stats.times.push(Date.parse(m.timestamp) - Date.parse(previous.timestamp));
            }
          }
          break;
      }
    }
    previous = m;
  }
  return {
    room_id: room.room_id,
    rounds: room.history_rounds.length + (room.current_round && !room.current_round.completed ? 1 : 0),
    messages: visible,
    agents: [...byName.values()].map(({ times, ...stats }) => ({ ...stats, median_answer_ms: median(times) })),
  };
}
