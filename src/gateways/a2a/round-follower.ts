// Follows one room from just before a member's message is posted until the round that message
// started ends (SPEC §12: round = task, answer = artifact). It reads the room's events from the
// bus, which every node feeds from the shared commit order (SPEC §11), so it works on whichever
// node took the message.
//
// Which round: the first `round_start` after the message's own `message_new` (a person's message
// in an idle room starts one in the same commit; during a running round it is unanswered and the
// next round is the one it started; a host's mention starts one at once). An agent's post that
// answered its turn, or started a round in an idle room, belongs to its `round_id`. When no round
// will come for it (a room without agents, a post that starts nothing in host mode), the follower
// ends with `no_round`; a person's message in a room whose agents are all offline waits for the
// round that starts when one comes online, as it would in a paused room for the resume.
import type { EventBus, RoomEvent } from '../../events/bus.js';
import type { Message, RoomRecord } from '../../types.js';

export interface RoundAnswer {
  message_id: string;
  seq: number;
  sender: string;
  text: string;
  timestamp: string;
}

export type RoundStep =
  | { kind: 'round'; round_id: string }
  | { kind: 'answer'; answer: RoundAnswer }
  | { kind: 'end'; round_id: string; reason: string }
  | { kind: 'no_round' }
  | { kind: 'stopped' };

export interface RoundFollowerOptions {
  bus: EventBus;
  roomId: string;
  /** The room's current state (after the post), to tell "a round is coming" from "none will". */
  roomNow: () => Promise<RoomRecord | undefined>;
  /** Called once when following ends, however it ends. */
  onStop?: () => void;
}

export class RoundFollower {
  private readonly pending: RoomEvent[] = [];
  private wake: (() => void) | null = null;
  private readonly unsubscribe: () => void;
  private mine: Message | null = null;
  private anchored = false;
  private target: string | null = null;
  private stopped = false;
  private idleCheck = false;

  constructor(private readonly options: RoundFollowerOptions) {
    // Subscribed before the post: the post's own events are published before the call returns.
    this.unsubscribe = options.bus.subscribe((event) => {
      if (event.room_id !== options.roomId || this.stopped) return;
      this.pending.push(event);
      this.poke();
    });
  }

  /** The message was posted (as the caller returned it); following starts from its event. */
  posted(message: Message): void {
    this.mine = message;
    // An agent's post is an answer in a round (its turn, or the round it started in an idle room).
    if (message.role === 'ai_agent' && message.round_id) this.target = message.round_id;
    this.idleCheck = this.target === null;
    this.poke();
  }

  /** Stops following (cancel, shutdown): the generator ends with `stopped`. The room is untouched. */
  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    this.unsubscribe();
    this.poke();
    this.options.onStop?.();
  }

  /** The round's steps in commit order, ending with `end`, `no_round` or `stopped`. */
  async *steps(): AsyncGenerator<RoundStep> {
    try {
      if (this.target) yield { kind: 'round', round_id: this.target };
      for (;;) {
        if (this.stopped) {
          yield { kind: 'stopped' };
          return;
        }
        const event = this.mine ? this.pending.shift() : undefined;
        if (!event) {
          if (this.mine && this.anchored && this.idleCheck && this.target === null) {
            this.idleCheck = false;
            if (await this.noRoundComing()) {
              yield { kind: 'no_round' };
              return;
            }
            continue;
          }
          await new Promise<void>((resolve) => (this.wake = resolve));
          continue;
        }
        const step = this.read(event);
        if (step) {
          yield step;
          if (step.kind === 'end') return;
        }
      }
    } finally {
      this.stop();
    }
  }

  private read(event: RoomEvent): RoundStep | null {
    const mine = this.mine!;
    if (!this.anchored) {
      if (event.event === 'message_new' && event.data.message.message_id === mine.message_id) this.anchored = true;
      return null;
    }
    switch (event.event) {
      case 'round_start':
        if (this.target !== null) return null;
        this.target = event.data.round_id;
        return { kind: 'round', round_id: this.target };
      case 'round_end':
        if (this.target === null) {
          // Another round ended; if none follows in this commit's events, ask the room.
          this.idleCheck = true;
          return null;
        }
        return event.data.round_id === this.target ? { kind: 'end', round_id: this.target, reason: event.data.reason } : null;
      case 'message_new': {
        const m = event.data.message;
        if (this.target === null || m.message_id === mine.message_id) return null;
        if (m.role !== 'ai_agent' || !m.visible || m.deleted || m.round_id !== this.target) return null;
        return { kind: 'answer', answer: { message_id: m.message_id, seq: m.seq, sender: m.sender, text: m.text_content, timestamp: m.timestamp } };
      }
      default:
        return null;
    }
  }

  /** Idle, active and no round of ours: nothing will start one for this message. */
  private async noRoundComing(): Promise<boolean> {
    const room = await this.options.roomNow().catch(() => undefined);
    if (!room) return true; // the room is gone
    if (this.target !== null || this.pending.length > 0) return false;
    if (room.system_status === 'paused') return false; // a round starts on resume
    // Host mode: only the post itself starts a round (a host's message that mentions agents).
    if (room.interaction_mode === 'host') return true;
    const running = room.current_round !== null && !room.current_round.completed;
    if (running) return false; // the unanswered message starts the next round
    // Idle: an unanswered message starts a round once one of the room's agents is online.
    const unanswered = this.mine!.role === 'user' && room.processed_through_seq < this.mine!.seq;
    return !(unanswered && room.members.some((m) => m.role === 'ai_agent'));
  }

  private poke(): void {
    const wake = this.wake;
    this.wake = null;
    wake?.();
  }
}
