// Optional TLS: with TLS_CERT and TLS_KEY the same server speaks HTTPS (and so WSS).
import { execFileSync } from 'node:child_process';
import https from 'node:https';
import path from 'node:path';
import type { IncomingHttpHeaders } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { ConfigError, loadConfig } from '../../src/config.js';
import { startTestServer, tempDataDir, type TestServer } from '../helpers/server.js';
import { wsUrl } from '../helpers/ws.js';

/** GET over HTTPS accepting the test's self-signed certificate. */
function httpsGet(url: string): Promise<{ headers: IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    https
      .get(url, { rejectUnauthorized: false }, (res) => {
        let body = '';
        res.on('data', (c) => (body += c));
        res.on('end', () => resolve({ headers: res.headers, body }));
      })
      .on('error', reject);
  });
}

let server: TestServer;
beforeAll(async () => {
  const dir = await tempDataDir();
  const cert = path.join(dir, 'cert.pem');
  const key = path.join(dir, 'key.pem');
  execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=localhost'], {
    stdio: 'ignore',
  });
  server = await startTestServer({ tlsCert: cert, tlsKey: key });
});
afterAll(async () => {
  await server.stop();
});

describe('TLS', () => {
  it('serves HTTPS when a certificate and key are configured', async () => {
    expect(server.url.startsWith('https://')).toBe(true);
    const { body } = await httpsGet(`${server.url}/api/v1/health`);
    expect(JSON.parse(body)).toMatchObject({ ok: true });
  });

  it('sends Strict-Transport-Security with the page over HTTPS (and not over plain HTTP)', async () => {
    const { headers } = await httpsGet(`${server.url}/`);
    expect(headers['strict-transport-security']).toMatch(/max-age=\d+/);
    const plain = await startTestServer();
    try {
      const res = await fetch(`${plain.url}/`);
      expect(res.status).toBe(200);
      expect(res.headers.get('strict-transport-security')).toBeNull();
    } finally {
      await plain.stop();
    }
  });

  it('accepts WSS from the default https origin of the bound port', async () => {
    // In-process: the test's fetch would refuse the self-signed certificate.
    const user = (await server.app.registry.call('register_user', { name: 'Secure' }, { transport: 'internal' })) as { token: string };
    for (const host of ['127.0.0.1', 'localhost']) {
      const ws = new WebSocket(wsUrl(server.url), { origin: `https://${host}:${server.port}`, rejectUnauthorized: false });
      const first = new Promise<any>((resolve, reject) => {
        ws.once('message', (data) => resolve(JSON.parse(String(data))));
        ws.once('unexpected-response', (_req, res) => reject(new Error(`upgrade refused: HTTP ${res.statusCode}`)));
        ws.once('error', reject);
      });
      ws.once('open', () => ws.send(JSON.stringify({ type: 'auth', token: user.token })));
      expect(await first).toMatchObject({ type: 'auth_ok', participant: { name: 'Secure' } });
      ws.close();
    }
  });

  it('refuses WSS from the plain-http origin of the same port', async () => {
    const ws = new WebSocket(wsUrl(server.url), { origin: `http://127.0.0.1:${server.port}`, rejectUnauthorized: false });
    const status = await new Promise<number | undefined>((resolve) => {
      ws.once('unexpected-response', (_req, res) => resolve(res.statusCode));
      ws.once('open', () => resolve(undefined));
      ws.on('error', () => undefined);
    });
    expect(status).toBe(403);
    ws.terminate();
  });

  it('needs both TLS_CERT and TLS_KEY', () => {
    expect(() => loadConfig({ TLS_CERT: '/x.pem' })).toThrow(ConfigError);
    expect(() => loadConfig({ TLS_CERT: '/x.pem' })).toThrow(/TLS_KEY/);
  });
});
