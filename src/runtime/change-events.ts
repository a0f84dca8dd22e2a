// The events that tell subscribers how a room changed between two committed states, for changes
// this process did not compute itself (another node committed them, SPEC §11). The node that
// commits publishes the events it computed; the others read the new state and the new messages
// from the store and publish what this diff finds: membership and status changes, messages in
// seq order, round end and start (the reason from the stored state, a new round's records after
// its start, as the committing node sends them), the turn (built by the one agent_turn
// builder), and the room itself. `loadChanges` reads what the diff needs from the store in one
// snapshot: the new state, the new messages, and the older ones another node rewrote (edits,
// deletions), which become `message_update`.
import { cloneJson } from '../clone.js';
import { agentTurnData, type AccessEvent, type RoomEvent } from '../protocol/events.js';
import { presentMessage, presentRoomUpdate } from '../rooms/present.js';
import type { CurrentRound, RoundEndReason } from '../rounds/types.js';
import type { LoadedRoom, Store } from '../storage/store.js';
import type { Message, RoomRecord } from '../types.js';
import { memberStatus } from './commands.js';

export interface ChangeEvents {
  access: AccessEvent[];
  events: RoomEvent[];
  turnsIssued: string[];
}

export interface ReadChanges {
  /** Messages after the node's last seq, through the loaded one, in seq order. */
  added: Message[];
  /** Older messages rewritten by the commits between the two versions, in commit order. */
  updated: Message[];
}

/**
 * The room as stored now and what changed since this node's copy (`from`): from one snapshot
 * when the store can read one (shared stores), else read in turn (a store only this process
 * writes changes nothing between the reads).
 */
export async function loadChanges(
  store: Store,
  roomId: string,
  from: { version: number; lastSeq: number; lastPersonSeq: number },
): Promise<(ReadChanges & { loaded: LoadedRoom; lastPersonSeq: number }) | undefined> {
  if (store.readChangesSince) return store.readChangesSince(roomId, from);
  const loaded = await store.loadRoom(roomId);
  if (!loaded) return undefined;
  const changes = await readChanges(store, roomId, from, loaded);
  return { loaded, ...changes, lastPersonSeq: await lastPersonSeqAfter(store, roomId, from.lastPersonSeq, changes) };
}

/**
 * The new messages between this node's copy (`from`) and the state just loaded (`to`), for a
 * store no other process writes (so none of the older messages was rewritten behind this
 * node's back). Reads stop at `to`'s last seq: anything committed after `to` is left for the
 * next refresh, so nothing is announced twice.
 */
export async function readChanges(store: Store, roomId: string, from: { lastSeq: number }, to: LoadedRoom): Promise<ReadChanges> {
  const added: Message[] = [];
  for (let after = from.lastSeq; after < to.lastSeq; ) {
    const page = (await store.readMessages(roomId, { afterSeq: after, limit: 500 })).filter((m) => m.seq <= to.lastSeq);
    if (page.length === 0) break;
    added.push(...page);
    after = page[page.length - 1]!.seq;
  }
  return { added, updated: [] };
}

/**
 * The changes of one commit as its notification carried them (`messages` in commit order),
 * split like `loadChanges` would read them from the store, when the commit follows `version`
 * directly and its new messages continue `lastSeq` without a gap; else undefined (read them).
 * A message written twice in the commit counts once, in its last version, as in the table.
 */
export function carriedChanges(carried: { version: number; lastSeq: number; messages: readonly Message[] }, version: number, lastSeq: number): ReadChanges | undefined {
  if (carried.version !== version + 1) return undefined;
  const bySeq = new Map<number, Message>();
  for (const m of carried.messages) bySeq.set(m.seq, m);
  const all = [...bySeq.values()].sort((a, b) => a.seq - b.seq);
  const added = all.filter((m) => m.seq > lastSeq);
  if (added.length !== carried.lastSeq - lastSeq || added.some((m, i) => m.seq !== lastSeq + 1 + i)) return undefined;
  return { added, updated: all.filter((m) => m.seq <= lastSeq) };
}

/**
 * The seq of the room's last visible person message after the changes: read from the new
 * messages, unless a person message was rewritten (a deletion can move it back), when the store
 * is asked.
 */
export async function lastPersonSeqAfter(store: Store, roomId: string, before: number, changes: ReadChanges): Promise<number> {
  if (changes.updated.some((m) => m.role === 'user')) return store.lastPersonSeq(roomId);
  return lastPersonSeqIn(changes.added, before);
}

/**
 * The seq of the last visible person message among `messages` (the store's `lastPersonSeq` of
 * them), or `before` when none is later. A seq written twice counts in its last version.
 */
export function lastPersonSeqIn(messages: readonly Message[], before = 0): number {
  const bySeq = new Map<number, Message>();
  for (const m of messages) bySeq.set(m.seq, m);
  let last = before;
  for (const m of bySeq.values()) if (m.role === 'user' && m.visible && !m.deleted) last = Math.max(last, m.seq);
  return last;
}

