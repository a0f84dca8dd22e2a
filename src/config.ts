// The only reader of process.env: environment → one validated, typed Config (SPEC §2).
import { accessSync, constants } from 'node:fs';
import { isIP } from 'node:net';
import path from 'node:path';

/** A BCP 47-style language tag such as zh-CN or en (the tools' `language` argument uses it too). */
export const LANGUAGE_TAG = /^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*$/;

/** A DNS host name (RFC 1123 labels). */
const HOST_NAME = /^(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;

export interface Config {
  port: number;
  host: string;
  dataDir: string;
  turnTimeoutMs: number;
  displayTimezone: string;
  defaultLanguage: string;
  maxMessageChars: number;
  maxUploadBytes: number;
  maxFrameBytes: number;
  /** Empty means "the defaults for the bound port" (resolved once the port is known). */
  allowedOrigins: string[];
  allowedHosts: string[];
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** LOG_FORMAT: `json` or `human` forces that format; null = readable at a terminal, JSON lines otherwise. */
  logFormat: LogFormatSetting;
  /** Path to a TTF/OTF font for PDF export; null = the bundled Noto Sans SC. */
  exportFont: string | null;
  /** Secret for signed download links; random per process when not set. */
  linkSecret: string | null;
  tlsCert: string | null;
  tlsKey: string | null;
  /** Calls per 10 s per participant (0 = off). */
  rateLimitPerToken: number;
  /** Calls per 10 s per client address (0 = off). */
  rateLimitPerAddress: number;
  /** Open WebSockets per participant. */
  maxSocketsPerToken: number;
  /** Registrations (successful or refused) per hour per client address (0 = off). */
  rateLimitRegisterPerHour: number;
  /** Password logins per minute per client address (0 = off). */
  rateLimitLoginPerMinute: number;
  /** MCP `initialize` (new sessions) per minute per client address (0 = off). */
  rateLimitMcpInitPerMinute: number;
  /** Open TCP connections per client address; the next one is refused. */
  maxConnectionsPerAddress: number;
  /** A request's headers must arrive within this many ms of the connection or the previous request. */
  headersTimeoutMs: number;
  /** MCP sessions not bound to a participant: at most this many at once. */
  mcpMaxUnboundSessions: number;
  /** An unbound MCP session idle this long is closed. */
  mcpUnboundIdleMs: number;
  /** The file store (DATA_DIR) or PostgreSQL (SPEC §11). */
  store: StoreConfig;
  /** Messages the file store keeps in memory over all rooms (CACHE_MESSAGES). */
  cacheMessages: number;
  /** Bytes of per-room message indexes the file store keeps loaded (INDEX_CACHE_BYTES). */
  indexCacheBytes: number;
}

/**
 * Which store the server runs on (SPEC §11):
 *   STORE               file (default) | postgres
 *   DATABASE_URL        postgres://user:password@host:5432/database — required with STORE=postgres
 *   DATABASE_POOL_SIZE  connections per node (default 10, 1–200)
 * Errors name the variable; the URL itself is never echoed (it may hold a password).
 */
export type StoreConfig = { kind: 'file' } | { kind: 'postgres'; databaseUrl: string; poolSize: number };

export function parseStoreConfig(env: Env): StoreConfig {
  const kind = (env.STORE ?? '').trim().toLowerCase() || 'file';
  if (kind === 'file') return { kind: 'file' };
  if (kind !== 'postgres') throw new ConfigError('STORE', `expected "file" or "postgres", got "${env.STORE}"`);

  const databaseUrl = env.DATABASE_URL?.trim() ?? '';
  if (!databaseUrl) throw new ConfigError('DATABASE_URL', 'STORE=postgres needs DATABASE_URL (postgres://user:password@host:5432/database)');
  let url: URL;
  try {
    url = new URL(databaseUrl);
  } catch {
    throw new ConfigError('DATABASE_URL', 'not a URL; expected postgres://user:password@host:5432/database');
  }
  if (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:') {
    throw new ConfigError('DATABASE_URL', `expected a postgres:// or postgresql:// URL, got a ${url.protocol}// one`);
  }
  if (!url.hostname && !url.searchParams.get('host')) throw new ConfigError('DATABASE_URL', 'names no host');

  const rawPool = env.DATABASE_POOL_SIZE?.trim() ?? '';
  let poolSize = 10;
  if (rawPool !== '') {
    if (!/^\d+$/.test(rawPool)) throw new ConfigError('DATABASE_POOL_SIZE', `expected an integer, got "${rawPool}"`);
    poolSize = Number(rawPool);
    if (poolSize < 1 || poolSize > 200) throw new ConfigError('DATABASE_POOL_SIZE', `must be between 1 and 200, got ${poolSize}`);
  }
  return { kind: 'postgres', databaseUrl, poolSize };
}

export class ConfigError extends Error {
  constructor(readonly variable: string, reason: string) {
    super(`Invalid ${variable}: ${reason}`);
    this.name = 'ConfigError';
  }
}

type Env = Record<string, string | undefined>;

function intVar(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw.trim())) throw new ConfigError(name, `expected an integer, got "${raw}"`);
  const value = Number(raw.trim());
  if (value < min || value > max) throw new ConfigError(name, `must be between ${min} and ${max}, got ${value}`);
  return value;
}

