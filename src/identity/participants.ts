// Agents and people: registration, login, token issue and rotation, last_active. The indexes
// (participant-index.ts), the shared-store token checks (token-checks.ts) and the record writes
// (participant-writes.ts) are their own modules; this class is what the server calls.
import { v4 as uuidv4 } from 'uuid';
import { AppError } from '../errors.js';
import { failureKey, FailureDelay } from '../limits/rate-limits.js';
import type { ParticipantRecord, Store } from '../storage/store.js';
import type { Agent, AgentRecord, Caller, Participant, User, UserRecord } from '../types.js';
import { nameKey } from './names.js';
import { ParticipantIndex } from './participant-index.js';
import { participantOf, toPublicAgent, toPublicUser } from './participant-records.js';
import { asRead, ParticipantWrites } from './participant-writes.js';
import { hashPassword, hashToken, newToken, verifyPassword } from './secrets.js';
import { TokenChecks } from './token-checks.js';

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

/** Live tokens kept per participant; logging in on an 11th browser retires the oldest. */
const MAX_TOKENS = 10;

type RecordOfKind = { agent: AgentRecord; user: UserRecord };

/** The fields every new participant record starts with. */
type NewRecordFields = Pick<AgentRecord & UserRecord, 'name' | 'rooms' | 'last_active' | 'created_at' | 'token_hashes'>;

/**
 * Registration, tokens and login. A change is computed, made durable in the store, and only then
 * visible: the token and name indexes are updated after the write, so a failed write leaves the
 * old token valid and no record behind (SPEC §5). The indexes make authentication synchronous
 * (every call of every transport pays it); the store still checks names atomically.
 */
export class Participants {
  private readonly index = new ParticipantIndex();
  private readonly tokens: TokenChecks;
  private readonly writes: ParticipantWrites;
  private readonly loginFailures: FailureDelay;

  constructor(
    private readonly store: Store,
    private readonly defaults: ParticipantDefaults,
    loginFailures: FailureDelay = new FailureDelay(),
    /** Other processes write the same store (SPEC §11): `prime` checks tokens there. */
    private readonly shared = false,
    now: () => number = Date.now,
  ) {
    this.loginFailures = loginFailures;
    this.tokens = new TokenChecks(store, this.index, shared, now);
    this.writes = new ParticipantWrites(store, this.index);
  }

  get isShared(): boolean {
    return this.shared;
  }

  /** See TokenChecks.prime: with a shared store, looks a token up there first. */
  prime(token: string | undefined | null): Promise<void> {
    return this.tokens.prime(token);
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

  /** See TokenChecks.stillValid. */
  stillValid(tokenHash: string): Promise<boolean> {
    return this.tokens.stillValid(tokenHash);
  }

  /** See TokenChecks.revokedElsewhere. */
  revokedElsewhere(tokenHashes: readonly string[]): void {
    this.tokens.revokedElsewhere(tokenHashes);
  }

  /** See TokenChecks.recheckAll. */
  recheckAll(): void {
    this.tokens.recheckAll();
  }

  /** See TokenChecks.recheckMany. */
  recheckMany(tokenHashes: readonly string[]): Promise<void> {
    return this.tokens.recheckMany(tokenHashes);
  }

  /** Listeners learn which token hash stopped working (to close sockets that used it). */
  onTokenRevoked(listener: (tokenHash: string) => void): () => void {
    return this.tokens.onTokenRevoked(listener);
  }

  /** Builds the indexes from the stored participants (start-up: `Store.listParticipants`). */
  load(stored: Iterable<Readonly<ParticipantRecord>>): void {
    for (const found of stored) this.loadOne(found);
  }

  /** See ParticipantIndex.loadOne. */
  loadOne(found: Readonly<ParticipantRecord>): Participant {
    return this.index.loadOne(found);
  }

  /** See ParticipantIndex.lookAlikesIndexed. */
  lookAlikesIndexed(): Promise<void> {
    return this.index.lookAlikesIndexed();
  }

  /** Stops the background indexing (the index is completed on demand). */
  stop(): void {
    this.index.stop();
  }

  authenticate(token: string | undefined | null): Caller | undefined {
    if (!token) return undefined;
    const tokenHash = this.index.hashOf(token);
    const participant = this.index.byToken(tokenHash);
    return participant ? { ...participant, tokenHash } : undefined;
  }

  byName(name: string): Participant | undefined {
    return this.index.byName(name);
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
    const name = await this.index.claimName(rawName);
    const token = newToken();
    try {
      const at = now.toISOString();
      const record = await build({ name, rooms: [], last_active: at, created_at: at, token_hashes: [hashToken(token)] });
      await this.writes.put({ kind, record } as ParticipantRecord);
      return { record, token };
    } finally {
      this.index.release(name);
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
    const participant = this.index.byName(input.name);
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
    return this.writes.oneAtATime(id, async () => {
      const found = await this.store.getParticipant(id);
      if (!found || found.record.last_active >= lastActive) return;
      const expected = asRead(found);
      found.record.last_active = lastActive;
      await this.writes.put(found, expected);
    });
  }

  private issueToken(id: string, replacing: string | null): Promise<string> {
    return this.writes.oneAtATime(id, () => this.issueTokenNow(id, replacing));
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
    await this.writes.put(found, expected);
    // Only now, with the new token durable, do the retired ones stop working: here, and on the
    // other nodes when they hear of it (a shared store announces it with the write; a node that
    // misses it catches it by its re-checks).
    this.tokens.retire(retired);
    return token;
  }
}
