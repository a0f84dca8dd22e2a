// Config: defaults of SPEC §2 and one clear error naming the variable.
import { describe, expect, it } from 'vitest';
import { fileURLToPath } from 'node:url';
import { ConfigError, loadConfig, withBoundPort } from '../../src/config.js';

describe('config', () => {
  it('has the contract defaults', () => {
    const c = withBoundPort(loadConfig({}), 3000);
    expect(c).toMatchObject({
      port: 3000,
      host: '127.0.0.1',
      turnTimeoutMs: 180_000,
      displayTimezone: 'Asia/Shanghai',
      defaultLanguage: 'zh-CN',
      maxMessageChars: 32_000,
      maxUploadBytes: 10_485_760,
      maxFrameBytes: 1_048_576,
      logLevel: 'info',
      allowedOrigins: ['http://127.0.0.1:3000', 'http://localhost:3000'],
      allowedHosts: ['127.0.0.1', 'localhost'],
    });
    expect(c.dataDir.endsWith('/data')).toBe(true);
  });

  it.each([
    ['PORT', 'abc'],
    ['PORT', '70000'],
    ['TURN_TIMEOUT_MS', '999'],
    ['TURN_TIMEOUT_MS', '86400001'],
    ['DISPLAY_TIMEZONE', 'Mars/Olympus'],
    ['MAX_MESSAGE_CHARS', '-1'],
    ['LOG_LEVEL', 'loud'],
    ['LOG_FORMAT', 'yaml'],
    ['ALLOWED_ORIGINS', 'not an origin'],
    ['ALLOWED_HOSTS', 'my-box:3000'],
    ['ALLOWED_HOSTS', 'localhost,http://my-box'],
    ['ALLOWED_HOSTS', 'my box'],
    ['ALLOWED_HOSTS', 'my-box/mcp'],
    ['DEFAULT_LANGUAGE', 'Chinese (simplified)'],
    ['DEFAULT_LANGUAGE', 'zh_CN'],
    ['DEFAULT_LANGUAGE', 'x'],
    ['HOST', 'not a host'],
    ['HOST', '[::1]'],
    ['HOST', 'http://127.0.0.1'],
    ['HOST', '-bad.example'],
    ['MAX_UPLOAD_BYTES', '0'],
    ['MAX_UPLOAD_BYTES', '10MB'],
    ['MAX_UPLOAD_BYTES', '4294967297'],
    ['MAX_FRAME_BYTES', '1023'],
    ['MAX_FRAME_BYTES', '268435457'],
    ['MAX_FRAME_BYTES', '1e6'],
    ['RATE_LIMIT_REGISTER_PER_HOUR', '-1'],
    ['RATE_LIMIT_REGISTER_PER_HOUR', 'lots'],
    ['MAX_CONNECTIONS_PER_ADDRESS', '0'],
    ['MAX_CONNECTIONS_PER_ADDRESS', '256.5'],
    ['HEADERS_TIMEOUT_MS', '10'],
    ['MCP_UNBOUND_IDLE_MS', 'soon'],
    ['EXPORT_FONT', '/nonexistent/font.ttf'],
  ])('refuses %s=%s with an error naming it', (name, value) => {
    let error: unknown;
    try {
      loadConfig({ [name]: value });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).message).toContain(name);
    expect((error as ConfigError).message.split('\n')).toHaveLength(1);
  });

  it.each([
    ['DEFAULT_LANGUAGE', 'en', 'defaultLanguage'],
    ['DEFAULT_LANGUAGE', 'zh-Hant-TW', 'defaultLanguage'],
    ['HOST', '0.0.0.0', 'host'],
    ['HOST', '::1', 'host'],
    ['HOST', 'chat.example.org', 'host'],
    ['HOST', 'localhost', 'host'],
  ] as const)('accepts %s=%s', (name, value, key) => {
    expect(loadConfig({ [name]: value })[key]).toBe(value);
  });

  it('has the abuse-limit defaults of SPEC §10, and 0 turns the registration limit off', () => {
    expect(loadConfig({})).toMatchObject({
      rateLimitRegisterPerHour: 30,
      maxConnectionsPerAddress: 256,
      headersTimeoutMs: 10_000,
      mcpUnboundIdleMs: 60_000,
    });
    expect(loadConfig({ RATE_LIMIT_REGISTER_PER_HOUR: '0' }).rateLimitRegisterPerHour).toBe(0);
    expect(loadConfig({ MAX_CONNECTIONS_PER_ADDRESS: '1000' }).maxConnectionsPerAddress).toBe(1000);
  });

  it('defaults the allowed origins to https when TLS is configured', () => {
    // Any readable files will do here: the certificate is parsed when the server listens.
    const readable = fileURLToPath(import.meta.url);
    const c = withBoundPort(loadConfig({ TLS_CERT: readable, TLS_KEY: readable }), 8443);
    expect(c.allowedOrigins).toEqual(['https://127.0.0.1:8443', 'https://localhost:8443']);
  });

  it('checks at start that TLS_CERT, TLS_KEY and EXPORT_FONT can be read, naming the variable', () => {
    const readable = fileURLToPath(import.meta.url);
    expect(() => loadConfig({ TLS_CERT: '/nonexistent/c.pem', TLS_KEY: readable })).toThrow(/^Invalid TLS_CERT: cannot read the file \/nonexistent\/c\.pem \(ENOENT\)$/);
    expect(() => loadConfig({ TLS_CERT: readable, TLS_KEY: '/nonexistent/k.pem' })).toThrow(/^Invalid TLS_KEY: /);
    expect(() => loadConfig({ EXPORT_FONT: '/nonexistent/font.ttf' })).toThrow(/^Invalid EXPORT_FONT: /);
    expect(loadConfig({ EXPORT_FONT: readable }).exportFont).toBe(readable);
  });

  it('reads lists and keeps explicit origins and hosts', () => {
    const c = withBoundPort(loadConfig({ ALLOWED_ORIGINS: 'http://a.lan:3000, https://b.lan', ALLOWED_HOSTS: 'A.lan,b.lan' }), 3000);
    expect(c.allowedOrigins).toEqual(['http://a.lan:3000', 'https://b.lan']);
    expect(c.allowedHosts).toEqual(['a.lan', 'b.lan']);
    // IP addresses (IPv6 with or without brackets, compared without them) and the wildcard.
    expect(loadConfig({ ALLOWED_HOSTS: '10.0.0.7,[::1],fe80::1,*' }).allowedHosts).toEqual(['10.0.0.7', '::1', 'fe80::1', '*']);
  });
});
