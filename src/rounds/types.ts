// Round state as stored in rooms.json (`current_round`, SPEC §4 and §6). The turn engine owns
// these shapes; field names are the contract's.

export type RoundKind = 'rotation' | 'host' | 'host_floor';
export type TurnReason = 'rotation' | 'mention' | 'host';
export type RoundEndReason = 'completed' | 'mention_chain' | 'superseded' | 'room_empty' | 'guard';

export interface TurnState {
  /** Name of the agent that holds the turn. */
  agent: string;
  can_skip: boolean;
  reason: TurnReason;
  /** ISO 8601 UTC; null while the room is paused (no timer runs). */
  deadline: string | null;
  /** Visible posts made in this turn with `end_turn: false`. */
  posted: number;
  /** How many times `extend_turn` was used in this turn (at most 3). */
  extensions?: number;
}

export interface CurrentRound {
  round_id: string;
  kind: RoundKind;
  start_time: string;
  current_agent_index: number;
  agent_queue: string[];
  completed: boolean;
  /** Who holds the turn now; null once the round completed. */
  turn: TurnState | null;
  /** Names still to answer in the current mention chain, in order. */
  pending_mentions: string[];
  /** Visible agent answers since the last person message or start_round. */
  guard_count: number;
}
