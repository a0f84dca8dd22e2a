// Agents and people: registration, tokens, login. Holds the token and name indexes.
import { v4 as uuidv4 } from 'uuid';
import { AppError } from '../errors.js';
import { failureKey, FailureDelay } from '../limits/rate-limits.js';
import { findRecord, saveRecord } from './records.js';
import type { Store } from '../storage/store.js';
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

/** Live tokens kept per participant; logging in on an 11th browser retires the oldest. */
const MAX_TOKENS = 10;


export function toPublicAgent(record: AgentRecord): Agent {
  const { token_hashes: _tokenHashes, ...agent } = record;
  return agent;
}

export function toPublicUser(record: UserRecord): User {
  const { token_hashes: _tokenHashes, password_hash, ...user } = record;
  return { ...user, has_password: password_hash !== null };
}

export class Participants {
  private readonly byTokenHash = new Map<string, Participant>();
  private readonly byNameKey = new Map<string, Participant>();
  /** Names by their confusable skeleton (SPEC §3: look-alike names are `name_taken`). */
  private readonly byConfusableKey = new Map<string, Participant>();
  private readonly loginFailures: FailureDelay;
  private readonly recentHashes = new TokenHashCache(RECENT_TOKENS);
  private readonly tokenRevokedListeners = new Set<(tokenHash: string) => void>();

