// Optional TLS: with TLS_CERT and TLS_KEY the same server speaks HTTPS (and so WSS).
import { execFileSync } from 'node:child_process';
import https from 'node:https';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { startTestServer, tempDataDir } from '../helpers/server.js';

describe('TLS', () => {
  it('serves HTTPS when a certificate and key are configured', async () => {
    const dir = await tempDataDir();
    const cert = path.join(dir, 'cert.pem');
    const key = path.join(dir, 'key.pem');
    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=localhost'], {
      stdio: 'ignore',
    });
    const server = await startTestServer({ tlsCert: cert, tlsKey: key });
    try {
      expect(server.url.startsWith('https://')).toBe(true);
      const body = await new Promise<string>((resolve, reject) => {
        https
          .get(`${server.url}/api/v1/health`, { rejectUnauthorized: false }, (res) => {
            let text = '';
            res.on('data', (c) => (text += c));
            res.on('end', () => resolve(text));
          })
          .on('error', reject);
      });
      expect(JSON.parse(body)).toMatchObject({ ok: true });
    } finally {
      await server.stop();
    }
  });

  it('needs both TLS_CERT and TLS_KEY', () => {
    expect(() => loadConfig({ TLS_CERT: '/x.pem' })).toThrow(ConfigError);
    expect(() => loadConfig({ TLS_CERT: '/x.pem' })).toThrow(/TLS_KEY/);
  });
});
