// Start-up of the identity service: tokens and names are indexed at load, look-alike keys in the
// background (or on the first registration). Whatever the moment, every answer must be the one
// the fully built index gives: a registration, a rotation or a login before, during or after
// the background indexing.
import { describe, expect, it } from 'vitest';
import { AppError } from '../../src/errors.js';
import { nameKey } from '../../src/identity/names.js';
import { Participants } from '../../src/identity/participants.js';
import { hashToken } from '../../src/identity/secrets.js';
import { MemoryStore } from '../../src/storage/memory-store.js';
import type { ParticipantRecord } from '../../src/storage/store.js';

const at = '2026-11-01T00:00:00.000Z';
const agent = (i: number, name: string): ParticipantRecord => ({
  kind: 'agent',
  record: {
    agent_id: `a${i}`,
    name,
    introduce: '',
    rooms: [],
    status: 'offline',
    last_active: at,
    capabilities: [],
    skip_list: [],
    language_support: ['en'],
    preferred_language: 'en',
    timezone: 'UTC',
    created_at: at,
    token_hashes: [hashToken(`token-${i}`)],
  },
});

/**
 * Stored names, some of them look-alikes of each other (as a directory written before the
 * look-alike rule could hold): `Alice` and `Аlice` (Cyrillic А) share a key, the later one
 * in load order holds it in a fully built index.
 */
const STORED = ['Alice', 'bob', 'Аlice', 'carol', 'dave1', 'eve', ...Array.from({ length: 1200 }, (_, i) => `agent-${i}`)];
/** Names tried after start: free ones, look-alikes of stored ones, taken ones. */
const TRIED = ['alice', 'ALICE', 'Alicе', 'davel', 'DAVE1', 'b0b', 'bob', 'frank', 'agent-7', 'agent-l0', 'аgent-99', 'new-one'];

async function loaded(): Promise<{ participants: Participants; store: MemoryStore }> {
  const store = new MemoryStore();
  for (const [i, name] of STORED.entries()) await store.putParticipant(agent(i, name), nameKey(name));
  const participants = new Participants(store, { language: 'en', timezone: 'UTC' });
  participants.load(await store.listParticipants());
  return { participants, store };
}

/** What registering each tried name answers, in order (each success takes its name). */
async function outcomes(participants: Participants): Promise<string[]> {
  const out: string[] = [];
  for (const name of TRIED) {
    try {
      await participants.registerAgent({ name }, new Date(at));
      out.push(`${name}: ok`);
    } catch (err) {
      if (!(err instanceof AppError)) throw err;
      out.push(`${name}: ${err.code} ${JSON.stringify(err.details ?? null)}`);
    }
  }
  return out;
}

describe('participants loaded at start-up', () => {
  it('authenticates and finds names at once, before the look-alike keys are indexed', async () => {
    const { participants } = await loaded();
    expect(participants.authenticate('token-2')).toMatchObject({ id: 'a2', name: 'Аlice', kind: 'agent' });
    expect(participants.byName('BOB')).toMatchObject({ id: 'a1' });
    expect(participants.authenticate('token-unknown')).toBeUndefined();
    participants.stop();
  });

  it('answers registrations exactly as the fully built index, whether or not the background finished', async () => {
    const eager = await loaded();
    await eager.participants.lookAlikesIndexed();
    const expected = await outcomes(eager.participants);
    expect(expected).toContain('alice: name_taken null');
    expect(expected.find((o) => o.startsWith('Alicе:'))).toContain('"similar_to":"Аlice"');
    expect(expected).toContain('frank: ok');

    const early = await loaded(); // the first registration indexes what the background has not
    expect(await outcomes(early.participants)).toEqual(expected);
    early.participants.stop();
  });

  it('keeps the order of a full index when records change before the background indexed them', async () => {
    // Eager: stored in load order (Аlice holds the shared key), then the change (Alice's
    // rotation re-indexes her: she holds it). The lazy index must give the same holder.
    const eager = await loaded();
    await eager.participants.lookAlikesIndexed();
    const caller = eager.participants.authenticate('token-0')!;
    await eager.participants.rotateToken(caller);
    const expected = await outcomes(eager.participants);
    expect(expected.find((o) => o.startsWith('Alicе:'))).toContain('"similar_to":"Alice"');

    const early = await loaded();
    await early.participants.rotateToken(early.participants.authenticate('token-0')!);
    await early.participants.lookAlikesIndexed();
    expect(await outcomes(early.participants)).toEqual(expected);

    const mid = await loaded();
    await mid.participants.rotateToken(mid.participants.authenticate('token-0')!);
    expect(await outcomes(mid.participants)).toEqual(expected);
    mid.participants.stop();
  });

  it('indexes in the background without a registration', async () => {
    const { participants } = await loaded();
    await participants.lookAlikesIndexed();
    await expect(participants.registerAgent({ name: 'АLICE' }, new Date(at))).rejects.toMatchObject({ code: 'name_taken' });
  });
});
