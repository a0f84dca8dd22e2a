// Agents and people: registration, tokens, login. Holds the token and name indexes.
import { v4 as uuidv4 } from 'uuid';
import { AppError } from '../errors.js';
import { failureKey, FailureDelay } from '../limits/rate-limits.js';
import { NameTakenError, ParticipantChangedError, type ParticipantRecord, type Store } from '../storage/store.js';
import type { Agent, AgentRecord, Caller, Participant, User, UserRecord } from '../types.js';
import { hashPassword, hashToken, newToken, TokenHashCache, verifyPassword } from './secrets.js';
import { checkParticipantName, confusableKeys, nameKey } from './names.js';

export interface RegisterAgentInput {
  name: string;
  introduce?: string;
  capabilities?: string[];
  skip_list?: string[];
  language_support?: string[];
  preferred_language?: string;
  timezone?: string;
}

export interface RegisterUserInput {
  name: string;
  password?: string;
  language?: string;
  timezone?: string;
}

export interface ParticipantDefaults {
  language: string;
  timezone: string;
}

/** Tokens whose hash is remembered (see hashOf). */
const RECENT_TOKENS = 10_000;

/** With a shared store, a known token is checked there again after this long. */
const TOKEN_RECHECK_MS = 5000;

/** Live tokens kept per participant; logging in on an 11th browser retires the oldest. */
const MAX_TOKENS = 10;
/** Attempts of one read-modify-write that another node keeps changing under it. */
const MAX_REDOS = 5;

/** A record as read, kept apart from the copy about to be changed (fields are replaced, never mutated). */
const asRead = (found: ParticipantRecord): ParticipantRecord => ({ kind: found.kind, record: { ...found.record } }) as ParticipantRecord;

/**
 * Stored participants' look-alike keys are indexed in the background, this long after start-up
 * and this many per event-loop turn (see `load`); a registration finishes the rest first.
 */
const LOOK_ALIKE_DELAY_MS = 1000;
const LOOK_ALIKES_PER_TURN = 500;


type RecordOfKind = { agent: AgentRecord; user: UserRecord };

/** The fields every new participant record starts with. */
type NewRecordFields = Pick<AgentRecord & UserRecord, 'name' | 'rooms' | 'last_active' | 'created_at' | 'token_hashes'>;

export function toPublicAgent(record: AgentRecord): Agent {
  const { token_hashes: _tokenHashes, ...agent } = record;
  return agent;
}

export function toPublicUser(record: UserRecord): User {
  const { token_hashes: _tokenHashes, password_hash, ...user } = record;
  return { ...user, has_password: password_hash !== null };
}

/**
 * Registration, tokens and login. A change is computed, made durable in the store, and only then
 * visible: the token and name indexes are updated after the write, so a failed write leaves the
 * old token valid and no record behind (SPEC §5). The indexes make authentication synchronous
 * (every call of every transport pays it); the store still checks names atomically.
 */
export class Participants {
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
  private readonly loginFailures: FailureDelay;
  private readonly recentHashes = new TokenHashCache(RECENT_TOKENS);
  private readonly tokenRevokedListeners = new Set<(tokenHash: string) => void>();

  /** Shared store (PostgreSQL, several nodes): when each token hash was last checked there. */
  private readonly checkedAt = new Map<string, number>();
  /** The last read-modify-write queued per participant id (see oneAtATime). */
  private readonly updating = new Map<string, Promise<void>>();

  constructor(
    private readonly store: Store,
    private readonly defaults: ParticipantDefaults,
    loginFailures: FailureDelay = new FailureDelay(),
    /** Other processes write the same store (SPEC §11): `prime` checks tokens there. */
    private readonly shared = false,
    private readonly now: () => number = Date.now,
  ) {
    this.loginFailures = loginFailures;
  }

  /**
   * With a shared store, makes `authenticate` right for a token another node issued or revoked:
   * an unknown token, or one last checked more than TOKEN_RECHECK_MS ago, is looked up in the
   * store first (so a rotation elsewhere takes effect here within that time). No-op otherwise.
   */
  get isShared(): boolean {
    return this.shared;
  }

