// The stored record of a participant, whichever kind it is.
import type { Store } from '../storage/store.js';
import type { AgentRecord, Participant, UserRecord } from '../types.js';

export type ParticipantRecord = { kind: 'agent'; record: AgentRecord } | { kind: 'user'; record: UserRecord };

export function findRecord(store: Store, who: Pick<Participant, 'kind' | 'id'>): ParticipantRecord | undefined {
  if (who.kind === 'agent') {
    const record = store.getAgent(who.id);
    return record ? { kind: 'agent', record } : undefined;
  }
  const record = store.getUser(who.id);
  return record ? { kind: 'user', record } : undefined;
}

/** Stores the (changed) record; durable when the promise resolves. */
export function saveRecord(store: Store, found: ParticipantRecord): Promise<void> {
  return found.kind === 'agent' ? store.putAgent(found.record) : store.putUser(found.record);
}
