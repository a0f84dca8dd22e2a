// `hook codex-notify`: Codex CLI's `notify` program. Codex runs it after each agent turn with one
// JSON argument: {"type": "agent-turn-complete", "thread-id", "turn-id", "cwd",
// "input-messages": [...], "last-assistant-message": "..."}. Codex does not read anything back, so a
// notify program cannot continue or wake a session (unlike Claude Code's Stop hook). What it can
// do: when this project's agent holds a turn in its room, post Codex's final message of the turn
// as the answer. Otherwise it does nothing. For an agent that answers every turn by itself, run
// `agent-chatroom cli-agent --preset codex` instead.
import { ChatroomError, restCall } from '../client/rest.js';
import { configuredBinding } from './config.js';
import type { HookIo } from './claude.js';

export async function codexNotify(io: HookIo, argv: string[]): Promise<number> {
  const raw = argv.at(-1) ?? io.stdin;
  let payload: Record<string, unknown>;
  try {
    payload = JSON.parse(raw) as Record<string, unknown>;
  } catch {
    io.err('agent-chatroom: codex-notify expects the JSON argument Codex passes to its notify program');
    return 0;
  }
  if (payload.type !== 'agent-turn-complete') return 0;
  const text = typeof payload['last-assistant-message'] === 'string' ? payload['last-assistant-message'].trim() : '';
  const binding = await configuredBinding({ ...(typeof payload.cwd === 'string' ? { cwd: payload.cwd } : {}) }, io.env);
  if (!binding || !text) return 0;
  try {
    const context = await restCall<{ your_turn: unknown }>(binding.url, 'get_context', { room_id: binding.room_id, limit: 1 }, binding.token);
    if (!context.your_turn) return 0; // not our turn: the room hears nothing
    const turnId = typeof payload['turn-id'] === 'string' ? payload['turn-id'] : undefined;
    await restCall(
      binding.url,
      'send_message',
      { room_id: binding.room_id, text_content: text, ...(turnId ? { client_msg_id: `codex-${turnId}`.slice(0, 128) } : {}) },
      binding.token,
    );
  } catch (err) {
    io.err(`agent-chatroom: codex-notify could not post: ${err instanceof ChatroomError ? `${err.code}: ${err.message}` : (err as Error).message}`);
  }
  return 0;
}