function stringVar(env: Env, name: string, fallback: string): string {
  const raw = env[name];
  return raw === undefined || raw.trim() === '' ? fallback : raw.trim();
}

function listVar(env: Env, name: string): string[] {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return [];
  return raw.split(',').map((s) => s.trim()).filter((s) => s.length > 0);
}

function timezoneVar(env: Env, name: string, fallback: string): string {
  const tz = stringVar(env, name, fallback);
  if (!isValidTimezone(tz)) throw new ConfigError(name, `unknown time zone "${tz}"`);
  return tz;
}

export function isValidTimezone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

function languageVar(env: Env, name: string, fallback: string): string {
  const tag = stringVar(env, name, fallback);
  if (!LANGUAGE_TAG.test(tag)) throw new ConfigError(name, `"${tag}" is not a language tag like zh-CN or en`);
  return tag;
}

/** The address to listen on: an IPv4/IPv6 address (no brackets) or a host name. */
function hostVar(env: Env, name: string, fallback: string): string {
  const host = stringVar(env, name, fallback);
  if (isIP(host) === 0 && !HOST_NAME.test(host)) {
    throw new ConfigError(name, `"${host}" is not an IP address or host name (IPv6 without brackets, e.g. ::1)`);
  }
  return host;
}

/**
 * Host names the page and /mcp accept (compared with the request's Host without its port):
 * `*`, host names and IP addresses (an IPv6 one with or without brackets). A port, a scheme or a
 * path would never match a Host header, so they are refused at start rather than ignored.
 */
