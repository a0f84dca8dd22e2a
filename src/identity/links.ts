// Signed download links: a browser can fetch an upload or an export without sending its token,
// for a limited time. HMAC-SHA256 over the path and the expiry.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export const LINK_TTL_MS = 15 * 60_000;

export class LinkSigner {
  private readonly key: Buffer;

  constructor(secret: string | null, private readonly now: () => number) {
    // Without a configured secret, links stay valid only until the server restarts.
    this.key = secret ? Buffer.from(secret) : randomBytes(32);
  }

  sign(pathname: string, ttlMs = LINK_TTL_MS): string {
    const expires = this.now() + ttlMs;
    return `${pathname}?expires=${expires}&sig=${this.mac(pathname, expires)}`;
  }

  verify(pathname: string, expires: unknown, sig: unknown): boolean {
    if (typeof expires !== 'string' || typeof sig !== 'string' || !/^\d{1,16}$/.test(expires)) return false;
    if (Number(expires) < this.now()) return false;
    const expected = Buffer.from(this.mac(pathname, Number(expires)));
    const given = Buffer.from(sig);
    return expected.length === given.length && timingSafeEqual(expected, given);
  }

  private mac(pathname: string, expires: number): string {
    return createHmac('sha256', this.key).update(`${pathname}\n${expires}`).digest('base64url');
  }
}
