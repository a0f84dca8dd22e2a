// Uploads: names made by the server, size limit, membership, download headers, signed links.
import { readdir, rm } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../src/app.js';
import { testConfig } from '../../src/config.js';
import { silentLogger } from '../../src/logger.js';
import { isStoredName, sanitiseFilename, type UploadIo } from '../../src/transports/files.js';
import { createHttpApp } from '../../src/transports/http.js';
import { registerUser, startTestServer, tempDataDir, type TestServer } from '../helpers/server.js';
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
      expect([name, status, body.error]).toEqual([name, 200, undefined]);
      expect(body.data.filename).toBe(expected);
      expect(storedName(body.data.file_url)).toMatch(new RegExp(`^${STAMP}_${expected.replace('.', '\\.')}$`));
    }
    // A NUL byte in the part header is refused by the multipart parser: a clear 400, nothing stored.
    const nul = await upload('a\u0000b.txt', 'hello');
    expect([nul.status, nul.body.error?.code ?? 'stored']).toEqual([400, 'validation_error']);
    const stored = await readdir(uploadsDir());
    expect(stored).toHaveLength(hostile.length);
    for (const name of stored) expect(name).toMatch(/^\d{13,}_[\p{L}\p{N}._-]+$/u);
    expect(stored.every((name) => isStoredName(name))).toBe(true);
    // Nothing outside uploads/{room_id}/, no sub-folders.
    expect(await readdir(path.join(server.dataDir, 'uploads'))).toEqual([roomId]);
    for (const entry of await readdir(uploadsDir(), { withFileTypes: true })) expect(entry.isFile()).toBe(true);
    expect(sanitiseFilename('../../x')).toBe('x');
    expect(sanitiseFilename('..')).toBe('file');
    expect(sanitiseFilename('a\u0000b.txt')).toBe('a_b.txt');
  });

  it('keeps a Unicode filename as UTF-8 (not latin1) and serves it under that name', async () => {
    const { status, body } = await upload('名字 with spaces.md', '# 标题');
    expect(status).toBe(200);
    expect(body.data.filename).toBe('名字 with spaces.md');
    expect(body.data.file_url).toMatch(new RegExp(`^/api/v1/files/${roomId}/${STAMP}_${encodeURIComponent('名字 with spaces.md')}$`));
    expect(await readdir(uploadsDir())).toContain(storedName(body.data.file_url));
    const res = await fetch(server.url + body.data.signed_url);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('# 标题');
    expect(res.headers.get('content-disposition')).toContain(`filename*=UTF-8''${encodeURIComponent('名字 with spaces.md')}`);
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
      expect([status, body.error]).toEqual([200, undefined]);
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

  it('refuses a file over a small MAX_UPLOAD_BYTES, reached within the first chunk, and keeps nothing', async () => {
    const small = await startTestServer({ maxUploadBytes: 1000 });
    try {
      const person = await registerUser(small, 'SmallLimit');
      const room = (await small.ok<{ room: { room_id: string } }>('create_room', { room_name: 'Small uploads' }, person.token)).room.room_id;
      const send = async (bytes: number) => {
        const form = new FormData();
        form.append('file', new Blob([new Uint8Array(Buffer.alloc(bytes, 7))]), 'data.bin');
        const res = await fetch(`${small.url}/api/v1/rooms/${room}/uploads`, { method: 'POST', headers: { authorization: `Bearer ${person.token}` }, body: form });
        return { status: res.status, body: (await res.json()) as any };
      };
      for (const bytes of [1001, 100_000]) {
        const refused = await send(bytes);
        expect(refused.status, `${bytes} bytes`).toBe(413);
        expect(refused.body.error.code).toBe('payload_too_large');
      }
      const fits = await send(1000);
      expect(fits.status).toBe(200);
      expect(fits.body.data.bytes).toBe(1000);
      expect(await readdir(path.join(small.dataDir, 'uploads', room))).toHaveLength(1);
    } finally {
      await small.stop();
    }
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
    // A room id that could become a path names no room: refused before any path is built.
    const bad = await fetch(`${server.url}/api/v1/rooms/..%2F..%2Fetc/uploads`, { method: 'POST', headers: { authorization: `Bearer ${owner.token}` } });
    expect(bad.status).toBe(404);
    expect(((await bad.json()) as { error: { code: string } }).error.code).toBe('room_not_found');
  });
});