function hostListVar(env: Env, name: string): string[] {
  return listVar(env, name).map((entry) => {
    const host = entry.replace(/^\[(.*)\]$/, '$1').toLowerCase();
    if (host === '*' || isIP(host) !== 0 || HOST_NAME.test(host)) return host;
    throw new ConfigError(name, `"${entry}" is not a host name or IP address (no scheme, port or path: the port is never compared)`);
  });
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

const LOG_FORMATS = ['json', 'human'] as const;
export type LogFormatSetting = (typeof LOG_FORMATS)[number] | null;

/** LOG_FORMAT: unset or empty (null: chosen by whether stdout is a terminal), `json` or `human`. */
export function logFormatVar(env: Env): LogFormatSetting {
  const raw = env.LOG_FORMAT?.trim().toLowerCase() ?? '';
  if (raw === '') return null;
  if ((LOG_FORMATS as readonly string[]).includes(raw)) return raw as LogFormatSetting;
  throw new ConfigError('LOG_FORMAT', `expected json or human (or unset: readable lines at a terminal, JSON lines otherwise), got "${env.LOG_FORMAT}"`);
}

export function loadConfig(env: Env = process.env): Config {
  const logLevel = stringVar(env, 'LOG_LEVEL', 'info');
  if (!(LOG_LEVELS as readonly string[]).includes(logLevel)) {
    throw new ConfigError('LOG_LEVEL', `expected one of ${LOG_LEVELS.join(', ')}, got "${logLevel}"`);
  }
  const origins = listVar(env, 'ALLOWED_ORIGINS');
  for (const origin of origins) {
    if (origin !== '*' && !/^https?:\/\/[^/\s]+$/.test(origin)) {
      throw new ConfigError('ALLOWED_ORIGINS', `"${origin}" is not an origin like http://host:port`);
    }
  }
  const hosts = hostListVar(env, 'ALLOWED_HOSTS');
  if (!env.TLS_CERT?.trim() !== !env.TLS_KEY?.trim()) {
    throw new ConfigError(env.TLS_CERT?.trim() ? 'TLS_KEY' : 'TLS_CERT', 'TLS_CERT and TLS_KEY must be set together');
  }
  const tlsCert = readableFileVar(env, 'TLS_CERT');
  const tlsKey = readableFileVar(env, 'TLS_KEY');
  return {
    store: parseStoreConfig(env),
    cacheMessages: intVar(env, 'CACHE_MESSAGES', 50_000, 0, 100_000_000),
    indexCacheBytes: intVar(env, 'INDEX_CACHE_BYTES', 134_217_728, 0, 1_099_511_627_776),
    port: intVar(env, 'PORT', 3000, 0, 65535),
    host: hostVar(env, 'HOST', '127.0.0.1'),
    dataDir: path.resolve(stringVar(env, 'DATA_DIR', './data')),
    turnTimeoutMs: intVar(env, 'TURN_TIMEOUT_MS', 180_000, 1000, 86_400_000),
    displayTimezone: timezoneVar(env, 'DISPLAY_TIMEZONE', 'Asia/Shanghai'),
    defaultLanguage: languageVar(env, 'DEFAULT_LANGUAGE', 'zh-CN'),
    maxMessageChars: intVar(env, 'MAX_MESSAGE_CHARS', 32_000, 1, 10_000_000),
    maxUploadBytes: intVar(env, 'MAX_UPLOAD_BYTES', 10_485_760, 1, 4_294_967_296),
    maxFrameBytes: intVar(env, 'MAX_FRAME_BYTES', 1_048_576, 1024, 268_435_456),
    allowedOrigins: origins,
    allowedHosts: hosts,
    logLevel: logLevel as Config['logLevel'],
    logFormat: logFormatVar(env),
    exportFont: readableFileVar(env, 'EXPORT_FONT'),
    linkSecret: env.LINK_SECRET?.trim() || null,
    tlsCert,
    tlsKey,
    rateLimitPerToken: intVar(env, 'RATE_LIMIT_PER_TOKEN', 3000, 0, 10_000_000),
    rateLimitPerAddress: intVar(env, 'RATE_LIMIT_PER_ADDRESS', 20_000, 0, 10_000_000),
    maxSocketsPerToken: intVar(env, 'MAX_SOCKETS_PER_TOKEN', 20, 1, 100_000),
    rateLimitRegisterPerHour: intVar(env, 'RATE_LIMIT_REGISTER_PER_HOUR', 30, 0, 10_000_000),
    rateLimitLoginPerMinute: intVar(env, 'RATE_LIMIT_LOGIN_PER_MINUTE', 60, 0, 10_000_000),
    rateLimitMcpInitPerMinute: intVar(env, 'RATE_LIMIT_MCP_INIT_PER_MINUTE', 60, 0, 10_000_000),
    maxConnectionsPerAddress: intVar(env, 'MAX_CONNECTIONS_PER_ADDRESS', 256, 1, 1_000_000),
    headersTimeoutMs: intVar(env, 'HEADERS_TIMEOUT_MS', 10_000, 100, 600_000),
    mcpMaxUnboundSessions: intVar(env, 'MCP_MAX_UNBOUND_SESSIONS', 100, 1, 1_000_000),
    mcpUnboundIdleMs: intVar(env, 'MCP_UNBOUND_IDLE_MS', 60_000, 100, 86_400_000),
  };
}

/**
 * Config with the defaults that depend on the port actually bound (PORT=0). The default origins
 * use the scheme the server speaks: with TLS_CERT/TLS_KEY the page is served over https, so its
 * origin is https://… (an http:// default would refuse the server's own page on /ws and /mcp).
 */
export function withBoundPort(config: Config, port: number): Config {
  const scheme = config.tlsCert && config.tlsKey ? 'https' : 'http';
  return {
    ...config,
    port,
    allowedOrigins: config.allowedOrigins.length
      ? config.allowedOrigins
      : [`${scheme}://127.0.0.1:${port}`, `${scheme}://localhost:${port}`],
    allowedHosts: config.allowedHosts.length ? config.allowedHosts : ['127.0.0.1', 'localhost'],
  };
}

/** A config for tests and embedding: defaults merged under the caller's overrides. */
export function testConfig(overrides: Partial<Config> = {}): Config {
  return { ...loadConfig({}), port: 0, logLevel: 'silent', ...overrides };
}

/** A file the server reads later (a certificate, a font): checked now, so start-up names the variable. */
function readableFileVar(env: Env, name: string): string | null {
  const file = env[name]?.trim() || null;
  if (file === null) return null;
  try {
    accessSync(file, constants.R_OK);
  } catch (err) {
    throw new ConfigError(name, `cannot read the file ${file} (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  return file;
}
