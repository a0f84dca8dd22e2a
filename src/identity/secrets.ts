// Tokens and passwords. Tokens are 256-bit random strings; only their SHA-256 is stored (a
// fast hash is enough for values with that much entropy). Passwords are people's choice, so
// they get a salted slow hash (scrypt).
import { createHash, randomBytes, scrypt, timingSafeEqual } from 'node:crypto';

const TOKEN_PREFIX = 'act_';

export function newToken(): string {
  return TOKEN_PREFIX + randomBytes(32).toString('base64url');
}

export function hashToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

const SCRYPT = { N: 16384, r: 8, p: 1, keylen: 32 } as const;

function scryptAsync(password: string, salt: Buffer, keylen: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scrypt(password, salt, keylen, { N: SCRYPT.N, r: SCRYPT.r, p: SCRYPT.p }, (err, key) =>
      err ? reject(err) : resolve(key),
    );
  });
}

/** `scrypt$N$r$p$salt$hash`, base64url parts: self-describing so parameters can change later. */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await scryptAsync(password, salt, SCRYPT.keylen);
  return ['scrypt', SCRYPT.N, SCRYPT.r, SCRYPT.p, salt.toString('base64url'), key.toString('base64url')].join('$');
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false;
  const [, n, r, p, saltText, keyText] = parts as [string, string, string, string, string, string];
  const expected = Buffer.from(keyText, 'base64url');
  const key = await new Promise<Buffer>((resolve, reject) => {
    scrypt(password, Buffer.from(saltText, 'base64url'), expected.length, { N: Number(n), r: Number(r), p: Number(p) }, (err, k) =>
      err ? reject(err) : resolve(k),
    );
  });
  return key.length === expected.length && timingSafeEqual(key, expected);
}

/**
 * SHA-256 of tokens that agents send on every call, remembered so the hash is not recomputed
 * each time. Only tokens that turned out to be valid are remembered: an unknown token is
 * hashed, looked up and forgotten, so a flood of bogus (or 16 KB) tokens costs no memory
 * (SPEC §10). Safe across revocation: callers still look the hash up in their own index.
 */
export class TokenHashCache {
  private readonly recent = new Map<string, string>();

  constructor(private readonly max = 10_000) {}

  hash(token: string, isKnown: (tokenHash: string) => boolean): string {
    const cached = this.recent.get(token);
    if (cached !== undefined) return cached;
    const tokenHash = hashToken(token);
    if (isKnown(tokenHash)) {
      // Wholesale reset keeps this O(1); the next calls of live agents refill it.
      if (this.recent.size >= this.max) this.recent.clear();
      this.recent.set(token, tokenHash);
    }
    return tokenHash;
  }

  get size(): number {
    return this.recent.size;
  }
}
