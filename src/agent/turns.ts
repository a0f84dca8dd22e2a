// What both runners (`agent`, `cli-agent`) do around a turn: read the room's recent history and
// give up on a turn with a reason people can see.
import { type ChatroomClient, type ChatroomError, skipReason, type TurnAnswer, type TurnInfo } from '../client/index.js';
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

/**
 * A runner stops: the turns it held are passed with the reason (those that may be skipped),
 * its activity cleared in every room, and the connection closed.
 */
export async function passHeldTurnsAndClose(client: ChatroomClient, held: Iterable<[roomId: string, canSkip: boolean]>, reason: string): Promise<void> {
  for (const [roomId, canSkip] of held) {
    if (!canSkip) continue;
    // A server without skip reasons (before SPEC v2) refuses the argument: skip without it.
    await client
      .call('skip_response', { room_id: roomId, reason: skipReason(reason) }, { timeoutMs: 3000 })
      .catch((err: ChatroomError) => (err.code === 'validation_error' ? client.call('skip_response', { room_id: roomId }, { timeoutMs: 3000 }) : undefined))
      .catch(() => undefined);
  }
  await Promise.all(client.rooms().map((roomId) => client.setActivity(roomId, 'idle')));
  await client.close();
}
