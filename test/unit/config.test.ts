// Config: defaults of SPEC §2 and one clear error naming the variable.
import { describe, expect, it } from 'vitest';
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
    ['ALLOWED_ORIGINS', 'not an origin'],
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

  it('reads lists and keeps explicit origins and hosts', () => {
    const c = withBoundPort(loadConfig({ ALLOWED_ORIGINS: 'http://a.lan:3000, https://b.lan', ALLOWED_HOSTS: 'A.lan,b.lan' }), 3000);
    expect(c.allowedOrigins).toEqual(['http://a.lan:3000', 'https://b.lan']);
    expect(c.allowedHosts).toEqual(['a.lan', 'b.lan']);
  });
});
