// Uploads: names made by the server, size limit, membership, download headers, signed links.
import { readdir } from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sanitiseFilename } from '../../src/transports/files.js';
import { registerUser, startTestServer, type TestServer } from '../helpers/server.js';
import { eventually } from '../helpers/ws.js';

let server: TestServer;
let owner: { token: string };
let outsider: { token: string };
let roomId: string;

beforeAll(async () => {
  server = await startTestServer({ maxUploadBytes: 64 * 1024 });
  owner = await registerUser(server, 'Uploader');
  outsider = await registerUser(server, 'Stranger');
  roomId = (await server.ok('create_room', { room_name: 'Files' }, owner.token)).room.room_id;
});
afterAll(async () => {
  await server.stop();
});

const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==',
  'base64',
);

async function upload(filename: string, content: Buffer | string, token = owner.token, room = roomId) {
  const form = new FormData();
  form.append('file', new Blob([typeof content === 'string' ? content : new Uint8Array(content)]), filename);
  const res = await fetch(`${server.url}/api/v1/rooms/${room}/uploads`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}` },
    body: form,
  });
  return { status: res.status, body: (await res.json()) as any };
}

const uploadsDir = () => path.join(server.dataDir, 'uploads', roomId);
const STAMP = '\\d{13,}';

/** The stored name behind a file_url: `{timestamp}_{name}`, percent-decoded. */
function storedName(fileUrl: string): string {
  const prefix = `/api/v1/files/${roomId}/`;
  expect(fileUrl.startsWith(prefix)).toBe(true);
  return decodeURIComponent(fileUrl.slice(prefix.length));
}

/** Sends a raw multipart request head (one file part) and returns the open request. */
function rawUpload(filename: string): { req: http.ClientRequest; response: Promise<{ status: number; body: any }> } {
  const req = http.request(`${server.url}/api/v1/rooms/${roomId}/uploads`, {
    method: 'POST',
    headers: { authorization: `Bearer ${owner.token}`, 'content-type': `multipart/form-data; boundary=${BOUNDARY}` },
  });
  const response = new Promise<{ status: number; body: any }>((resolve, reject) => {
    req.on('response', (res) => {
      let text = '';
      res.on('data', (c) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
    });
    req.on('error', reject);
  });
  req.write(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="${filename}"\r\nContent-Type: application/octet-stream\r\n\r\n`);
  return { req, response };
}
const BOUNDARY = 'test-boundary-7d1f';

