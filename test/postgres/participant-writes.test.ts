// Two nodes on one database writing the same participant: node A stores the agent's
// last_active (read, change, put back) while node B rotates its token. Without a check, A's put
// carries the record it read before the rotation and the rotated-away token works again on
// every node. The store's compare-and-set makes A's put fail, and A redoes its write on the
// record B left.
import { createHash } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { nameKey } from '../../src/identity/names.js';
import { Participants } from '../../src/identity/participants.js';
import { PgStore } from '../../src/storage/postgres/pg-store.js';
import type { ParticipantRecord } from '../../src/storage/store.js';
import { makeAgent } from '../unit/storage-helpers.js';
import { pgTestsEnabled, usePgServer } from './pg-server.js';

/** Only a hash of a token is stored (SPEC §3), its SHA-256 in hex: computed here, not by the code under test. */
const sha256 = (token: string): string => createHash('sha256').update(token).digest('hex');

const later = '2026-11-01T00:05:00.000Z';

/** Node A's store: its first put of `last_active === later` waits until released. */
class HeldPgStore extends PgStore {
  private release: (() => void) | undefined;
  private readonly reached: Promise<void>;
  private arrive!: () => void;
  held = 0;

  constructor(connectionString: string) {
    super({ connectionString, poolSize: 2 });
    this.reached = new Promise((resolve) => (this.arrive = resolve));
  }

  override async putParticipant(participant: ParticipantRecord, key: string, expected?: ParticipantRecord): Promise<void> {
    if (participant.record.last_active === later && this.held++ === 0) {
      const go = new Promise<void>((resolve) => (this.release = resolve));
      this.arrive();
      await go;
    }
    return super.putParticipant(participant, key, expected);
  }

  /** Resolves once the first last_active put is waiting. */
  waiting(): Promise<void> {
    return this.reached;
  }

  go(): void {
    this.release?.();
  }
}

describe.skipIf(!pgTestsEnabled())('one participant written by two nodes', () => {
  const pgServer = usePgServer();
  const stores: PgStore[] = [];
  afterEach(async () => {
    await Promise.all(stores.splice(0).map((s) => s.close()));
  });

  it('a rotation on node B while node A stores last_active: the old token stays retired everywhere', async () => {
    const url = await pgServer().createDatabase();
    const storeA = new HeldPgStore(url);
    const storeB = new PgStore({ connectionString: url, poolSize: 2 });
    stores.push(storeA, storeB);
    await Promise.all([storeA.open(), storeB.open()]);
    await storeB.putParticipant(
      { kind: 'agent', record: makeAgent('a1', { name: 'alice', last_active: '2026-11-01T00:00:00.000Z', token_hashes: [sha256('old-token')] }) },
      nameKey('alice'),
    );
    const defaults = { language: 'en', timezone: 'UTC' };
    const nodeA = new Participants(storeA, defaults, undefined, true);
    const nodeB = new Participants(storeB, defaults, undefined, true);
    nodeA.load(await storeA.listParticipants());
    nodeB.load(await storeB.listParticipants());

    const lastActive = nodeA.recordLastActive('a1', later);
    await storeA.waiting(); // A has read the record; its put waits
    const token = await nodeB.rotateToken(nodeB.authenticate('old-token')!);
    storeA.go();
    await lastActive;

    const stored = await storeB.getParticipant('a1');
    expect(stored?.record.token_hashes).toEqual([sha256(token)]);
    expect(stored?.record.last_active).toBe(later);
    expect(await storeA.findParticipantByTokenHash(sha256('old-token'))).toBeUndefined();
    expect(storeA.held).toBe(2); // the first put was refused and done again on B's record
  });
});