export function changeEvents(
  before: RoomRecord,
  after: RoomRecord,
  added: readonly Message[],
  turnTimeoutMs: number,
  updated: readonly Message[] = [],
): ChangeEvents {
  const roomId = after.room_id;
  const access: AccessEvent[] = [];
  const events: RoomEvent[] = [];
  const turnsIssued: string[] = [];

  const oldMembers = new Map(before.members.map((m) => [m.participant_id, m]));
  const newMembers = new Map(after.members.map((m) => [m.participant_id, m]));
  for (const [id, member] of newMembers) {
    const old = oldMembers.get(id);
    if (!old) {
      access.push({ type: 'joined', room_id: roomId, participant_id: id });
      events.push({ event: 'member_join', room_id: roomId, data: { member: cloneJson(member) } });
    } else if (old.status !== member.status || (old.activity ?? null) !== (member.activity ?? null) || (old.activity_note ?? null) !== (member.activity_note ?? null)) {
      events.push({ event: 'member_status_change', room_id: roomId, data: { member: memberStatus(member) } });
    }
  }
  for (const [id, member] of oldMembers) {
    if (newMembers.has(id)) continue;
    access.push({ type: 'left', room_id: roomId, participant_id: id });
    events.push({ event: 'member_leave', room_id: roomId, data: { member: { ...cloneJson(member), is_host: false } } });
  }

  const oldRound = before.current_round;
  const newRound = after.current_round;
  const started = before !== after && newRound && newRound.round_id !== oldRound?.round_id ? newRound : null;
  // The committing node announces a round's records (offline passes, the guard's message) after
  // its round_start (engine-step.ts): the new messages are cut there.
  const cut = started ? firstOfRound(added, started) : added.length;
  const messageNew = (message: Message): RoomEvent => ({ event: 'message_new', room_id: roomId, data: { message: presentMessage(message, after) } });
  for (const message of added.slice(0, cut)) events.push(messageNew(message));
  for (const message of updated) events.push({ event: 'message_update', room_id: roomId, data: { message: presentMessage(message, after) } });
  // Only messages changed (a carried commit that kept the state): nothing else to compare.
  if (before === after) return { access, events, turnsIssued };

  const oldRunning = oldRound && !oldRound.completed ? oldRound : null;
  if (oldRunning && (newRound?.round_id !== oldRunning.round_id || newRound.completed)) {
    events.push({ event: 'round_end', room_id: roomId, data: { round_id: oldRunning.round_id, reason: endReason(oldRunning.round_id, after) } });
  }
  if (started) {
    events.push({
      event: 'round_start',
      room_id: roomId,
      data: { round_id: started.round_id, agent_queue: [...started.agent_queue], mode: after.interaction_mode, kind: started.kind },
    });
  }
  for (const message of added.slice(cut)) events.push(messageNew(message));
  if (started?.completed) events.push({ event: 'round_end', room_id: roomId, data: { round_id: started.round_id, reason: started.end_reason } });
  const oldTurn = agentTurnData(before, turnTimeoutMs);
  const newTurn = agentTurnData(after, turnTimeoutMs);
  if (newTurn && JSON.stringify(newTurn) !== JSON.stringify(oldTurn)) {
    events.push({ event: 'agent_turn', room_id: roomId, data: newTurn });
    turnsIssued.push(newTurn.agent_name);
  }
  const roomAfter = presentRoomUpdate(after);
  if (JSON.stringify(presentRoomUpdate(before)) !== JSON.stringify(roomAfter)) {
    events.push({ event: 'room_update', room_id: roomId, data: { room: roomAfter } });
  }
  return { access, events, turnsIssued };
}

/**
 * Why the round `roundId` ended, as its round_end on the committing node said: from
 * `current_round` when it is still that round, else from the room's `recent_round_ends` (the
 * commit also started the next round: a follow-up after `completed`, a host round after
 * `superseded`, …). A round found in neither (a room stored before `recent_round_ends`, or a
 * node more rounds behind than the list keeps) is reported `superseded`: another round took its
 * place.
 */
function endReason(roundId: string, after: RoomRecord): RoundEndReason {
  const current = after.current_round;
  if (current?.round_id === roundId && current.completed) return current.end_reason;
  const recent = (after.recent_round_ends ?? []).findLast((e) => e.round_id === roundId);
  return recent?.reason ?? 'superseded';
}

/**
 * Where the messages of the newly started `round` begin among `added` (seq order): its first
 * message, unless that is the agent's own post that opened the round in an idle room (SPEC
 * §6.1.4: the post is numbered, and announced, before the round it starts; it heads the queue
 * and carries the round's start time), whose next message is taken instead. `added.length`
 * when the round has none.
 */
function firstOfRound(added: readonly Message[], round: CurrentRound): number {
  const first = added.findIndex((m) => m.round_id === round.round_id);
  if (first < 0) return added.length;
  const m = added[first]!;
  const opener = m.role === 'ai_agent' && m.skip_reason === null && m.sender === round.agent_queue[0] && m.timestamp === round.start_time;
  if (!opener) return first;
  const next = added.findIndex((x, i) => i > first && x.round_id === round.round_id);
  return next < 0 ? added.length : next;
}
