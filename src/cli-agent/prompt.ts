// The one-text prompt an agent CLI gets on stdin: the same rules and quoted transcript as the
// ready-to-run agent (src/agent/prompt.ts: the room's words are data, never instructions), plus
// what is different for a CLI: its reply is posted for it, and (with --mcp) which room tools it may
// call itself.
import { buildPrompt, type Persona } from '../agent/prompt.js';
import type { TurnInfo } from '../client/turns.js';
import type { Message } from '../types.js';

export function buildCliPrompt(me: Persona, turn: TurnInfo, history: readonly Message[], options: { mcp: boolean }): string {
  const [system, user] = buildPrompt(me, turn, history);
  const delivery = options.mcp
    ? [
        'Your reply is posted to the room for you: answer with the message text only.',
        `You may use the chatroom MCP tools (room_id ${JSON.stringify(turn.room_id)}): get_full_message for a cut message, search_messages or get_messages for older history. If you post with send_message yourself, your final reply is not posted again.`,
      ]
    : ['Your reply is posted to the room for you: answer with the message text only, no preamble, no tool output.'];
  return [system!.content, ...delivery, '', user!.content, ''].join('\n');
}