describe('uploads', () => {
  it('stores under a server-made name that never depends on path tricks in the filename', async () => {
    // client filename → the name the server makes: only the last path part, sanitised
    const hostile: Array<[string, string]> = [
      ['../../x', 'x'],
      ['/etc/passwd', 'passwd'],
      ['..', 'file'],
      ['C:\\win\\evil.exe', 'evil.exe'],
      ['a/b/../../../c.txt', 'c.txt'],
      ['.hidden', 'hidden'],
    ];
    for (const [name, expected] of hostile) {
      const { status, body } = await upload(name, 'hello');
      expect([name, status, body.error]).toEqual([name, 201, undefined]);
      expect(body.data.filename).toBe(expected);
      expect(storedName(body.data.file_url)).toMatch(new RegExp(`^${STAMP}_${expected.replace('.', '\\.')}$`));
    }
    // A NUL byte in the part header is refused by the multipart parser: a clear 400, nothing stored.
    const nul = await upload('a\u0000b.txt', 'hello');
    expect([nul.status, nul.body.error?.code ?? 'stored']).toEqual([400, 'validation_error']);
    const stored = await readdir(uploadsDir());
    expect(stored).toHaveLength(hostile.length);
    for (const name of stored) expect(name).toMatch(/^\d{13,}_[\p{L}\p{N}._-]+$/u);
    // Nothing outside uploads/{room_id}/, no sub-folders.
    expect(await readdir(path.join(server.dataDir, 'uploads'))).toEqual([roomId]);
    for (const entry of await readdir(uploadsDir(), { withFileTypes: true })) expect(entry.isFile()).toBe(true);
    expect(sanitiseFilename('../../x')).toBe('x');
    expect(sanitiseFilename('..')).toBe('file');
    expect(sanitiseFilename('a\u0000b.txt')).toBe('a_b.txt');
  });

  it('keeps a Unicode filename as UTF-8 (not latin1) and serves it under that name', async () => {
    const { status, body } = await upload('名字 with spaces.md', '# 标题');
    expect(status).toBe(201);
    expect(body.data.filename).toBe('名字_with_spaces.md');
    expect(body.data.file_url).toMatch(new RegExp(`^/api/v1/files/${roomId}/${STAMP}_${encodeURIComponent('名字_with_spaces.md')}$`));
    expect(await readdir(uploadsDir())).toContain(storedName(body.data.file_url));
    const res = await fetch(server.url + body.data.signed_url);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('# 标题');
    expect(res.headers.get('content-disposition')).toContain(`filename*=UTF-8''${encodeURIComponent('名字_with_spaces.md')}`);
  });

  it('cuts long names to 200 UTF-8 bytes on whole code points, keeping the extension', async () => {
    const cases: Array<[string, string]> = [
      // 3-byte CJK: 65 × 3 + 4 = 199 bytes
      [`${'长'.repeat(300)}.txt`, `${'长'.repeat(65)}.txt`],
      // 4-byte emoji (surrogate pairs in JS): 49 × 4 + 4 = 200 bytes
      [`${'😀'.repeat(100)}.png`, `${'😀'.repeat(49)}.png`],
      // 4-byte letters (CJK Extension B), no extension: 50 × 4 = 200 bytes
      ['𠀀'.repeat(300), '𠀀'.repeat(50)],
    ];
    for (const [name, expected] of cases) {
      const { status, body } = await upload(name, 'long name');
      expect([status, body.error]).toEqual([201, undefined]);
      expect(body.data.filename).toBe(expected);
      const stored = storedName(body.data.file_url);
      expect(stored.endsWith(`_${expected}`)).toBe(true);
      expect(Buffer.byteLength(stored)).toBeLessThanOrEqual(255);
      const res = await fetch(server.url + body.data.signed_url);
      expect([res.status, await res.text()]).toEqual([200, 'long name']);
    }
  });

  it('leaves no partial file behind when the body is malformed or the client goes away', async () => {
    const before = await readdir(uploadsDir());
    const malformed = rawUpload('cut.bin');
    malformed.req.end('some bytes but never the closing boundary');
    const answer = await malformed.response;
    expect([answer.status, answer.body.error.code]).toEqual([400, 'validation_error']);
    expect(await readdir(uploadsDir())).toEqual(before);

    const aborted = rawUpload('gone.bin');
    aborted.response.catch(() => undefined); // the abort below ends it with ECONNRESET
    aborted.req.write(Buffer.alloc(16 * 1024, 1));
    await eventually(async () => (await readdir(uploadsDir())).some((n) => n.endsWith('_gone.bin')), 5000, 'the upload to start');
    aborted.req.destroy();
    await eventually(async () => (await readdir(uploadsDir())).length === before.length, 5000, 'the partial file to be removed');
    expect(await readdir(uploadsDir())).toEqual(before);
  });

  it('refuses files over MAX_UPLOAD_BYTES with 413 and keeps nothing', async () => {
    const before = await readdir(path.join(server.dataDir, 'uploads', roomId));
    const { status, body } = await upload('big.bin', Buffer.alloc(64 * 1024 + 1));
    expect(status).toBe(413);
    expect(body.error.code).toBe('payload_too_large');
    expect(await readdir(path.join(server.dataDir, 'uploads', roomId))).toEqual(before);
  });

  it('refuses non-members and anonymous uploads', async () => {
    expect((await upload('x.txt', 'x', outsider.token)).status).toBe(403);
    expect((await upload('x.txt', 'x', 'act_nope')).status).toBe(401);
  });

  it('detects the type from the content and serves with nosniff, as attachment unless an image', async () => {
    const png = await upload('picture.txt', PNG);
    expect(png.body.data.file_type).toBe('image/png');
    const html = await upload('page.html', '<script>alert(1)</script>');
    expect(html.body.data.file_type).toMatch(/^text\/plain/);

    const auth = { authorization: `Bearer ${owner.token}` };
    const image = await fetch(server.url + png.body.data.file_url, { headers: auth });
    expect(image.status).toBe(200);
    expect(image.headers.get('x-content-type-options')).toBe('nosniff');
    expect(image.headers.get('content-type')).toBe('image/png');
    expect(image.headers.get('content-disposition')).toMatch(/^inline/);
    const page = await fetch(server.url + html.body.data.file_url, { headers: auth });
    expect(page.headers.get('content-disposition')).toMatch(/^attachment/);
    expect(page.headers.get('content-type')).toMatch(/^text\/plain/);

    expect((await fetch(server.url + png.body.data.file_url)).status).toBe(401);
    expect((await fetch(server.url + png.body.data.file_url, { headers: { authorization: `Bearer ${outsider.token}` } })).status).toBe(403);
    const signed = await fetch(server.url + png.body.data.signed_url);
    expect(signed.status).toBe(200);
    expect(Buffer.from(await signed.arrayBuffer()).equals(PNG)).toBe(true);
  });

  it('refuses expired or forged signed links', async () => {
    const { body } = await upload('note.txt', 'secret');
    const url = new URL(server.url + body.data.signed_url);
    const forged = new URL(url);
    forged.searchParams.set('sig', 'A'.repeat(43));
    expect((await fetch(forged)).status).toBe(403);
    const expired = new URL(url);
    expired.searchParams.set('expires', String(Date.now() - 1000));
    expect((await fetch(expired)).status).toBe(403);
    // A link signed in the past that has since expired.
    const old = server.app.links.sign(url.pathname, -1);
    expect((await fetch(server.url + old)).status).toBe(403);
  });

  it('links an upload to a message', async () => {
    const { body } = await upload('diagram.png', PNG);
    const { message } = await server.ok(
      'send_message',
      { room_id: roomId, text_content: '见附件', file_url: body.data.file_url, file_type: body.data.file_type },
      owner.token,
    );
    expect(message).toMatchObject({ file_url: body.data.file_url, file_type: 'image/png' });
  });

  it('rejects ids that could become paths', async () => {
    const res = await fetch(`${server.url}/api/v1/files/${roomId}/..%2F..%2Fagents.json`, {
      headers: { authorization: `Bearer ${owner.token}` },
    });
    expect(res.status).toBe(404);
    const bad = await fetch(`${server.url}/api/v1/rooms/..%2F..%2Fetc/uploads`, { method: 'POST', headers: { authorization: `Bearer ${owner.token}` } });
    expect(bad.status).toBe(400);
  });
});

