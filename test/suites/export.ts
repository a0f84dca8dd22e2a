// export_chat_history end to end: the tool, the files, signed links and token downloads. A
// suite function, run by test/integration/export.test.ts on the file store and by
// test/postgres/behaviour.test.ts on PostgreSQL (uploads and exports live under DATA_DIR there
// too).
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, readdir, stat, utimes, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exportSlots } from '../../src/tools/export.js';
import type { Message } from '../../src/types.js';
import { measureLoopStall } from '../helpers/loop-stall.js';
import { registerAgent, registerUser, startTestServer, type TestServer } from '../helpers/server.js';
import { storedRecords } from '../helpers/stored-state.js';

let server: TestServer;
let owner: { token: string };
let roomId: string;

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

export function exportSuites(): void {
  describe('exports', () => {
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
        for (const file of files) expect(file).toMatch(new RegExp(`^${roomId}-\\d{14}-[0-9a-f]{6}\\.(md|pdf|html|json)$`));
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

      it("signs only the room's own uploads: another room's upload link stays as written, unsigned", async () => {
        const other = (await server.ok('create_room', { room_name: 'Secret Room', password: 'pw-123456' }, owner.token)).room.room_id;
        const form = new FormData();
        form.append('file', new Blob([new Uint8Array(Buffer.from('secret bytes'))]), 'secret.txt');
        const up = await fetch(`${server.url}/api/v1/rooms/${other}/uploads`, { method: 'POST', headers: { authorization: `Bearer ${owner.token}` }, body: form });
        const foreignUrl: string = ((await up.json()) as any).data.file_url;
        // send_message refuses another room's upload path (SPEC §7); a log written before that rule
        // may still hold one, so the message is put into the log directly.
        const stored = (await server.app.store.loadRoom(roomId))!;
        const room = stored.room;
        const message: Message = {
          message_id: randomUUID(), room_id: roomId, seq: stored.lastSeq + 1, timestamp: new Date().toISOString(),
          sender: 'Exporter', sender_id: room.created_by_id, role: 'user', text_content: 'look at this', text_content_i18n: null,
          source_language: room.language, file_url: foreignUrl, file_type: 'text/plain', mentions: [], visible: true, processed: true,
          response_to: null, display_timezone: room.timezone, round_id: null, skip_reason: null, deleted: false,
        };
        await server.app.store.commitRoom(roomId, { messages: [message], expectedVersion: stored.version });

        const contents: string[] = [];
        for (const format of ['markdown', 'html', 'json', 'pdf'] as const) {
          const data = await server.ok('export_chat_history', { room_id: roomId, format }, owner.token);
          const body = Buffer.from(await (await fetch(server.url + data.url)).arrayBuffer()).toString('latin1');
          contents.push(body);
          const name = encodeURIComponent(foreignUrl.split('/').pop()!);
          expect(body).not.toMatch(new RegExp(`${escapeRegExp(name)}\\?expires=`));
          expect(body).not.toContain(`${server.url}${foreignUrl}`);
        }
        // The Markdown keeps the path as written: without a token it opens nothing.
        expect(Buffer.from(contents[0]!, 'latin1').toString('utf8')).toContain(foreignUrl);
        expect((await fetch(server.url + foreignUrl)).status).toBe(401);
      });

      it('exports one self-contained HTML file, served as a download under a strict CSP', async () => {
        const data = await server.ok('export_chat_history', { room_id: roomId, format: 'html' }, owner.token);
        expect(data.filename).toMatch(/^Export_Room_.*\.html$/);
        const res = await fetch(server.url + data.url);
        expect(res.status).toBe(200);
        expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
        expect(res.headers.get('content-disposition')).toContain('attachment');
        expect(res.headers.get('content-security-policy')).toContain('sandbox');
        const html = await res.text();
        expect(Buffer.byteLength(html)).toBe(data.bytes);
        expect(html).toContain('<meta http-equiv="Content-Security-Policy"');
        expect(html).toContain('你好，世界');
        expect(html).not.toMatch(/<script/i);
      });

      it('round-trips a room through JSON: export → import → export gives the same messages (ids aside)', async () => {
        const source = (await server.ok('create_room', { room_name: 'Trip Source', room_description: '往返' }, owner.token)).room.room_id;
        const bot = await registerAgent(server, 'TripBot');
        await server.ok('join_room', { room_id: source }, bot.token);
        await server.ok('set_announcement', { room_id: source, user_announcement: '往返测试' }, owner.token);
        const first = await server.ok('send_message', { room_id: source, text_content: '第一条 **markdown** 😀' }, owner.token);
        await server.ok('start_round', { room_id: source }, owner.token).catch(() => undefined);
        const turn = await server.ok('get_context', { room_id: source }, bot.token);
        if (turn.your_turn) await server.ok('skip_response', { room_id: source }, bot.token);
        await server.ok('send_message', { room_id: source, text_content: 'a reply', response_to: first.message.message_id }, owner.token);
        const edited = await server.ok('send_message', { room_id: source, text_content: 'before edit' }, owner.token);
        await server.ok('edit_message', { message_id: edited.message.message_id, text_content: 'after edit' }, owner.token);
        const gone = await server.ok('send_message', { room_id: source, text_content: 'to delete' }, owner.token);
        await server.ok('delete_message', { message_id: gone.message.message_id }, owner.token);

        const exportJson = async (room: string) => {
          const data = await server.ok('export_chat_history', { room_id: room, format: 'json' }, owner.token);
          const res = await fetch(server.url + data.url);
          expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
          return (await res.json()) as any;
        };
        const before = await exportJson(source);
        expect(before.messages.some((m: any) => m.visible === false)).toBe(true); // skip record included

        const importer = await registerUser(server, 'Importer');
        const roomsBefore = (await server.app.store.listRoomIds()).length;
        const imported = await server.ok('import_chat_history', { data: before, room_name: 'Trip Copy' }, importer.token);
        expect((await server.app.store.listRoomIds()).length).toBe(roomsBefore + 1);
        const copy = imported.room;
        expect(copy.room_id).not.toBe(source);
        expect(copy.room_id).toMatch(/^trip-copy-\d{14}-[a-z0-9]{8,}$/);
        expect(copy.room_name).toBe('Trip Copy');
        expect(copy.created_by).toBe('Importer');
        expect(copy.members.map((m: any) => m.name)).toEqual(['Importer']);
        expect(copy.has_password).toBe(false);
        const listed = await server.ok('get_room', { room_id: copy.room_id }, importer.token);
        expect(listed.room.room_id).toBe(copy.room_id);
        await expect(server.ok('get_room', { room_id: copy.room_id }, owner.token)).rejects.toThrow(/not_a_member/);

        await server.ok('join_room', { room_id: copy.room_id }, owner.token);
        const after = await exportJson(copy.room_id);
        const strip = (m: any) => {
          const { message_id, room_id, response_to, round_id, sender_id, processed, imported, ...rest } = m;
          return { ...rest, reply: response_to !== null, round: round_id !== null };
        };
        expect(after.messages.map(strip)).toEqual(before.messages.map(strip));
        // Replies still point at the message they answered, by its new id.
        const reply = after.messages.find((m: any) => m.text_content === 'a reply');
        expect(after.messages.find((m: any) => m.message_id === reply.response_to)?.text_content).toContain('第一条');
        // Authors kept as names only: imported messages are nobody's (SPEC §10).
        expect(after.messages.every((m: any) => m.sender_id === null && m.imported === true)).toBe(true);
        expect(before.messages.some((m: any) => m.imported)).toBe(false);
        // The file's announcement is not taken over (SPEC §10).
        expect(after.room.announcement.user_announcement).toBe('');
        expect(after.messages.map((m: any) => m.seq)).toEqual(after.messages.map((_: any, i: number) => i + 1));
      });

      it('the JSON export reports each message as get_messages does, processed included (from the room, not the log line)', async () => {
        const room = (await server.ok('create_room', { room_name: 'Processed' }, owner.token)).room.room_id;
        const bot = await registerAgent(server, 'ProcBot');
        await server.ok('join_room', { room_id: room }, bot.token);
        await server.ok('send_message', { room_id: room, text_content: 'a question' }, owner.token);
        await server.ok('send_message', { room_id: room, text_content: 'an answer' }, bot.token);
        const { messages } = await server.ok('get_messages', { room_id: room, after_seq: 0 }, owner.token);
        expect(messages.some((m: any) => m.processed === true)).toBe(true);
        const data = await server.ok('export_chat_history', { room_id: room, format: 'json' }, owner.token);
        const exported = ((await (await fetch(server.url + data.url)).json()) as any).messages;
        const view = (m: any) => ({ seq: m.seq, processed: m.processed, visible: m.visible, text: m.text_content });
        expect(exported.map(view)).toEqual(messages.map(view));
      });

      it('refuses a malformed or hostile import with validation_error and creates nothing', async () => {
        const importer = await registerUser(server, 'Hostile');
        const good = await (async () => {
          const data = await server.ok('export_chat_history', { room_id: roomId, format: 'json' }, owner.token);
          return (await (await fetch(server.url + data.url)).json()) as any;
        })();
        const logs = path.join(server.dataDir, 'room_messages');
        // What the store wrote: the file store's logs and rooms (rooms.json with the state journal
        // it trails, SPEC §5), or PostgreSQL's tables.
        const files = server.app.config.store.kind === 'file';
        const snapshot = async () => ({
          rooms: (await server.app.store.listRoomIds()).length,
          logs: files ? (await readdir(logs)).sort() : await server.app.store.messageCount(),
          mine: (await server.app.store.roomsOf(importer.id)).length,
          storedRooms: files ? JSON.stringify(await storedRecords(server.dataDir, 'rooms')) : await server.app.store.listRoomSummaries(true),
        });
        const before = await snapshot();
        const bad: unknown[] = [
          'not an object',
          [],
          {},
          { ...good, format: 'something-else' },
          { ...good, version: 99 },
          { ...good, messages: [{ ...good.messages[0], text_content: 'x'.repeat(40_000) }] },
          { ...good, messages: [{ ...good.messages[0], sender: 'evil name with spaces' }] },
          { ...good, room: { ...good.room, room_name: '<script>' } },
          JSON.parse(`{"__proto__": {"polluted": true}, ${JSON.stringify(good).slice(1)}`),
          { ...good, messages: [JSON.parse(`{"constructor": {"prototype": {"x": 1}}, ${JSON.stringify(good.messages[0]).slice(1)}`)] },
        ];
        for (const data of bad) {
          const res = await fetch(`${server.url}/api/v1/tools/import_chat_history`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', authorization: `Bearer ${importer.token}` },
            body: `{"data": ${typeof data === 'string' ? JSON.stringify(data) : JSON.stringify(data)}}`,
          });
          const body = (await res.json()) as any;
          expect(res.status).toBe(400);
          expect(body.error.code).toBe('validation_error');
        }
        expect(({} as any).polluted).toBeUndefined();
        expect(await snapshot()).toEqual(before);
      });

      /** A room of 1,500 messages (Chinese, Markdown, long code lines, a photo every 100th), written straight into its log. */
      async function bigRoom(name: string): Promise<string> {
        const big = (await server.ok('create_room', { room_name: name }, owner.token)).room.room_id;
        let stored = (await server.app.store.loadRoom(big))!;
        const room = stored.room;
        const form = new FormData();
        form.append('file', new Blob([new Uint8Array(await sharp({ create: { width: 900, height: 600, channels: 3, background: '#3366cc' } }).jpeg().toBuffer())]), 'photo.jpg');
        const up = await fetch(`${server.url}/api/v1/rooms/${big}/uploads`, { method: 'POST', headers: { authorization: `Bearer ${owner.token}` }, body: form });
        const photo = ((await up.json()) as any).data;
        const texts = ['好的，我来看一下这个问题。根据日志，超时发生在第三轮。😀', 'I checked the **retry logic**: the cap is `30s`.\n\n- one\n- two', '```ts\nexport const x = ' + 'value + '.repeat(60) + '1;\n```'];
        for (let batch = 0; batch < 6; batch++) {
          const messages: Message[] = [];
          for (let i = 0; i < 250; i++) {
            const seq = stored.lastSeq + 1 + i;
            messages.push({
              message_id: randomUUID(), room_id: big, seq, timestamp: new Date(Date.UTC(2026, 0, 1) + seq * 1000).toISOString(),
              sender: 'Exporter', sender_id: room.created_by_id, role: 'user', text_content: `${texts[seq % texts.length]} #${seq}`, text_content_i18n: null,
              source_language: room.language, file_url: seq % 100 === 0 ? photo.file_url : '', file_type: seq % 100 === 0 ? photo.file_type : '',
              mentions: [], visible: true, processed: true, response_to: null, display_timezone: room.timezone, round_id: `r-${Math.floor(seq / 10)}`,
              skip_reason: null, deleted: false,
            });
          }
          await server.app.store.commitRoom(big, { messages, expectedVersion: stored.version });
          stored = (await server.app.store.loadRoom(big))!;
        }
        return big;
      }

      it('runs at most 2 exports at once: a third waits for a slot, and all three finish', async () => {
        const big = await bigRoom('Busy Room');
        const slots = exportSlots(server.app);
        slots.peak = 0;
        let sawWaiting = 0;
        const watch = setInterval(() => (sawWaiting = Math.max(sawWaiting, slots.stats.waiting)), 5);
        try {
          const results = await Promise.all([1, 2, 3].map(() => server.ok('export_chat_history', { room_id: big, format: 'pdf' }, owner.token)));
          for (const r of results) expect(r.bytes).toBeGreaterThan(100_000);
        } finally {
          clearInterval(watch);
        }
        expect(slots.peak).toBe(2);
        expect(sawWaiting).toBe(1);
        expect(slots.stats).toMatchObject({ running: 0, waiting: 0 });
      }, 180_000);

      it('exports the PDF of a large room in slices that leave the event loop free; /health answers meanwhile', async () => {
        const big = await bigRoom('Large Room');
        // How long the loop was held (CPU work between timer ticks) and its wall-clock delay,
        // while the export runs (test/helpers/loop-stall.ts says why both).
        let done = false;
        let healthChecks = 0;
        const health = (async () => {
          // One health request in flight at a time, back to back, for as long as the export runs.
          while (!done) {
            expect((await fetch(`${server.url}/api/v1/health`)).status).toBe(200);
            healthChecks++;
          }
        })();
        const { stall } = await measureLoopStall(async () => {
          try {
            const result = await server.ok('export_chat_history', { room_id: big, format: 'pdf' }, owner.token);
            expect(result.bytes).toBeGreaterThan(100_000);
          } finally {
            done = true;
            await health;
          }
        });
        expect(healthChecks).toBeGreaterThan(5);
        // As shares of the export's own time, not time limits: an export that did not yield would
        // hold the loop for all of its seconds (a share near 1); one that yields, for a sliver.
        expect(stall.heldMs / stall.tookMs).toBeLessThan(0.1);
        expect(stall.delayMaxMs / stall.tookMs).toBeLessThan(1 / 3);
      }, 180_000);
    });
  });
}
