// The file store's indexes over the durable participant records (file-store.ts): name key → id
// (names are unique, SPEC §3), token hash → id, and the name keys of writes in flight.
import type { Logger } from '../logger.js';

interface TokenIndex {
  idByToken: Map<string, string>;
  tokensById: Map<string, readonly string[]>;
}

export class ParticipantIndex {
  /**
   * Token hash → id, built on first use from the durable records, then kept up to date: only
   * `findParticipantByTokenHash` needs it, which a server on this store never calls (the
   * identity service has its own index), and building it for 110,000 participants at open
   * was ~0.1 s and two more maps of that size.
   */
  private tokenIndex: TokenIndex | undefined;
  private readonly idByKey = new Map<string, string>();
  private readonly keyById = new Map<string, string>();
  /** Name keys of puts in flight, so two concurrent puts cannot both take one name. */
  private readonly reservedKeys = new Map<string, { id: string; count: number }>();

  constructor(
    private readonly nameKeyOf: (name: string) => string,
    private readonly logger: Logger,
    /** Every stored participant's token hashes. */
    private readonly allTokens: () => Iterable<[id: string, tokens: readonly string[]]>,
  ) {}

  idOfToken(tokenHash: string): string | undefined {
    return this.tokens().idByToken.get(tokenHash);
  }

  idOfKey(key: string): string | undefined {
    return this.idByKey.get(key);
  }

  /**
   * Holds a name key for a write of participant `id` (false if another participant has it, stored
   * or in flight), until `release`. Several writes of one participant may hold it at once.
   */
  reserve(key: string, id: string): boolean {
    const holder = this.idByKey.get(key);
    const reserved = this.reservedKeys.get(key);
    if ((holder !== undefined && holder !== id) || (reserved !== undefined && reserved.id !== id)) return false;
    const reservation = reserved ?? { id, count: 0 };
    reservation.count++;
    this.reservedKeys.set(key, reservation);
    return true;
  }

  release(key: string): void {
    const reservation = this.reservedKeys.get(key);
    if (reservation && --reservation.count === 0) this.reservedKeys.delete(key);
  }

  /**
   * Points the token and name indexes at a participant's durable record (its old entries go).
   * `tokens` is the stored record's own array (records are never changed in place).
   */
  set(id: string, nameOrKey: string, tokens: readonly string[], isKey = false): void {
    if (this.tokenIndex) setTokens(this.tokenIndex, id, tokens);
    const key = isKey ? nameOrKey : this.nameKeyOf(nameOrKey);
    const oldKey = this.keyById.get(id);
    if (oldKey !== undefined && oldKey !== key && this.idByKey.get(oldKey) === id) this.idByKey.delete(oldKey);
    const holder = this.idByKey.get(key);
    if (holder !== undefined && holder !== id) {
      this.logger.warn({ participant_id: id, holder, name_key: key }, 'two stored participants share a name; the first keeps it');
      return;
    }
    this.idByKey.set(key, id);
    this.keyById.set(id, key);
  }

  private tokens(): TokenIndex {
    if (!this.tokenIndex) {
      const index: TokenIndex = { idByToken: new Map<string, string>(), tokensById: new Map<string, readonly string[]>() };
      for (const [id, tokens] of this.allTokens()) setTokens(index, id, tokens);
      this.tokenIndex = index;
    }
    return this.tokenIndex;
  }
}

/** Points a token index at a participant's current tokens (its old ones go). */
function setTokens(index: TokenIndex, id: string, tokens: readonly string[]): void {
  for (const token of index.tokensById.get(id) ?? []) if (index.idByToken.get(token) === id) index.idByToken.delete(token);
  for (const token of tokens) index.idByToken.set(token, id);
  index.tokensById.set(id, tokens);
}