  async prime(token: string | undefined | null): Promise<void> {
    if (!this.shared || !token) return;
    await this.recheck(hashToken(token));
  }

  /**
   * `authenticate` for a token that may come from another node (`prime` first). Every path that
   * takes a token outside the registry's own calls (MCP headers, `login {token}`, file
   * downloads and uploads) goes through here, so a token works on every node (SPEC §11).
   */
  async authenticateAnywhere(token: string | undefined | null): Promise<Caller | undefined> {
    await this.prime(token);
    return this.authenticate(token);
  }

  /**
   * With a shared store, whether a token hash an open session authenticated with still works,
   * checked there at most every TOKEN_RECHECK_MS (a WebSocket's calls: a revocation whose
   * notification was lost still closes the socket at its next call). Always true otherwise.
   */
  async stillValid(tokenHash: string): Promise<boolean> {
    if (this.shared) await this.recheck(tokenHash);
    return this.byTokenHash.has(tokenHash);
  }

  /**
   * Tokens revoked by another node (its announcement through the store): they stop working here
   * at once, and their sockets are closed, as on the node that revoked them.
   */
  revokedElsewhere(tokenHashes: readonly string[]): void {
    this.retire(tokenHashes.filter((hash) => this.byTokenHash.has(hash)));
  }

  /**
   * Announcements may have been missed (the node's listening connection dropped): every known
   * token is checked in the store again at its next use.
   */
  recheckAll(): void {
    this.checkedAt.clear();
  }

  private async recheck(tokenHash: string): Promise<void> {
    const known = this.byTokenHash.get(tokenHash);
    if (known && this.now() - (this.checkedAt.get(tokenHash) ?? 0) < TOKEN_RECHECK_MS) return;
    const found = await this.store.findParticipantByTokenHash(tokenHash);
    if (found) {
      this.index(found);
      for (const hash of found.record.token_hashes) this.checkedAt.set(hash, this.now());
    } else if (known) {
      this.retire([tokenHash]);
    }
  }

  /**
   * With a shared store, re-checks many token hashes in one read (the open sockets' tokens, every
   * heartbeat): those no participant holds any more stop working here, their sockets closed.
   */
  async recheckMany(tokenHashes: readonly string[]): Promise<void> {
    if (!this.shared || !this.store.missingTokenHashes || tokenHashes.length === 0) return;
    this.retire((await this.store.missingTokenHashes(tokenHashes)).filter((hash) => this.byTokenHash.has(hash)));
  }

  /** The tokens stop working here: out of the index, and their listeners (sockets) told. */
  private retire(tokenHashes: readonly string[]): void {
    for (const hash of tokenHashes) this.checkedAt.delete(hash);
    for (const hash of tokenHashes) this.byTokenHash.delete(hash);
    for (const hash of tokenHashes) for (const listener of this.tokenRevokedListeners) listener(hash);
  }

  /** Builds the indexes from the stored participants (start-up: `Store.listParticipants`). */
  load(stored: Iterable<Readonly<ParticipantRecord>>): void {
    for (const found of stored) this.loadOne(found);
  }

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

  authenticate(token: string | undefined | null): Caller | undefined {
    if (!token) return undefined;
    const tokenHash = this.hashOf(token);
    const participant = this.byTokenHash.get(tokenHash);
    return participant ? { ...participant, tokenHash } : undefined;
  }

  /**
   * SHA-256 of a token, remembered for recently seen valid tokens only: agents send the same
   * token on every call, while unknown tokens must cost no memory (SPEC §10).
   */
  private hashOf(token: string): string {
    return this.recentHashes.hash(token, (hash) => this.byTokenHash.has(hash));
  }

  byName(name: string): Participant | undefined {
    return this.byNameKey.get(nameKey(name));
  }

  async get(who: Pick<Participant, 'id'>): Promise<ParticipantRecord | undefined> {
    return this.store.getParticipant(who.id);
  }

