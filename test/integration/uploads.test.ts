// Uploads: names made by the server, size limit, membership, download headers, signed links.
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sanitiseFilename } from '../../src/transports/files.js';
import { registerUser, startTestServer, type TestServer } from '../helpers/server.js';

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

describe('uploads', () => {
  it('stores under a server-made name that never depends on path tricks in the filename', async () => {
    const hostile = ['../../x', '/etc/passwd', `${'长'.repeat(300)}.txt`, '..', 'C:\\win\\evil.exe', '名字 with spaces.md'];
    for (const name of hostile) {
      const { status, body } = await upload(name, 'hello');
      expect([name, status, body.error]).toEqual([name, 201, undefined]);
      expect(body.data.file_url).toMatch(new RegExp(`^/api/v1/files/${roomId}/\\d{13,}_[^/]+$`));
    }
    // A NUL byte in the part header is refused by the multipart parser: a clear 400, nothing stored.
    const nul = await upload('a\u0000b.txt', 'hello');
    expect([nul.status, nul.body.error?.code ?? 'stored']).toEqual([400, 'validation_error']);
    const stored = await readdir(path.join(server.dataDir, 'uploads', roomId));
    expect(stored).toHaveLength(hostile.length);
    for (const name of stored) {
      expect(name).toMatch(/^\d{13,}_[\p{L}\p{N}._-]+$/u);
      expect(name.length).toBeLessThanOrEqual(120);
    }
    expect(await readdir(path.join(server.dataDir, 'uploads'))).toEqual([roomId]);
    expect(sanitiseFilename('../../x')).toBe('x');
    expect(sanitiseFilename('..')).toBe('file');
    expect(sanitiseFilename('a\u0000b.txt')).toBe('a_b.txt');
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
