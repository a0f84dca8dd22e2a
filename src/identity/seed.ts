// Start-up: the identity indexes and the presence seed, from one pass over the stored
// participants. With 100,000 participants a listing copies every record (~0.5 s and as many
// short-lived objects); a store that can hand its own records out read-only does so.
import type { ParticipantRecord, Store } from '../storage/store.js';
import type { Participants } from './participants.js';
import type { Presence } from './presence.js';

export async function seedParticipants(store: Store, participants: Participants, presence: Presence, shared: boolean): Promise<void> {
  const visit = (found: Readonly<ParticipantRecord>): void => {
    const participant = participants.loadOne(found);
    // With a shared store each node knows the presence of its own clients only (a node that
    // seeded everyone from last_active would mark agents offline that another node serves).
    if (!shared) presence.seed(participant.id, Date.parse(found.record.last_active));
  };
  if (store.readParticipants) await store.readParticipants(visit);
  else for (const found of await store.listParticipants()) visit(found);
}