  async registerAgent(input: RegisterAgentInput, now: Date): Promise<{ agent_id: string; token: string; agent: Agent }> {
    const { record, token } = await this.register('agent', input.name, now, async (common) => ({
      ...common,
      agent_id: uuidv4(),
      introduce: input.introduce ?? '',
      status: 'offline',
      capabilities: input.capabilities ?? [],
      skip_list: input.skip_list ?? [],
      language_support: input.language_support ?? [this.defaults.language],
      preferred_language: input.preferred_language ?? this.defaults.language,
      timezone: input.timezone ?? this.defaults.timezone,
    }));
    return { agent_id: record.agent_id, token, agent: toPublicAgent(record) };
  }

  async registerUser(input: RegisterUserInput, now: Date): Promise<{ user_id: string; token: string; user: User }> {
    const { record, token } = await this.register('user', input.name, now, async (common) => ({
      ...common,
      user_id: uuidv4(),
      language: input.language ?? this.defaults.language,
      timezone: input.timezone ?? this.defaults.timezone,
      password_hash: input.password ? await hashPassword(input.password) : null,
    }));
    return { user_id: record.user_id, token, user: toPublicUser(record) };
  }

  /**
   * A new participant with a new token: the name stays claimed while the record is built (a
   * password hash is slow) and written, so a concurrent registration cannot take it.
   */
  private async register<K extends keyof RecordOfKind>(
    kind: K,
    rawName: string,
    now: Date,
    build: (common: NewRecordFields) => Promise<RecordOfKind[K]>,
  ): Promise<{ record: RecordOfKind[K]; token: string }> {
    const name = await this.claimName(rawName);
    const token = newToken();
    try {
      const at = now.toISOString();
      const record = await build({ name, rooms: [], last_active: at, created_at: at, token_hashes: [hashToken(token)] });
      await this.put({ kind, record } as ParticipantRecord);
      return { record, token };
    } finally {
      this.release(name);
    }
  }

  /**
   * Login with a token (checks it, returns the same token) or with name + password (new token).
   * Password failures are slowed per (name, client address), never per name alone (SPEC §10).
   */
  async login(
    input: { token?: string; name?: string; password?: string },
    address: string | null = null,
  ): Promise<{ participant: Caller; token: string }> {
    if (input.token !== undefined) {
      const participant = await this.authenticateAnywhere(input.token);
      if (!participant) throw new AppError('unauthorized', 'Unknown token');
      return { participant, token: input.token };
    }
    if (input.name === undefined || input.password === undefined) {
      throw new AppError('validation_error', 'Give either token, or name and password');
    }
    const key = failureKey(nameKey(input.name), address);
    await this.loginFailures.beforeAttempt(key);
    // With a shared store the person may have registered on another node: the store knows.
    const participant = this.byNameKey.get(nameKey(input.name));
    const found = participant
      ? participant.kind === 'user' ? await this.store.getParticipant(participant.id) : undefined
      : this.shared ? await this.store.findParticipantByNameKey(nameKey(input.name)) : undefined;
    const user = found?.kind === 'user' ? found.record : undefined;
    const ok = user?.password_hash ? await verifyPassword(input.password, user.password_hash) : false;
    if (!user || !ok) {
      this.loginFailures.failed(key);
      throw new AppError('wrong_password', 'Name or password is wrong');
    }
    this.loginFailures.succeeded(key);
    const token = await this.issueToken(user.user_id, null);
    return { participant: { ...participantOf({ kind: 'user', record: user }), tokenHash: hashToken(token) }, token };
  }

  /** Replaces the caller's token; the old one stops working once the new one is durable. */
  async rotateToken(caller: Caller): Promise<string> {
    return this.issueToken(caller.id, caller.tokenHash);
  }

  /** Stores the participant's last_active (presence); failures are the caller's to log. */
  recordLastActive(id: string, lastActive: string): Promise<void> {
    return this.oneAtATime(id, async () => {
      const found = await this.store.getParticipant(id);
      if (!found || found.record.last_active >= lastActive) return;
      const expected = asRead(found);
      found.record.last_active = lastActive;
      await this.put(found, expected);
    });
  }

