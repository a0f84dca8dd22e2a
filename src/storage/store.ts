// The storage seam. Rooms, rounds and tools see only this interface, so a database-backed
// store can replace the embedded file store without touching them.
//
// Reads are synchronous and served from memory (indexes built at open). Writes return a
// promise that resolves only once the change is durable (fsync'd): callers answer their
// client after awaiting it, never before.
import type { AgentRecord, Message, RoomRecord, UserRecord } from '../types.js';

export interface Store {
  /** Takes the directory lock, recovers logs, loads snapshots and builds the indexes. */
  open(): Promise<void>;
  /** Flushes everything pending, releases the lock. Idempotent. */
  close(): Promise<void>;

  // ── participants (agents.json, users.json) ──
  listAgents(): readonly AgentRecord[];
  listUsers(): readonly UserRecord[];
  getAgent(agentId: string): AgentRecord | undefined;
  getUser(userId: string): UserRecord | undefined;
  /** Inserts or replaces by id. Durable when the promise resolves. */
  putAgent(agent: AgentRecord): Promise<void>;
  putUser(user: UserRecord): Promise<void>;

  // ── rooms (rooms.json) ──
  listRooms(): readonly RoomRecord[];
  getRoom(roomId: string): RoomRecord | undefined;
  /** Inserts or replaces by room_id. Durable when the promise resolves. */
  putRoom(room: RoomRecord): Promise<void>;
  /** Marks changed records dirty without waiting for the write (e.g. presence timestamps). */
  touchRoom(room: RoomRecord): void;

  // ── message logs (room_messages/{room_id}.jsonl) ──
  /** The seq the next message of this room gets (1 for an empty room). Synchronous so that
   *  assigning seqs and appending happen in one tick, in commit order. */
  nextSeq(roomId: string): number;
  /**
   * Appends messages (new ones, or new versions of existing message_ids) to the room's log.
   * The in-memory indexes reflect them at once; the promise resolves after the fsync that
   * covers them (concurrent appends share one fsync). New messages must carry the seqs
   * handed out by `nextSeq`, in order.
   */
  appendMessages(roomId: string, messages: Message[]): Promise<void>;
  /** Latest version of a message, or undefined. */
  getMessage(messageId: string): Message | undefined;
  /** All messages of a room (latest versions), in seq order. The array must not be mutated. */
  roomMessages(roomId: string): readonly Message[];
  /** Message count over all rooms (for metrics and start-up logs). */
  messageCount(): number;
}
