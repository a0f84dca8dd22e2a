// What the runners (`agent`, `cli-agent`, `acp-agent`, `a2a-agent`) do around a turn: read the room's recent history,
// give up on a turn with a reason people can see, take turns one at a time, and pass held turns when stopping.
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

/** Work run one piece at a time, in order: a runner's one child (or one prompt) at a time, whatever the rooms. */
export class OneAtATime {
  private tail: Promise<unknown> = Promise.resolve();

  run<T>(work: () => Promise<T>): Promise<T> {
    const next = this.tail.then(work, work);
    this.tail = next.catch(() => undefined);
    return next;
  }

  /** Settles when the work queued so far has. */
  idle(): Promise<unknown> {
    return this.tail;
  }
}

/**
 * What a stopping runner does last in its rooms: passes the turns it held (those that may be
 * skipped) with the reason, and sets its activity `idle` everywhere.
 */
export async function passHeldTurns(client: ChatroomClient, held: Iterable<[roomId: string, canSkip: boolean]>, reason: string): Promise<void> {
  for (const [roomId, canSkip] of held) {
    if (!canSkip) continue;
    // A server without skip reasons (before SPEC v2) refuses the argument: skip without it.
    await client
      .call('skip_response', { room_id: roomId, reason: skipReason(reason) }, { timeoutMs: 3000 })
      .catch((err: ChatroomError) => (err.code === 'validation_error' ? client.call('skip_response', { room_id: roomId }, { timeoutMs: 3000 }) : undefined))
      .catch(() => undefined);
  }
  await Promise.all(client.rooms().map((roomId) => client.setActivity(roomId, 'idle')));
}

/** A runner stops: its held turns are passed with the reason, activity cleared, the connection closed. */
export async function passHeldTurnsAndClose(client: ChatroomClient, held: Iterable<[roomId: string, canSkip: boolean]>, reason: string): Promise<void> {
  await passHeldTurns(client, held, reason);
  await client.close();
}