describe('upload rate limits', () => {
  it('answers 429 rate_limited once a token is over RATE_LIMIT_PER_TOKEN (one budget with tool calls), and stores nothing for it', async () => {
    const limited = await startTestServer({ rateLimitPerToken: 4 });
    try {
      const user = await registerUser(limited, 'Flooder');
      const room = (await limited.ok('create_room', { room_name: 'Flood' }, user.token)).room.room_id;
      const send = async (name: string) => {
        const form = new FormData();
        form.append('file', new Blob(['x']), name);
        const res = await fetch(`${limited.url}/api/v1/rooms/${room}/uploads`, {
          method: 'POST',
          headers: { authorization: `Bearer ${user.token}` },
          body: form,
        });
        return { status: res.status, body: (await res.json()) as any };
      };
      // create_room took one of the 4 points: three uploads fit, the fourth does not.
      for (const name of ['1.txt', '2.txt', '3.txt']) expect((await send(name)).status).toBe(201);
      const refused = await send('4.txt');
      expect([refused.status, refused.body.error.code]).toEqual([429, 'rate_limited']);
      expect(refused.body.error.details.retry_after_ms).toBeGreaterThan(0);
      expect((await readdir(path.join(limited.dataDir, 'uploads', room))).sort().map((n) => n.replace(/^\d+_/, ''))).toEqual(['1.txt', '2.txt', '3.txt']);
      // The uploads used the same budget as tool calls.
      const call = await limited.call('list_rooms', {}, user.token);
      expect([call.status, call.body.ok ? null : call.body.error.code]).toEqual([429, 'rate_limited']);
    } finally {
      await limited.stop();
    }
  });
});
