// SPEC v2 §7: `file_url` is an existing upload of the same room (as the upload endpoint returned
// it) or an absolute http(s) URL, anything else is a validation_error; deleting a message
// removes its uploaded file unless another message still refers to it.
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerUser, startTestServer, type TestServer } from '../helpers/server.js';

let server: TestServer;
let owner: { token: string; id: string; name: string };
let roomId: string;
let otherRoomId: string;

beforeAll(async () => {
  server = await startTestServer();
  owner = await registerUser(server, 'Filer');
  roomId = (await server.ok('create_room', { room_name: 'Files here' }, owner.token)).room.room_id;
  otherRoomId = (await server.ok('create_room', { room_name: 'Files there' }, owner.token)).room.room_id;
});

afterAll(async () => {
  await server.stop();
});

async function upload(room: string, name: string): Promise<{ file_url: string; file_type: string }> {
  const form = new FormData();
  form.append('file', new Blob([new Uint8Array(Buffer.from(`bytes of ${name}`))]), name);
  const res = await fetch(`${server.url}/api/v1/rooms/${room}/uploads`, { method: 'POST', headers: { authorization: `Bearer ${owner.token}` }, body: form });
  expect(res.status).toBe(200);
  return ((await res.json()) as { data: { file_url: string; file_type: string } }).data;
}

const send = (file_url: string, room = roomId) => server.call('send_message', { room_id: room, text_content: 'see file', file_url }, owner.token);

describe('file_url (SPEC v2 §7)', () => {
  it('accepts an upload of the same room and absolute http(s) URLs', async () => {
    const own = await upload(roomId, 'plan.txt');
    expect((await send(own.file_url)).status).toBe(200);
    expect((await send('https://example.com/report.pdf')).status).toBe(200);
    expect((await send('http://example.com/a.png')).status).toBe(200);
  });

  it("refuses another room's upload, a missing upload, other schemes and relative paths", async () => {
    const foreign = await upload(otherRoomId, 'secret.txt');
    for (const bad of [
      foreign.file_url,
      `/api/v1/files/${roomId}/1700000000000_missing.txt`,
      `/api/v1/files/${roomId}/..%2Fsecret.txt`,
      'javascript:alert(1)',
      'file:///etc/passwd',
      'ftp://example.com/x',
      '../uploads/x',
      `/api/v1/exports/${roomId}-20260101000000-abcdef.pdf`,
    ]) {
      const answer = await send(bad);
      expect(answer.status, bad).toBe(400);
      expect(answer.body.ok).toBe(false);
      if (!answer.body.ok) expect(answer.body.error).toMatchObject({ code: 'validation_error', details: { field: 'file_url' } });
    }
  });
});

describe('deleting a message removes its upload (SPEC v2 §7)', () => {
  const files = async () => readdir(path.join(server.dataDir, 'uploads', roomId)).catch(() => [] as string[]);

  it('removes the file with the last message that refers to it, not before', async () => {
    const shared = await upload(roomId, 'shared.txt');
    const name = decodeURIComponent(shared.file_url.split('/').pop()!);
    const first = (await send(shared.file_url)).body;
    const second = (await send(shared.file_url)).body;
    if (!first.ok || !second.ok) throw new Error('send failed');
    await server.ok('delete_message', { message_id: first.data.message.message_id }, owner.token);
    expect(await files()).toContain(name); // still referred to by the second message
    const download = await fetch(`${server.url}${shared.file_url}`, { headers: { authorization: `Bearer ${owner.token}` } });
    expect(download.status).toBe(200);
    await server.ok('delete_message', { message_id: second.data.message.message_id }, owner.token);
    expect(await files()).not.toContain(name);
    const gone = await fetch(`${server.url}${shared.file_url}`, { headers: { authorization: `Bearer ${owner.token}` } });
    expect(gone.status).toBe(404);
  });

  it('counts a reference by the file it names: the same upload spelled with other percent-encodings keeps it', async () => {
    const kept = await upload(roomId, 'report.txt');
    const name = decodeURIComponent(kept.file_url.split('/').pop()!);
    const original = (await send(kept.file_url)).body;
    if (!original.ok) throw new Error('send failed');
    // The same file, its name spelled differently (%2E for '.', %72 for 'r').
    const respelled = kept.file_url.replace(/\.txt$/, '%2Etxt').replace(/_report/, '_%72eport');
    expect(respelled).not.toBe(kept.file_url);
    const other = (await send(respelled)).body;
    if (!other.ok) throw new Error(`send failed: ${JSON.stringify(other)}`);
    await server.ok('delete_message', { message_id: other.data.message.message_id }, owner.token);
    expect(await files()).toContain(name); // the first message still refers to it
    await server.ok('delete_message', { message_id: original.data.message.message_id }, owner.token);
    expect(await files()).not.toContain(name);
  });
});
