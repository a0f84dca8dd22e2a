// export_chat_history end to end: the tool, the files, signed links and token downloads.
import { execFileSync } from 'node:child_process';
import { mkdtemp, readdir, stat, utimes, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerAgent, registerUser, startTestServer, type TestServer } from '../helpers/server.js';

let server: TestServer;
let owner: { token: string };
let roomId: string;

beforeAll(async () => {
  server = await startTestServer({ turnTimeoutMs: 60_000 });
  owner = await registerUser(server, 'Exporter');
  roomId = (await server.ok('create_room', { room_name: 'Export Room', room_description: '导出测试' }, owner.token)).room.room_id;
  const agent = await registerAgent(server, 'Bot');
  await server.ok('join_room', { room_id: roomId }, agent.token);
  await server.ok('set_announcement', { room_id: roomId, user_announcement: '请保持简洁' }, owner.token);
  await server.ok('send_message', { room_id: roomId, text_content: '你好，世界 **bold**' }, owner.token);
  await server.ok('skip_response', { room_id: roomId }, agent.token);
  await server.ok('send_message', { room_id: roomId, text_content: '```js\nconsole.log("code block")\n```' }, owner.token);
});
afterAll(async () => {
  await server.stop();
});

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

describe('export_chat_history', () => {
  it('exports Markdown with visible messages in order, room times, no skip records', async () => {
    const data = await server.ok('export_chat_history', { room_id: roomId, format: 'markdown' }, owner.token);
    expect(data.url).toMatch(new RegExp(`^/api/v1/exports/${roomId}-\\d{14}-[0-9a-f]{6}\\.md\\?expires=\\d+&sig=`));
    expect(data.filename).toMatch(/^Export_Room_\d{4}-\d\d-\d\d_\d{6}\.md$/);
    const res = await fetch(server.url + data.url);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-disposition')).toContain('attachment');
    const text = await res.text();
    expect(Buffer.byteLength(text)).toBe(data.bytes);
    expect(text).toContain('Export Room');
    expect(text).toContain('导出测试');
    expect(text).toContain('请保持简洁');
    expect(text.indexOf('你好，世界')).toBeGreaterThan(0);
    expect(text.indexOf('你好，世界')).toBeLessThan(text.indexOf('code block'));
    expect(text).not.toContain('（跳过）');
    const { messages } = await server.ok('get_messages', { room_id: roomId }, owner.token);
    const shown = new Intl.DateTimeFormat('sv-SE', {
      timeZone: 'Asia/Shanghai', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23',
    }).format(new Date(messages[0].timestamp));
    expect(text).toContain(shown);
  });

  it('exports a PDF whose text can be extracted, with the Chinese text and the code block', async () => {
    const data = await server.ok('export_chat_history', { room_id: roomId, format: 'pdf' }, owner.token);
    const res = await fetch(server.url + data.url.split('?')[0], { headers: { authorization: `Bearer ${owner.token}` } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/pdf');
    const bytes = Buffer.from(await res.arrayBuffer());
    expect(bytes.subarray(0, 5).toString()).toBe('%PDF-');
    const file = path.join(await mkdtemp(path.join(os.tmpdir(), 'pdf-')), 'out.pdf');
    await writeFile(file, bytes);
    const text = execFileSync('pdftotext', [file, '-']).toString();
    expect(text).toContain('你好，世界');
    expect(text).toContain('console.log("code block")');
  });

  it('links attachments absolutely, signed for days, in Markdown and as PDF link annotations', async () => {
    const content = Buffer.from('附件内容 attachment bytes\n');
    const form = new FormData();
    form.append('file', new Blob([new Uint8Array(content)]), '报告 final.txt');
    const uploaded = await fetch(`${server.url}/api/v1/rooms/${roomId}/uploads`, {
      method: 'POST',
      headers: { authorization: `Bearer ${owner.token}` },
      body: form,
    });
    const { file_url, file_type } = ((await uploaded.json()) as any).data;
    await server.ok('send_message', { room_id: roomId, text_content: '见附件', file_url, file_type }, owner.token);
    const linkTo = new RegExp(`${escapeRegExp(server.url + file_url)}\\?expires=(\\d+)&sig=[\\w-]+`, 'g');
    const fetchAttachment = async (link: string, expires: string) => {
      expect(Number(expires) - Date.now()).toBeGreaterThan(6 * 24 * 3_600_000);
      const res = await fetch(link); // no token
      expect(res.status).toBe(200);
      expect(Buffer.from(await res.arrayBuffer()).equals(content)).toBe(true);
    };

    const md = await server.ok('export_chat_history', { room_id: roomId, format: 'markdown' }, owner.token);
    const text = await (await fetch(server.url + md.url)).text();
    const mdLinks = [...text.matchAll(linkTo)];
    expect(mdLinks).toHaveLength(1);
    expect(text).toContain(`](<${mdLinks[0]![0]}>)`);
    await fetchAttachment(mdLinks[0]![0], mdLinks[0]![1]!);

    const pdf = await server.ok('export_chat_history', { room_id: roomId, format: 'pdf' }, owner.token);
    const raw = Buffer.from(await (await fetch(server.url + pdf.url)).arrayBuffer()).toString('latin1');
    // Annotation dictionaries are not in compressed streams: pdfkit writes `/URI (…)` as is.
    const uris = [...raw.matchAll(/\/URI \(([^)]*)\)/g)].map((m) => m[1]!);
    const pdfLinks = uris.flatMap((uri) => [...uri.matchAll(linkTo)]);
    expect(pdfLinks).toHaveLength(1);
    await fetchAttachment(pdfLinks[0]![0], pdfLinks[0]![1]!);
  });

  it('writes exports to DATA_DIR/exports/ without leftovers, and removes exports older than an hour', async () => {
    const dir = path.join(server.dataDir, 'exports');
    const stale = path.join(dir, `${roomId}-20200101000000-abcdef.md`);
    await writeFile(stale, 'old export');
    const twoHoursAgo = new Date(Date.now() - 2 * 3_600_000);
    await utimes(stale, twoHoursAgo, twoHoursAgo);
    const fresh = path.join(dir, `${roomId}-20200101000001-abcdef.md`);
    await writeFile(fresh, 'recent export'); // younger than an hour: kept

    const data = await server.ok('export_chat_history', { room_id: roomId, format: 'pdf' }, owner.token);
    const name = new URL(server.url + data.url).pathname.split('/').pop()!;
    const files = await readdir(dir);
    expect(files).toContain(name);
    expect(files).not.toContain(path.basename(stale));
    expect(files).toContain(path.basename(fresh));
    for (const file of files) expect(file).toMatch(new RegExp(`^${roomId}-\\d{14}-[0-9a-f]{6}\\.(md|pdf)$`));
    expect((await stat(path.join(dir, name))).size).toBe(data.bytes);
  });

  it('exports an archived room', async () => {
    const archived = (await server.ok('create_room', { room_name: 'Old Room' }, owner.token)).room.room_id;
    await server.ok('send_message', { room_id: archived, text_content: '归档前的最后一条' }, owner.token);
    await server.ok('archive_room', { room_id: archived }, owner.token);
    const data = await server.ok('export_chat_history', { room_id: archived, format: 'markdown' }, owner.token);
    expect(await (await fetch(server.url + data.url)).text()).toContain('归档前的最后一条');
  });

  it('refuses non-members, expired and forged links', async () => {
    const outsider = await registerUser(server, 'Nosy');
    const refused = await server.call('export_chat_history', { room_id: roomId, format: 'markdown' }, outsider.token);
    expect(refused.status).toBe(403);
    const data = await server.ok('export_chat_history', { room_id: roomId, format: 'markdown' }, owner.token);
    const bare = data.url.split('?')[0];
    expect((await fetch(server.url + bare)).status).toBe(401);
    expect((await fetch(server.url + bare, { headers: { authorization: `Bearer ${outsider.token}` } })).status).toBe(403);
    const expired = server.app.links.sign(bare, -1);
    expect((await fetch(server.url + expired)).status).toBe(403);
    const forged = new URL(server.url + data.url);
    forged.searchParams.set('sig', 'x'.repeat(43));
    expect((await fetch(forged)).status).toBe(403);
    expect((await fetch(`${server.url}/api/v1/exports/..%2Frooms.json`, { headers: { authorization: `Bearer ${owner.token}` } })).status).toBe(404);
    const bad = await server.call('export_chat_history', { room_id: roomId, format: 'docx' }, owner.token);
    expect(bad.status).toBe(400);
  });
});
