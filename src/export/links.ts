// Links to uploads: signed (HMAC over the decoded path, as the download route checks it) while
// the URL itself stays percent-encoded, and made absolute for exports that leave the server.
import type { Config } from '../config.js';
import type { LinkSigner } from '../identity/links.js';

/**
 * Attachment links inside an export live as long as a shared document is typically read
 * (7 days), not as long as the export file itself (an hour): the document is downloaded once
 * and passed around. They are signed with LINK_SECRET; without it they die on restart.
 */
export const ATTACHMENT_LINK_TTL_MS = 7 * 24 * 60 * 60_000;

/** `encodedPath?expires=…&sig=…`, signed over the decoded path; throws URIError on a bad escape. */
export function signEncodedPath(links: LinkSigner, encodedPath: string, ttlMs?: number): string {
  const decoded = decodeURIComponentPath(encodedPath);
  return encodedPath + links.sign(decoded, ttlMs).slice(decoded.length);
}

function decodeURIComponentPath(encodedPath: string): string {
  return encodedPath.split('/').map(decodeURIComponent).join('/');
}

const WILDCARD_HOSTS = new Set(['', '0.0.0.0', '::', '[::]']);

/**
 * The server's own origin, from its config once the port is bound: scheme from TLS, HOST and
 * PORT. A server listening on every interface is named by the first ALLOWED_HOSTS entry (the
 * name a LAN deployment is reached by), else localhost. Behind a reverse proxy that changes the
 * origin, links point at the server itself.
 */
export function serverOrigin(config: Pick<Config, 'tlsCert' | 'host' | 'port' | 'allowedHosts'>): string {
  const scheme = config.tlsCert ? 'https' : 'http';
  let host = config.host;
  if (WILDCARD_HOSTS.has(host)) host = config.allowedHosts.find((h) => h !== '*') ?? 'localhost';
  if (host.includes(':') && !host.startsWith('[')) host = `[${host}]`;
  return `${scheme}://${host}:${config.port}`;
}