  constructor(
    private readonly store: Store,
    private readonly defaults: ParticipantDefaults,
    loginFailures: FailureDelay = new FailureDelay(),
  ) {
    this.loginFailures = loginFailures;
    for (const agent of store.listAgents()) this.index(agentParticipant(agent), agent.token_hashes);
    for (const user of store.listUsers()) this.index(userParticipant(user), user.token_hashes);
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

  getAgent(id: string): AgentRecord | undefined {
    return this.store.getAgent(id);
  }

  getUser(id: string): UserRecord | undefined {
    return this.store.getUser(id);
  }

  async registerAgent(input: RegisterAgentInput, now: Date): Promise<{ agent_id: string; token: string; agent: Agent }> {
    const name = this.claimName(input.name);
    const token = newToken();
    const record: AgentRecord = {
      agent_id: uuidv4(),
      name,
      introduce: input.introduce ?? '',
      rooms: [],
      status: 'offline',
      last_active: now.toISOString(),
      capabilities: input.capabilities ?? [],
      skip_list: input.skip_list ?? [],
      language_support: input.language_support ?? [this.defaults.language],
      preferred_language: input.preferred_language ?? this.defaults.language,
      timezone: input.timezone ?? this.defaults.timezone,
      created_at: now.toISOString(),
      token_hashes: [hashToken(token)],
    };
    const participant = agentParticipant(record);
    this.index(participant, record.token_hashes);
    try {
      await this.store.putAgent(record);
    } catch (err) {
      this.unindex(participant, record.token_hashes);
      throw err;
    }
    return { agent_id: record.agent_id, token, agent: toPublicAgent(record) };
  }

  async registerUser(input: RegisterUserInput, now: Date): Promise<{ user_id: string; token: string; user: User }> {
    const name = this.claimName(input.name);
    // Reserve the name before the slow hash so a concurrent registration cannot take it.
    const placeholder: Participant = { kind: 'user', id: uuidv4(), name, role: 'user' };
    this.byNameKey.set(nameKey(name), placeholder);
    for (const key of confusableKeys(name)) this.byConfusableKey.set(key, placeholder);
    try {
      const token = newToken();
      const record: UserRecord = {
        user_id: placeholder.id,
        name,
        language: input.language ?? this.defaults.language,
        timezone: input.timezone ?? this.defaults.timezone,
        rooms: [],
        last_active: now.toISOString(),
        created_at: now.toISOString(),
        token_hashes: [hashToken(token)],
        password_hash: input.password ? await hashPassword(input.password) : null,
      };
      this.index(placeholder, record.token_hashes);
      await this.store.putUser(record);
      return { user_id: record.user_id, token, user: toPublicUser(record) };
    } catch (err) {
      this.byNameKey.delete(nameKey(name));
      for (const key of confusableKeys(name)) this.byConfusableKey.delete(key);
      throw err;
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
      const participant = this.authenticate(input.token);
      if (!participant) throw new AppError('unauthorized', 'Unknown token');
      return { participant, token: input.token };
    }
    if (input.name === undefined || input.password === undefined) {
      throw new AppError('validation_error', 'Give either token, or name and password');
    }
    const key = failureKey(nameKey(input.name), address);
    await this.loginFailures.beforeAttempt(key);
    const participant = this.byNameKey.get(nameKey(input.name));
    const user = participant?.kind === 'user' ? this.store.getUser(participant.id) : undefined;
    const ok = user?.password_hash ? await verifyPassword(input.password, user.password_hash) : false;
    if (!user || !ok) {
      this.loginFailures.failed(key);
      throw new AppError('wrong_password', 'Name or password is wrong');
    }
    this.loginFailures.succeeded(key);
    const loggedIn = userParticipant(user);
    const token = await this.issueToken(loggedIn, null);
    return { participant: { ...loggedIn, tokenHash: hashToken(token) }, token };
  }

  /** Replaces the caller's token; the old one stops working at once (its sockets are closed). */
  async rotateToken(caller: Caller): Promise<string> {
    return this.issueToken(caller, caller.tokenHash);
  }

  /** Listeners learn which token hash stopped working (to close sockets that used it). */
  onTokenRevoked(listener: (tokenHash: string) => void): () => void {
    this.tokenRevokedListeners.add(listener);
    return () => this.tokenRevokedListeners.delete(listener);
  }

  private async issueToken(participant: Participant, replacing: string | null): Promise<string> {
    const found = findRecord(this.store, participant);
    if (!found) throw new AppError('not_found', 'Participant not found');
    const record = found.record;
    const token = newToken();
    const tokenHash = hashToken(token);
    const kept = record.token_hashes.filter((h) => h !== replacing);
    const retired = [
      ...(replacing !== null && record.token_hashes.includes(replacing) ? [replacing] : []),
      ...kept.slice(0, Math.max(0, kept.length + 1 - MAX_TOKENS)),
    ];
    record.token_hashes = [...kept.filter((h) => !retired.includes(h)), tokenHash];
    for (const hash of retired) this.byTokenHash.delete(hash);
    this.byTokenHash.set(tokenHash, participant);
    await saveRecord(this.store, found);
    for (const hash of retired) for (const listener of this.tokenRevokedListeners) listener(hash);
    return token;
  }

  /** The name as stored (NFC); `validation_error` for a bad one, `name_taken` for a taken or look-alike one. */
  private claimName(raw: string): string {
    const name = checkParticipantName(raw);
    if (this.byNameKey.has(nameKey(name))) throw new AppError('name_taken', `The name "${name}" is taken`);
    const lookAlike = confusableKeys(name).map((key) => this.byConfusableKey.get(key)).find((p) => p !== undefined);
    if (lookAlike) {
      throw new AppError('name_taken', `The name "${name}" looks like the existing name "${lookAlike.name}"`, { similar_to: lookAlike.name });
    }
    return name;
  }

  private index(participant: Participant, tokenHashes: readonly string[]): void {
    for (const hash of tokenHashes) this.byTokenHash.set(hash, participant);
    this.byNameKey.set(nameKey(participant.name), participant);
    for (const key of confusableKeys(participant.name)) this.byConfusableKey.set(key, participant);
  }

  private unindex(participant: Participant, tokenHashes: readonly string[]): void {
    for (const hash of tokenHashes) this.byTokenHash.delete(hash);
    this.byNameKey.delete(nameKey(participant.name));
    for (const key of confusableKeys(participant.name)) this.byConfusableKey.delete(key);
  }
}

function agentParticipant(agent: AgentRecord): Participant {
  return { kind: 'agent', id: agent.agent_id, name: agent.name, role: 'ai_agent' };
}

function userParticipant(user: UserRecord): Participant {
  return { kind: 'user', id: user.user_id, name: user.name, role: 'user' };
}
