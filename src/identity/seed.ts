// Start-up: the identity indexes and the presence seed, from one pass over the stored
// participants. With 100,000 participants a listing copies every record (~0.5 s and as many
// short-lived objects); a store that can hand its own records out read-only does so.
import type { ParticipantRecord, Store } from '../storage/store.js';
import type { Participants } from './participants.js';
import type { Presence } from './presence.js';

export async function seedParticipants(store: Store, participants: Participants, presence: Presence): Promise<void> {
  const visit = (found: Readonly<ParticipantRecord>): void => {
    const participant = participants.loadOne(found);
    // SPEC §6: after a restart presence starts from the stored last_active, with a shared store
    // too (an agent that does not come back goes offline 90 s after it, not when the dead node's
    // presence rows are swept). A seed emits nothing and is not published as served by this
    // node; its expiry stores `offline` only when no other live node serves the participant
    // (Rooms.applyPresence asks), so an agent connected elsewhere is never marked offline by it.
    presence.seed(participant.id, Date.parse(found.record.last_active));
  };
  if (store.readParticipants) await store.readParticipants(visit);
  else for (const found of await store.listParticipants()) visit(found);
}