  /** Listeners learn which token hash stopped working (to close sockets that used it). */
  onTokenRevoked(listener: (tokenHash: string) => void): () => void {
    this.tokenRevokedListeners.add(listener);
    return () => this.tokenRevokedListeners.delete(listener);
  }

  private issueToken(id: string, replacing: string | null): Promise<string> {
    return this.oneAtATime(id, () => this.issueTokenNow(id, replacing));
  }

  private async issueTokenNow(id: string, replacing: string | null): Promise<string> {
    const found = await this.store.getParticipant(id);
    if (!found) throw new AppError('not_found', 'Participant not found');
    const expected = asRead(found);
    const hashes = found.record.token_hashes;
    const token = newToken();
    const tokenHash = hashToken(token);
    const kept = hashes.filter((h) => h !== replacing);
    const retired = [
      ...(replacing !== null && hashes.includes(replacing) ? [replacing] : []),
      ...kept.slice(0, Math.max(0, kept.length + 1 - MAX_TOKENS)),
    ];
    found.record.token_hashes = [...kept.filter((h) => !retired.includes(h)), tokenHash];
    await this.put(found, expected);
    // Only now, with the new token durable, do the retired ones stop working: here, and on the
    // other nodes when they hear of it (a shared store announces it with the write; a node that
    // misses it catches it by its re-checks).
    this.retire(retired);
    return token;
  }

  /**
   * Runs a read-modify-write of one participant's record after the ones already running for
   * that participant. Each reads the record, changes it and puts it back whole; two interleaved
   * (read A, read B, put B, put A) would put back A's older copy: a rotated-away token would
   * come back on disk and in the token index, or a new token vanish.
   */
  private oneAtATime<T>(id: string, run: () => Promise<T>): Promise<T> {
    const result = (this.updating.get(id) ?? Promise.resolve()).then(() => this.redoIfChanged(run));
    const settled = result.then(
      () => undefined,
      () => undefined,
    );
    this.updating.set(id, settled);
    void settled.then(() => {
      if (this.updating.get(id) === settled) this.updating.delete(id);
    });
    return result;
  }

  /**
   * Runs a read-modify-write again when another process wrote the record between its read and
   * its put (a shared store: several nodes, SPEC §11); each attempt reads anew.
   */
  private async redoIfChanged<T>(run: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await run();
      } catch (err) {
        if (!(err instanceof ParticipantChangedError) || attempt >= MAX_REDOS) throw err;
      }
    }
  }

  /**
   * Makes the record durable, then indexes it: nothing is visible before the write succeeded.
   * `expected`: the record as read before it was changed (the store's compare-and-set).
   */
  private async put(found: ParticipantRecord, expected?: ParticipantRecord): Promise<void> {
    try {
      await this.store.putParticipant(found, nameKey(found.record.name), expected);
    } catch (err) {
      if (err instanceof NameTakenError) throw new AppError('name_taken', `The name "${found.record.name}" is taken`);
      throw err;
    }
    this.index(found);
  }

  private index(found: ParticipantRecord): void {
    const participant = participantOf(found);
    for (const hash of found.record.token_hashes) this.byTokenHash.set(hash, participant);
    this.byNameKey.set(nameKey(participant.name), participant);
    this.indexedByChange.add(participant);
    for (const key of confusableKeys(participant.name)) this.byConfusableKey.set(key, participant);
  }

  /**
   * The name as stored (NFC); `validation_error` for a bad one, `name_taken` for a taken or
   * look-alike one. The name (and its look-alike keys) stays claimed until `release`, so two
   * registrations in flight cannot take look-alike names; a claim is not stored state.
   */
  private async claimName(raw: string): Promise<string> {
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

  private release(name: string): void {
    this.claimed.delete(nameKey(name));
    for (const key of confusableKeys(name)) this.claimed.delete(`~${key}`);
  }
}

export function participantOf(found: ParticipantRecord): Participant {
  return found.kind === 'agent'
    ? { kind: 'agent', id: found.record.agent_id, name: found.record.name, role: 'ai_agent' }
    : { kind: 'user', id: found.record.user_id, name: found.record.name, role: 'user' };
}
