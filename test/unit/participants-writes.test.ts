// Read-modify-writes of one participant's record (last_active after a call, a token rotation, a
// login's new token) each read the record and put it back whole. Two of them for the same
// participant must not interleave, or the later put carries the earlier read's copy: a rotated
// token comes back to life, or a new one is lost.
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { nameKey } from '../../src/identity/names.js';
import { Participants } from '../../src/identity/participants.js';
import { MemoryStore } from '../../src/storage/memory-store.js';
import type { ParticipantRecord } from '../../src/storage/store.js';
import { makeAgent } from './storage-helpers.js';

/** Only a hash of a token is stored (SPEC §3), its SHA-256 in hex: computed here, not by the code under test. */
const sha256 = (token: string): string => createHash('sha256').update(token).digest('hex');

const at = '2026-11-01T00:00:00.000Z';
const later = '2026-11-01T00:05:00.000Z';

/** A store whose first put carrying `last_active === later` waits until the test releases it. */
class HeldStore extends MemoryStore {
  private held: (() => void)[] = [];
  heldCount = 0;

  override async putParticipant(participant: ParticipantRecord, key: string): Promise<void> {
    if (participant.record.last_active === later && this.heldCount === 0) {
      this.heldCount++;
      await new Promise<void>((resolve) => this.held.push(resolve));
    }
    return super.putParticipant(participant, key);
  }

  release(): void {
    for (const resolve of this.held.splice(0)) resolve();
  }
}

const turns = async (n: number): Promise<void> => {
  for (let i = 0; i < n; i++) await new Promise<void>((resolve) => setImmediate(resolve));
};

async function setUp(): Promise<{ store: HeldStore; participants: Participants }> {
  const store = new HeldStore();
  const record: ParticipantRecord = {
    kind: 'agent',
    record: makeAgent('a1', { name: 'alice', last_active: at, token_hashes: [sha256('old-token')] }),
  };
  await store.putParticipant(record, nameKey('alice'));
  const participants = new Participants(store, { language: 'en', timezone: 'UTC' });
  participants.load(await store.listParticipants());
  return { store, participants };
}

describe('one participant, two record writes at once', () => {
  it('a rotation during a last_active write keeps the new token and retires the old one, on disk and in memory', async () => {
    const { store, participants } = await setUp();
    const caller = participants.authenticate('old-token')!;
    const lastActive = participants.recordLastActive('a1', later);
    await turns(3);
    expect(store.heldCount).toBe(1); // read done, its put waiting
    const rotation = participants.rotateToken(caller);
    await turns(10); // a rotation that does not wait for the first write finishes here
    store.release();
    const [, token] = await Promise.all([lastActive, rotation]);

    const stored = await store.getParticipant('a1');
    expect(stored?.record.token_hashes).toEqual([sha256(token)]);
    expect(stored?.record.last_active).toBe(later);
    expect(participants.authenticate('old-token')).toBeUndefined();
    expect(participants.authenticate(token)).toMatchObject({ id: 'a1' });
  });

  it('a failed write does not stop the next one for the same participant', async () => {
    const { store, participants } = await setUp();
    const failing = new Error('disk full');
    const put = store.putParticipant.bind(store);
    let fail = true;
    store.putParticipant = async (participant, key) => {
      if (fail) {
        fail = false;
        throw failing;
      }
      return put(participant, key);
    };
    await expect(participants.rotateToken(participants.authenticate('old-token')!)).rejects.toBe(failing);
    expect(participants.authenticate('old-token')).toMatchObject({ id: 'a1' });
    const token = await participants.rotateToken(participants.authenticate('old-token')!);
    expect((await store.getParticipant('a1'))?.record.token_hashes).toEqual([sha256(token)]);
  });
});
