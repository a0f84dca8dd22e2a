// Subscriptions and fan-out of the WebSocket hub (SPEC §8): which sockets follow which room,
// `subscribe` (with the replay of history after `after_seq`) and `unsubscribe`, the agent_turn
// sent again to a turn holder that (re)subscribes, and the bus's room and access events written
// to the subscribed sockets (serialised once per event).
//
// Ordering: the bus publishes a room's events synchronously in commit order and they are
// written in that order. A room runtime swaps in its committed seq and publishes that batch's
// events in the same tick, so `committedSeq` is the last seq whose `message_new` was published:
// a replay reads the store up to it, later messages reach the socket live, and the seam has
// neither a gap nor a duplicate.
import type { App } from '../app.js';
import { toWireError } from '../errors.js';
import type { AccessEvent, RoomEvent } from '../events/bus.js';
import { agentTurnData } from '../protocol/events.js';
import type { EventFrame } from '../protocol/frames.js';
import { CLOSE } from '../protocol/frames.js';
import { presentMessage } from '../rooms/present.js';
import { memberOf } from '../runtime/commands.js';
import type { Session, RoomSub } from './ws-session.js';
import { eventWire, serialise, SocketIndex } from './ws-wire.js';

/** Calls refused with rate_limited in a row before the socket is closed with 1008. */
export const MAX_RATE_LIMIT_STRIKES = 20;

export interface SubscriptionOptions {
  /** Replayed messages written between two waits for the socket to drain. */
  replayChunk: number;
}

export class WsSubscriptions {
  private readonly byRoom = new SocketIndex<string, Session>();

  constructor(
    private readonly app: App,
    private readonly options: SubscriptionOptions,
    /** The open sockets of a participant (access events concern all of them). */
    private readonly sessionsOf: (participantId: string) => ReadonlySet<Session> | undefined,
  ) {}

  /** Rooms with at least one subscribed socket. */
  get rooms(): number {
    return this.byRoom.size;
  }

  addSub(session: Session, roomId: string, lastSent: number, replaying = false): RoomSub {
    const sub: RoomSub = { lastSent, queue: replaying ? [] : null };
    session.subs.set(roomId, sub);
    this.byRoom.add(roomId, session);
    return sub;
  }

  removeSub(session: Session, roomId: string): boolean {
    const had = session.subs.delete(roomId);
    this.byRoom.delete(roomId, session);
    return had;
  }

  unindexAll(session: Session): void {
    for (const roomId of [...session.subs.keys()]) this.removeSub(session, roomId);
  }

  /**
   * Several nodes: the socket's token is checked in the store first (at most every few seconds),
   * so a replay never goes to a token revoked elsewhere; a revoked one closes the socket.
   */
  async checkedSubscribe(session: Session, roomId: string, afterSeq: number | undefined): Promise<void> {
    const participants = this.app.participants;
    const tokenHash = session.caller?.tokenHash;
    if (participants.isShared && tokenHash && !(await participants.stillValid(tokenHash))) return;
    if (session.state !== 'open') return;
    // A subscribe costs like a call (with after_seq it starts a replay of up to a chunk of the
    // room's history): it counts against the participant's budget (SPEC §10), and a socket that
    // keeps sending after rate_limited is closed like one that keeps calling.
    try {
      await this.app.limits.consumeParticipant(session.caller!.id);
    } catch (err) {
      const error = toWireError(err);
      session.send({ type: 'error', error, room_id: roomId });
      if (error.code === 'rate_limited' && ++session.rateLimitStrikes >= MAX_RATE_LIMIT_STRIKES) {
        session.close(CLOSE.POLICY_VIOLATION, 'subscribes kept coming after rate_limited');
      }
      return;
    }
    session.rateLimitStrikes = 0;
    if (session.state !== 'open') return;
    return this.subscribe(session, roomId, afterSeq);
  }

