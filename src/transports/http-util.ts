// Small HTTP helpers shared by the REST gateway, file routes and MCP.
import type { Response } from 'express';
import type { App } from '../app.js';
import { AppError } from '../errors.js';
import { wireErrorIn } from '../i18n/errors.js';
import { callerLang } from '../i18n/language.js';

export function bearerToken(header: string | undefined): string | null {
  if (!header) return null;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match ? match[1]! : null;
}

/** An error answer, its message in the request's language (Accept-Language, else DEFAULT_LANGUAGE). */
export function sendError(res: Response, err: unknown, app: App): void {
  const wire = wireErrorIn(err, callerLang(res.req.get('accept-language'), null, app.config.defaultLanguage));
  if (wire.code === 'internal_error') app.logger.error({ err, requestId: res.locals.requestId }, 'request failed');
  if (!res.headersSent) res.status(err instanceof AppError ? err.status : 500).json({ ok: false, error: wire });
}

const DEFAULT_ALLOWED_HOSTS = ['127.0.0.1', 'localhost'];

/** ALLOWED_HOSTS, or its default while the config has not been bound to a port yet. */
function allowedHosts(app: App): readonly string[] {
  return app.config.allowedHosts.length ? app.config.allowedHosts : DEFAULT_ALLOWED_HOSTS;
}

/** Host names accepted on the page, REST and /mcp (DNS-rebinding defence). */
export function hostAllowed(app: App, hostHeader: string | undefined): boolean {
  if (!hostHeader) return false;
  const host = hostHeader.replace(/:\d+$/, '').replace(/^\[|\]$/g, '').toLowerCase();
  const allowed = allowedHosts(app);
  return allowed.includes('*') || allowed.includes(host);
}

/** The answer to a request whose Host is not in ALLOWED_HOSTS (REST: SPEC §10). */
export function hostRefused(app: App, hostHeader: string | undefined): AppError {
  return new AppError(
    'forbidden',
    `Host "${hostHeader ?? ''}" is not allowed. Add it to ALLOWED_HOSTS (now: ${allowedHosts(app).join(',')}) to accept it.`,
  );
}

/** JSON bodies: a whole message of MAX_MESSAGE_CHARS in worst-case UTF-8 plus the envelope. */
export function bodyLimit(app: App): number {
  return Math.max(app.config.maxFrameBytes, app.config.maxMessageChars * 4 + 64 * 1024);
}
