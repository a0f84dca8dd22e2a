// The events a commit published, in a form another node can replay (several nodes, SPEC §11:
// every subscriber on every node gets the same events). The committing node sends it with its
// notification, and the store keeps it with the commit; a node exactly one version behind
// replays the notified one, a node further behind the stored ones, instead of rebuilding the
// events from the state difference (change-events.ts), which cannot tell how many room_updates
// there were or see a round that began and ended inside a commit.
//
// Entries, in publish order (access events first, as RoomRuntime publishes them):
//   ["a", accessEvent]  ["m", seq, processed] (message_new)  ["u", seq, processed]
//   (message_update)  ["e", roomEvent]
// Messages go by seq: the replaying node has the rows (carried or read); `processed` is what the
// committing node showed (a batch may mark a message processed after announcing it).
import { presentMessage } from '../rooms/present.js';
import type { AccessEvent, RoomEvent } from '../protocol/events.js';
import type { Message, RoomRecord } from '../types.js';

type Entry = ['a', AccessEvent] | ['m' | 'u', number, boolean] | ['e', RoomEvent];

/** The events of one commit as JSON text (the notification's `ev`). */
export function encodeEventPlan(access: readonly AccessEvent[], events: readonly RoomEvent[]): string {
  const entries: Entry[] = access.map((a): Entry => ['a', a]);
  for (const event of events) {
    if (event.event === 'message_new' || event.event === 'message_update') {
      const { seq, processed } = event.data.message;
      entries.push([event.event === 'message_new' ? 'm' : 'u', seq, processed === true]);
    } else entries.push(['e', event]);
  }
  return JSON.stringify(entries);
}

export interface ReplayedEvents {
  events: RoomEvent[];
  access: AccessEvent[];
  turnsIssued: string[];
}

/**
 * The commit's events rebuilt from its plan and rows, or undefined when the plan does not fit
 * them (malformed, another room, a seq it does not have): the caller then falls back to the
 * state difference.
 */
export function replayEventPlan(plan: unknown, room: RoomRecord, added: readonly Message[], updated: readonly Message[]): ReplayedEvents | undefined {
  if (!Array.isArray(plan)) return undefined;
  const bySeq = new Map<number, Message>();
  for (const m of added) bySeq.set(m.seq, m);
  const updatedBySeq = new Map<number, Message>();
  for (const m of updated) updatedBySeq.set(m.seq, m);
  const result: ReplayedEvents = { events: [], access: [], turnsIssued: [] };
  for (const entry of plan as unknown[]) {
    if (!Array.isArray(entry) || entry.length < 2) return undefined;
    const [kind, value, processed] = entry as [unknown, unknown, unknown];
    if (kind === 'm' || kind === 'u') {
      const message = typeof value === 'number' ? (kind === 'm' ? bySeq.get(value) : (updatedBySeq.get(value) ?? bySeq.get(value))) : undefined;
      if (!message || typeof processed !== 'boolean') return undefined;
      const shown = { ...presentMessage(message, room), processed };
      result.events.push({ event: kind === 'm' ? 'message_new' : 'message_update', room_id: room.room_id, data: { message: shown } });
    } else if (kind === 'a' && isObject(value) && value.room_id === room.room_id) {
      result.access.push(value as AccessEvent);
    } else if (kind === 'e' && isObject(value) && value.room_id === room.room_id && typeof value.event === 'string') {
      const event = value as RoomEvent;
      result.events.push(event);
      if (event.event === 'agent_turn') result.turnsIssued.push(event.data.agent_name);
    } else {
      return undefined;
    }
  }
  return result;
}

/**
 * The events of every commit from `fromVersion` + 1 through `toVersion`, one entry per commit in
 * order (each is published as its committing node published it: access events, then the
 * room's), replayed from the plans a store kept with them (`RoomChangesSince.plans`); undefined
 * unless there is a readable plan for each of those versions, and the caller then falls back to
 * the state difference. Messages come from the rows as they are now (a message edited by a
 * later commit shows its latest text in its message_new too, as in the difference).
 */
export function replayStoredPlans(
  plans: readonly { version: number; events: string | null }[] | undefined,
  fromVersion: number,
  toVersion: number,
  room: RoomRecord,
  added: readonly Message[],
  updated: readonly Message[],
): ReplayedEvents[] | undefined {
  if (!plans || plans.length === 0 || plans.length !== toVersion - fromVersion) return undefined;
  const commits: ReplayedEvents[] = [];
  for (const [i, plan] of plans.entries()) {
    if (plan.version !== fromVersion + 1 + i || plan.events === null) return undefined;
    let parsed: unknown;
    try {
      parsed = JSON.parse(plan.events);
    } catch {
      return undefined;
    }
    const one = replayEventPlan(parsed, room, added, updated);
    if (!one) return undefined;
    commits.push(one);
  }
  return commits;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
