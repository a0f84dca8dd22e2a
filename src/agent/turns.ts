// What both runners (`agent`, `cli-agent`) do around a turn: read the room's recent history and
// give up on a turn with a reason people can see.
import type { ChatroomClient, TurnAnswer, TurnInfo } from '../client/index.js';
import type { Message } from '../types.js';

/** The last `count` visible, undeleted messages of the turn's room (1 to 200 read). */
export async function turnHistory(client: ChatroomClient, turn: TurnInfo, count: number): Promise<Message[]> {
  const page = await client.call<{ messages: Message[] }>(
    'get_messages',
    { room_id: turn.room_id, limit: Math.min(200, Math.max(1, count)) },
    { signal: turn.signal },
  );
  return page.messages.filter((m) => m.visible && !m.deleted);
}

/**
 * No answer for this turn: a skip with the reason when the turn may be skipped; a turn that
 * must be answered cannot be skipped, so the reason shows as the agent's activity note.
 */
export function giveUp(client: ChatroomClient, turn: TurnInfo, reason: string): TurnAnswer {
  if (turn.can_skip) return { skip: true, reason };
  void client.setActivity(turn.room_id, 'idle', reason);
  return undefined;
}
