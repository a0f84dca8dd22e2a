// The hot path of the REST gateway: POST /api/v1/tools/{name} served straight on node:http.
// Agents call tools many times a second; express's router, body-parser and response helpers
// cost more than the tool itself, so this route skips them (everything else stays on express).
// Behaviour matches the express API: same envelope, codes, limits, headers and request ids.
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { App } from '../app.js';
import { AppError } from '../errors.js';
import { wireErrorIn } from '../i18n/errors.js';
import { callerLang } from '../i18n/language.js';
import { bearerToken, hostAllowed, hostRefused } from './http-util.js';
import { parseJsonBody } from './json-body.js';

export const TOOLS_PREFIX = '/api/v1/tools/';

/** Headers of every API answer (the page's CSP lives on the express side). */
const API_HEADERS = {
  'content-type': 'application/json; charset=utf-8',
  'x-content-type-options': 'nosniff',
  'cache-control': 'no-store',
  'content-security-policy': "default-src 'none'; frame-ancestors 'none'",
  'referrer-policy': 'no-referrer',
} as const;

export function isToolCall(req: IncomingMessage): boolean {
  return req.method === 'POST' && req.url !== undefined && req.url.startsWith(TOOLS_PREFIX);
}

function answer(res: ServerResponse, status: number, body: unknown, requestId: string): void {
  if (res.headersSent || res.destroyed) return;
  const text = JSON.stringify(body);
  res.writeHead(status, { ...API_HEADERS, 'content-length': Buffer.byteLength(text), 'x-request-id': requestId });
  res.end(text);
}

function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers['content-length'] ?? 0);
    if (declared > limit) return reject(new AppError('payload_too_large', 'Request body is too large'));
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        req.removeAllListeners('data');
        req.resume();
        reject(new AppError('payload_too_large', 'Request body is too large'));
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/**
 * The call's arguments: the body's JSON (a large body parsed in slices, SPEC §10), `{}` for an
 * empty one. Apart from the caller so that the raw body is garbage as soon as it is parsed (an
 * import's body is megabytes, and the import runs on for seconds).
 */
async function readArgs(req: IncomingMessage, bodyLimit: number): Promise<unknown> {
  const raw = await readBody(req, bodyLimit);
  if (raw.length === 0) return {};
  try {
    return await parseJsonBody(raw);
  } catch {
    throw new AppError('validation_error', 'Malformed JSON body');
  }
}

/** Never rejects: every failure becomes an error answer (the caller does not await it). */
export async function serveToolCall(app: App, req: IncomingMessage, res: ServerResponse, bodyLimit: number): Promise<void> {
  const incoming = req.headers['x-request-id'];
  const requestId = typeof incoming === 'string' && /^[\w.-]{1,64}$/.test(incoming) ? incoming : randomUUID();
  const name = req.url!.slice(TOOLS_PREFIX.length).split('?')[0]!;
  // A long-poll (wait_for_turn) stops when the client goes away.
  let abort: AbortController | undefined;
  if (app.registry.waits(name)) {
    const controller = (abort = new AbortController());
    res.once('close', () => {
      if (!res.writableFinished) controller.abort();
    });
  }
  try {
    // DNS-rebinding defence, the same rule as the page and /mcp (SPEC §10).
    if (!hostAllowed(app, req.headers.host)) throw hostRefused(app, req.headers.host);
    const args = await readArgs(req, bodyLimit);
    // The name is matched undecoded: tool names are plain a-z and _, so a name that needs
    // percent-decoding is no tool at all (and decoding a malformed escape such as %E0 would
    // throw). The registry answers unknown_tool after counting the call against the address.
    const data = await app.registry.call(name, args, {
      token: bearerToken(req.headers.authorization),
      acceptLanguage: req.headers['accept-language'] ?? null,
      transport: 'rest',
      address: req.socket.remoteAddress ?? null,
      requestId,
      ...(abort ? { signal: abort.signal } : {}),
    });
    answer(res, 200, { ok: true, data }, requestId);
  } catch (err) {
    // The registry wrote its errors in the caller's language; this covers the body's own.
    const wire = wireErrorIn(err, callerLang(req.headers['accept-language'], null, app.config.defaultLanguage));
    if (wire.code === 'internal_error') app.logger.error({ err, requestId }, 'request failed');
    answer(res, err instanceof AppError ? err.status : 500, { ok: false, error: wire }, requestId);
  }
}
