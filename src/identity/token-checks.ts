// Which tokens still work when other processes share the store (PostgreSQL, several nodes,
// SPEC §11): tokens another node issued or revoked are checked in the store, and a token that
// stops working here is retired from the index and its listeners (sockets) told.
import type { Store } from '../storage/store.js';
import type { ParticipantIndex } from './participant-index.js';
import { hashToken } from './secrets.js';

/** With a shared store, a known token is checked there again after this long. */
const TOKEN_RECHECK_MS = 5000;

export class TokenChecks {
  /** Shared store: when each token hash was last checked there. */
  private readonly checkedAt = new Map<string, number>();
  private readonly tokenRevokedListeners = new Set<(tokenHash: string) => void>();

  constructor(
    private readonly store: Store,
    private readonly index: ParticipantIndex,
    private readonly shared: boolean,
    private readonly now: () => number,
  ) {}

  /**
   * With a shared store, makes `authenticate` right for a token another node issued or revoked:
   * an unknown token, or one last checked more than TOKEN_RECHECK_MS ago, is looked up in the
   * store first (so a rotation elsewhere takes effect here within that time). No-op otherwise.
   */
  async prime(token: string | undefined | null): Promise<void> {
    if (!this.shared || !token) return;
    await this.recheck(hashToken(token));
  }

  /**
   * With a shared store, whether a token hash an open session authenticated with still works,
   * checked there at most every TOKEN_RECHECK_MS (a WebSocket's calls: a revocation whose
   * notification was lost still closes the socket at its next call). Always true otherwise.
   */
  async stillValid(tokenHash: string): Promise<boolean> {
    if (this.shared) await this.recheck(tokenHash);
    return this.index.hasToken(tokenHash);
  }

  /**
   * Tokens revoked by another node (its announcement through the store): they stop working here
   * at once, and their sockets are closed, as on the node that revoked them.
   */
  revokedElsewhere(tokenHashes: readonly string[]): void {
    this.retire(tokenHashes.filter((hash) => this.index.hasToken(hash)));
  }

  /**
   * Announcements may have been missed (the node's listening connection dropped): every known
   * token is checked in the store again at its next use.
   */
  recheckAll(): void {
    this.checkedAt.clear();
  }

  private async recheck(tokenHash: string): Promise<void> {
    const known = this.index.byToken(tokenHash);
    if (known && this.now() - (this.checkedAt.get(tokenHash) ?? 0) < TOKEN_RECHECK_MS) return;
    const found = await this.store.findParticipantByTokenHash(tokenHash);
    if (found) {
      this.index.index(found);
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
    this.retire((await this.store.missingTokenHashes(tokenHashes)).filter((hash) => this.index.hasToken(hash)));
  }

  /** The tokens stop working here: out of the index, and their listeners (sockets) told. */
  retire(tokenHashes: readonly string[]): void {
    for (const hash of tokenHashes) this.checkedAt.delete(hash);
    for (const hash of tokenHashes) this.index.dropToken(hash);
    for (const hash of tokenHashes) for (const listener of this.tokenRevokedListeners) listener(hash);
  }

  /** Listeners learn which token hash stopped working (to close sockets that used it). */
  onTokenRevoked(listener: (tokenHash: string) => void): () => void {
    this.tokenRevokedListeners.add(listener);
    return () => this.tokenRevokedListeners.delete(listener);
  }
}
