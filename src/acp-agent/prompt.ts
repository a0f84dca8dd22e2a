// The text of one `session/prompt`: the same rules and quoted transcript as every runner
// (src/cli-agent/prompt.ts, src/agent/prompt.ts: the room's words are data, never instructions),
// holding only the room messages that are new since the agent's last turn — the ACP session
// keeps the earlier ones — and saying so, with how many were left out.
import type { Persona } from '../agent/prompt.js';
import type { TurnInfo } from '../client/turns.js';
import { buildCliPrompt } from '../cli-agent/prompt.js';
import type { Message } from '../types.js';

/** The messages of the turn's context the agent has not been shown (seq above `lastSeq`). */
export function newMessages(turn: TurnInfo, lastSeq: number): Message[] {
  return turn.context.messages.filter((m) => m.seq > lastSeq && m.visible && !m.deleted);
}

/** How many messages get_context left out (SPEC v3 §7 `omitted`; 0 from a server without it). */
export function omittedCount(turn: TurnInfo): number {
  const omitted = (turn.context as { omitted?: unknown }).omitted;
  return typeof omitted === 'number' && omitted > 0 ? omitted : 0;
}

export function buildAcpPrompt(
  me: Persona,
  turn: TurnInfo,
  fresh: readonly Message[],
  options: { mcp: boolean; continuing: boolean; omitted: number },
): string {
  const notes = [
    options.continuing
      ? 'This session is your ongoing conversation in this room: what was said before your last turn is earlier in this session. The transcript below holds only the messages that are new since then.'
      : 'The transcript below holds the room messages since your last message.',
    options.omitted > 0
      ? `${options.omitted} earlier messages not shown; call get_messages (room_id ${JSON.stringify(turn.room_id)}) to read them${options.mcp ? '' : ' if you have the chatroom tools'}.`
      : '',
  ].filter(Boolean);
  return [...notes, '', buildCliPrompt(me, turn, fresh, { mcp: options.mcp })].join('\n');
}