  private async subscribe(session: Session, roomId: string, afterSeq: number | undefined): Promise<void> {
    const caller = session.caller!;
    // A loaded room is checked without yielding, so no live event slips in between the check,
    // the cursor and the `subscribed` answer.
    let bound: number;
    try {
      const runtime = this.app.rooms.loaded(roomId) ?? (await this.app.rooms.require(roomId));
      memberOf(runtime.room, caller);
      bound = runtime.committedSeq;
    } catch (err) {
      session.send({ type: 'error', error: toWireError(err), room_id: roomId });
      return;
    }
    if (afterSeq === undefined) {
      // Already live: keep the cursor. Otherwise start live from what is published now.
      if (!session.subs.has(roomId)) this.addSub(session, roomId, bound);
      session.send({ type: 'subscribed', room_id: roomId, last_seq: bound });
    } else {
      const sub = this.addSub(session, roomId, Math.min(afterSeq, bound), true);
      session.send({ type: 'subscribed', room_id: roomId, last_seq: bound, after_seq: afterSeq });
      if (!(await this.replay(session, roomId, sub, afterSeq, bound))) return;
      session.flush(sub);
    }
    await this.resendTurn(session, roomId);
  }

  /** Sends the socket its agent_turn for the room again when its participant holds the turn. */
  async resendTurn(session: Session, roomId: string): Promise<void> {
    const caller = session.caller!;
    const room = (await this.app.rooms.runtime(roomId))?.room;
    const turn = room && session.subs.has(roomId) ? agentTurnData(room, this.app.config.turnTimeoutMs) : null;
    if (!turn || turn.agent_id !== caller.id) return;
    const frame: EventFrame = { type: 'event', event: 'agent_turn', room_id: roomId, data: turn };
    session.send(frame);
  }

  /**
   * Writes message_new for seqs (afterSeq, bound] in chunks, waiting for the socket to drain
   * between chunks. Live events of the room queue up in `sub` meanwhile. False when the
   * subscription was replaced or dropped on the way.
   */
  private async replay(session: Session, roomId: string, sub: RoomSub, afterSeq: number, bound: number): Promise<boolean> {
    let seq = afterSeq + 1;
    const current = () => session.isOpen && session.subs.get(roomId) === sub;
    while (seq <= bound) {
      if (!current()) return false;
      const room = (await this.app.rooms.runtime(roomId))?.room;
      if (!room) return false;
      const limit = Math.min(this.options.replayChunk, bound - seq + 1);
      const messages = await this.app.store.readMessages(roomId, { afterSeq: seq - 1, limit });
      if (!current()) return false;
      let last: Promise<void> | undefined;
      for (const message of messages) {
        if (message.seq > bound) break;
        const frame = serialise({ event: 'message_new', room_id: roomId, data: { message: presentMessage(message, room) } });
        sub.lastSent = message.seq;
        last = session.sendAndWait(frame);
      }
      seq += limit;
      if (seq <= bound && last) await last;
    }
    return current();
  }

  unsubscribe(session: Session, roomId: string): void {
    this.removeSub(session, roomId);
    session.send({ type: 'unsubscribed', room_id: roomId });
  }

  onRoomEvent(event: RoomEvent): void {
    const seq = event.event === 'message_new' ? event.data.message.seq : 0;
    const sessions = this.byRoom.get(event.room_id);
    if (!sessions || sessions.size === 0) return;
    const wire = eventWire(event);
    for (const session of sessions) session.deliver(event.room_id, wire, seq);
  }

  onAccess(event: AccessEvent): void {
    if (event.type === 'token_revoked') return; // handled per token through onTokenRevoked
    const sessions = this.sessionsOf(event.participant_id);
    if (!sessions) return;
    for (const session of sessions) {
      if (session.state !== 'open') continue;
      if (event.type === 'joined') {
        if (session.subs.has(event.room_id)) continue;
        // Access events are published in the committing tick, before the batch's room events.
        const cursor = this.committedSeq(event.room_id);
        // Before auth_ok the room is simply among those auth_ok lists (its events held till then).
        this.addSub(session, event.room_id, cursor, !session.greeted);
        if (session.greeted) session.send({ type: 'subscribed', room_id: event.room_id, last_seq: cursor });
      } else if (this.removeSub(session, event.room_id) && session.greeted) {
        session.send({ type: 'unsubscribed', room_id: event.room_id });
      }
    }
  }

  /** The room's committed seq, known synchronously for a loaded room (0 for a new one). */
  private committedSeq(roomId: string): number {
    return this.app.rooms.loaded(roomId)?.committedSeq ?? 0;
  }
}