describe('upload names and races (SPEC §10)', () => {
  it('keeps a name\'s characters and replaces only dangerous ones (the documented rule)', async () => {
    const { status, body } = await upload('设计 说明(v2).md', '# 设计');
    expect(status).toBe(200);
    expect(body.data.filename).toBe('设计 说明(v2).md');
    expect(storedName(body.data.file_url)).toMatch(new RegExp(`^${STAMP}_设计 说明\\(v2\\)\\.md$`));
    // Parentheses are escaped in the URL, so the link survives inside Markdown.
    expect(body.data.file_url).not.toMatch(/[()\s]/);
    const res = await fetch(server.url + body.data.signed_url);
    expect([res.status, await res.text()]).toEqual([200, '# 设计']);
    const rules: Array<[string, string]> = [
      ['设计 说明(v2).md', '设计 说明(v2).md'],
      ["Q&A, notes [draft] #1 + 'ok'.txt", "Q&A, notes [draft] #1 + 'ok'.txt"],
      ['报告😀‍💻.pdf', '报告😀‍💻.pdf'],
      ['a<b>c:d"e|f?g*h.txt', 'a_b_c_d_e_f_g_h.txt'],
      ['invoice\u202Etxt.exe', 'invoice_txt.exe'],
      ['tab\tand\nnewline.txt', 'tab_and_newline.txt'],
      ['many    spaces\u00a0here.txt', 'many spaces here.txt'],
      ['  -rf .txt', 'rf .txt'],
      ['trailing dots... ', 'trailing dots'],
      ['line\u2028sep.txt', 'line_sep.txt'],
      ['...', 'file'],
    ];
    for (const [raw, expected] of rules) expect(sanitiseFilename(raw), JSON.stringify(raw)).toBe(expected);
    for (const [, expected] of rules) expect(isStoredName(`1700000000000_${expected}`), expected).toBe(true);
    for (const bad of ['1700000000000_a/b', '1700000000000_..', '1700000000000_a\u202Eb', 'x_a.txt', '1700000000000_']) {
      expect(isStoredName(bad), JSON.stringify(bad)).toBe(false);
    }
  });

  it('stores 40 concurrent uploads of one name under 40 distinct names, all downloadable with their bytes', async () => {
    const contents = Array.from({ length: 40 }, (_, i) => `upload number ${i} `.repeat(50 + i));
    const answers = await Promise.all(contents.map((content) => upload('same name.txt', content)));
    expect(answers.map((a) => a.status)).toEqual(Array(40).fill(200));
    const names = answers.map((a) => storedName(a.body.data.file_url));
    expect(new Set(names).size).toBe(40);
    for (const name of names) expect(name).toMatch(new RegExp(`^${STAMP}_same name\\.txt$`));
    const stored = await readdir(uploadsDir());
    for (const name of names) expect(stored).toContain(name);
    const downloads = await Promise.all(
      answers.map(async (a) => {
        const res = await fetch(`${server.url}${a.body.data.file_url}`, { headers: { authorization: `Bearer ${owner.token}` } });
        return [res.status, await res.text()];
      }),
    );
    expect(downloads).toEqual(contents.map((content) => [200, content]));
  });
});

describe('an upload whose write fails (SPEC §10)', () => {
  it('is answered internal_error at once, leaves no file, and the server serves on', async () => {
    const dataDir = await tempDataDir();
    const app = await createApp(testConfig({ dataDir, maxUploadBytes: 8 * 1024 * 1024 }), silentLogger);
    let attempts = 0;
    const failingDisk: UploadIo = {
      writeStream(handle) {
        attempts += 1;
        const real = handle.createWriteStream();
        let written = 0;
        return new Writable({
          write(chunk: Buffer, _encoding, done) {
            written += chunk.length;
            // The first 64 KB reach the disk, then it is full.
            if (written > 64 * 1024) return done(Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' }));
            real.write(chunk, done);
          },
          final(done) {
            real.end(done);
          },
          destroy(err, done) {
            real.destroy();
            done(err);
          },
        });
      },
    };
    const faulty = http.createServer(createHttpApp(app, [], { uploadIo: failingDisk }));
    await new Promise<void>((resolve) => faulty.listen(0, '127.0.0.1', resolve));
    const base = `http://127.0.0.1:${(faulty.address() as AddressInfo).port}`;
    try {
      const user = await app.registry.call('register_user', { name: 'Disk' }, { transport: 'internal' }) as { token: string };
      const room = (await app.registry.call('create_room', { room_name: 'Full' }, { transport: 'internal', token: user.token }) as any).room.room_id;
      const form = new FormData();
      form.append('file', new Blob([new Uint8Array(4 * 1024 * 1024).fill(7)]), 'big.bin');
      // Answered, not left hanging: a request still open after 5 s is aborted and fails here.
      const res = await fetch(`${base}/api/v1/rooms/${room}/uploads`, {
        method: 'POST',
        headers: { authorization: `Bearer ${user.token}` },
        body: form,
        signal: AbortSignal.timeout(5000),
      });
      const body = (await res.json()) as any;
      expect([res.status, body.error.code]).toEqual([500, 'internal_error']);
      expect(body.error.message).not.toMatch(/ENOSPC|at .*\.ts/);
      expect(attempts).toBe(1);
      expect(await readdir(path.join(dataDir, 'uploads', room))).toEqual([]);
      expect((await fetch(`${base}/api/v1/health`)).status).toBe(200);
    } finally {
      faulty.closeAllConnections();
      await new Promise((resolve) => faulty.close(resolve));
      await app.close();
      await rm(dataDir, { recursive: true, force: true });
    }
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
      for (const name of ['1.txt', '2.txt', '3.txt']) expect((await send(name)).status).toBe(200);
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
