// The in-memory indexes of participants: by token hash (authentication is synchronous, every
// call of every transport pays it), by name, and by look-alike key (SPEC §3), plus the names
// claimed by registrations in flight. Stored participants' look-alike keys are indexed in the
// background after start-up.
import { AppError } from '../errors.js';
import type { ParticipantRecord } from '../storage/store.js';
import type { Participant } from '../types.js';
import { checkParticipantName, confusableKeys, nameKey } from './names.js';
import { participantOf } from './participant-records.js';
import { TokenHashCache } from './secrets.js';

/** Tokens whose hash is remembered (see hashOf). */
const RECENT_TOKENS = 10_000;

/**
 * Stored participants' look-alike keys are indexed in the background, this long after start-up
 * and this many per event-loop turn (see `loadOne`); a registration finishes the rest first.
 */
const LOOK_ALIKE_DELAY_MS = 1000;
const LOOK_ALIKES_PER_TURN = 500;

export class ParticipantIndex {
  private readonly byTokenHash = new Map<string, Participant>();
  private readonly byNameKey = new Map<string, Participant>();
  /** Names by their confusable skeleton (SPEC §3: look-alike names are `name_taken`). */
  private readonly byConfusableKey = new Map<string, Participant>();
  /**
   * Participants loaded at start whose look-alike keys are not in byConfusableKey yet, in load
   * order, and how far the background indexing got (`indexLookAlikes`).
   */
  private unindexed: Participant[] = [];
  private unindexedFrom = 0;
  private lookAlikeTimer: NodeJS.Timeout | undefined;
  private lookAlikesDone: (() => void) | undefined;
  private stopped = false;
  /** Entries written by changes since start: a stored participant indexed later never replaces them. */
  private readonly indexedByChange = new WeakSet<Participant>();
  /** Names (and `~`look-alike keys) of registrations in flight. */
  private readonly claimed = new Set<string>();
  private readonly recentHashes = new TokenHashCache(RECENT_TOKENS);

  /**
   * Indexes one stored participant at start-up (the record is only read, never kept): its
   * tokens and name now, its look-alike keys (UTS #39 skeletons, the costly part: ~10 µs a
   * name) in the background, which a registration completes before checking a name. The
   * result is the index an eager load builds: stored participants in load order, then every
   * change since start (see `indexLookAlikes`).
   */
  loadOne(found: Readonly<ParticipantRecord>): Participant {
    const participant = participantOf(found);
    for (const hash of found.record.token_hashes) this.byTokenHash.set(hash, participant);
    this.byNameKey.set(nameKey(participant.name), participant);
    this.unindexed.push(participant);
    this.lookAlikeTimer ??= setTimeout(() => this.indexLookAlikesInTurns(), LOOK_ALIKE_DELAY_MS).unref();
    return participant;
  }

  /** Indexes the rest in the background now; resolves once every stored participant's look-alike keys are in (benches, tests). */
  lookAlikesIndexed(): Promise<void> {
    if (this.unindexed.length === 0) return Promise.resolve();
    if (this.lookAlikeTimer) {
      clearTimeout(this.lookAlikeTimer);
      this.indexLookAlikesInTurns();
      if (this.unindexed.length === 0) return Promise.resolve();
    }
    return new Promise((resolve) => {
      const before = this.lookAlikesDone;
      this.lookAlikesDone = () => {
        before?.();
        resolve();
      };
    });
  }

  /** Stops the background indexing (the index is completed on demand). */
  stop(): void {
    this.stopped = true;
    if (this.lookAlikeTimer) clearTimeout(this.lookAlikeTimer);
  }

  private indexLookAlikesInTurns(): void {
    this.lookAlikeTimer = undefined;
    if (this.stopped) return;
    this.indexLookAlikes(LOOK_ALIKES_PER_TURN);
    if (this.unindexed.length > 0) setImmediate(() => this.indexLookAlikesInTurns());
  }

  /** Indexes up to `limit` loaded participants' look-alike keys (all by default), in load order. */
  private indexLookAlikes(limit = Infinity): void {
    const list = this.unindexed;
    const end = Math.min(list.length, this.unindexedFrom + limit);
    for (let i = this.unindexedFrom; i < end; i++) {
      const participant = list[i]!;
      for (const key of confusableKeys(participant.name)) {
        const holder = this.byConfusableKey.get(key);
        if (holder === undefined || !this.indexedByChange.has(holder)) this.byConfusableKey.set(key, participant);
      }
    }
    this.unindexedFrom = end;
    if (end < list.length) return;
    this.unindexed = [];
    this.unindexedFrom = 0;
    const done = this.lookAlikesDone;
    this.lookAlikesDone = undefined;
    done?.();
  }

  /** Indexes a record as written (durable) by a change since start. */
  index(found: ParticipantRecord): void {
    const participant = participantOf(found);
    for (const hash of found.record.token_hashes) this.byTokenHash.set(hash, participant);
    this.byNameKey.set(nameKey(participant.name), participant);
    this.indexedByChange.add(participant);
    for (const key of confusableKeys(participant.name)) this.byConfusableKey.set(key, participant);
  }

  /**
   * SHA-256 of a token, remembered for recently seen valid tokens only: agents send the same
   * token on every call, while unknown tokens must cost no memory (SPEC §10).
   */
  hashOf(token: string): string {
    return this.recentHashes.hash(token, (hash) => this.byTokenHash.has(hash));
  }

  byToken(tokenHash: string): Participant | undefined {
    return this.byTokenHash.get(tokenHash);
  }

  hasToken(tokenHash: string): boolean {
    return this.byTokenHash.has(tokenHash);
  }

  /** The token stops authenticating here. */
  dropToken(tokenHash: string): void {
    this.byTokenHash.delete(tokenHash);
  }

  byName(name: string): Participant | undefined {
    return this.byNameKey.get(nameKey(name));
  }

  /**
   * The name as stored (NFC); `validation_error` for a bad one, `name_taken` for a taken or
   * look-alike one. The name (and its look-alike keys) stays claimed until `release`, so two
   * registrations in flight cannot take look-alike names; a claim is not stored state.
   */
  async claimName(raw: string): Promise<string> {
    const name = checkParticipantName(raw);
    // Stored names' look-alike keys still being indexed in the background (the first seconds
    // after start): wait for it, a few hundred names per event-loop turn, instead of indexing
    // them all here in one block. The check and the claim below stay in one synchronous step.
    if (this.stopped) this.indexLookAlikes();
    else await this.lookAlikesIndexed();
    const key = nameKey(name);
    const confusables = confusableKeys(name);
    const keys = [key, ...confusables.map((k) => `~${k}`)];
    if (this.byNameKey.has(key) || this.claimed.has(key)) throw new AppError('name_taken', `The name "${name}" is taken`);
    const lookAlike = confusables.map((k) => this.byConfusableKey.get(k)).find((p) => p !== undefined);
    if (lookAlike) {
      throw new AppError('name_taken', `The name "${name}" looks like the existing name "${lookAlike.name}"`, { similar_to: lookAlike.name });
    }
    if (keys.slice(1).some((k) => this.claimed.has(k))) throw new AppError('name_taken', `The name "${name}" looks like a name being registered`);
    for (const key of keys) this.claimed.add(key);
    return name;
  }

  release(name: string): void {
    this.claimed.delete(nameKey(name));
    for (const key of confusableKeys(name)) this.claimed.delete(`~${key}`);
  }
}
