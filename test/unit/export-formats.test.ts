// The JSON room format and its import (validation and building), the HTML export's
// sanitising and embedding, the export slots (at most 2 at once) and which upload URLs are a
// room's own.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { AppError } from '../../src/errors.js';
import type { ExportInput } from '../../src/export/format.js';
import { sanitizeMany, writeHtmlExport } from '../../src/export/html.js';
import { buildImport, checkShape, importedFileUrl, MAX_IMPORT_MESSAGES, parseRoomFile, type ImportContext } from '../../src/export/import.js';
import { ROOM_FORMAT, writeJsonExport } from '../../src/export/json.js';
import { ExportSlots } from '../../src/export/slots.js';
import { isOwnUpload, ownUploadPath, parseUploadUrl } from '../../src/export/uploads.js';
import type { Member } from '../../src/types.js';
import { makeMember, makeMessage, makeRoom, ROOM_ID, sampleMessages } from './export-fixtures.js';

class Sink extends Writable {
  chunks: Buffer[] = [];
  override _write(chunk: Buffer, _enc: BufferEncoding, cb: (err?: Error | null) => void): void {
    this.chunks.push(chunk);
    cb();
  }
  get text(): string {
    return Buffer.concat(this.chunks).toString('utf8');
  }
}

function input(over: Partial<ExportInput> = {}): ExportInput {
  return {
    room: makeRoom({ history_rounds: ['round-1', 'round-2', 'round-empty'] }),
    messages: sampleMessages(),
    exportedAt: new Date('2026-01-02T03:04:05.000Z'),
    timezone: 'Asia/Shanghai',
    ...over,
  };
}

async function jsonOf(over: Partial<ExportInput> = {}): Promise<any> {
  const sink = new Sink();
  await writeJsonExport(input(over), sink);
  return JSON.parse(sink.text);
}

async function htmlOf(over: Partial<ExportInput> = {}, opts = {}): Promise<string> {
  const sink = new Sink();
  await writeHtmlExport(input(over), sink, opts);
  return sink.text;
}

const creator: Member = makeMember({ name: 'importer', role: 'user', participant_id: 'id-importer' });

function ctx(over: Partial<ImportContext> = {}): ImportContext {
  let n = 0;
  return {
    roomId: 'design-review-20260301000000-newroom01',
    creator,
    now: new Date('2026-03-01T00:00:00.000Z'),
    newId: () => `new-${++n}`,
    ...over,
  };
}

async function expectValidationError(fn: () => unknown, pattern?: RegExp): Promise<void> {
  try {
    await fn();
  } catch (err) {
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).code).toBe('validation_error');
    if (pattern) expect((err as AppError).message).toMatch(pattern);
    return;
  }
  throw new Error('expected a validation_error');
}

describe('json export', () => {
  it('is the versioned room format: settings without secrets, members, every message, rounds', async () => {
    const doc = await jsonOf();
    expect(doc.format).toBe(ROOM_FORMAT);
    expect(doc.version).toBe(1);
    expect(doc.exported_at).toBe('2026-01-02T03:04:05.000Z');
    expect(doc.room.room_name).toBe('Design Review');
    expect(doc.room.settings.max_auto_rounds).toBe(10);
    expect(Object.keys(doc.room)).not.toContain('password_hash');
    expect(doc.members.map((m: any) => [m.name, m.role, m.is_host])).toEqual([
      ['alice', 'ai_agent', true],
      ['bob', 'user', false],
      ['carol', 'ai_agent', false],
    ]);
    expect(Object.keys(doc.members[0])).not.toContain('participant_id');
    // Every message, skip records included, in seq order.
    expect(doc.messages.map((m: any) => m.seq)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(doc.messages[2]).toMatchObject({ visible: false, skip_reason: 'skip', text_content: 'SKIPPED-RECORD' });
    expect(doc.rounds).toEqual([
      { round_id: 'round-1', number: 1, first_seq: 2, last_seq: 4, started_at: doc.messages[1].timestamp },
      { round_id: 'round-2', number: 2, first_seq: 5, last_seq: 6, started_at: doc.messages[4].timestamp },
      { round_id: 'round-empty', number: 3, first_seq: null, last_seq: null, started_at: null },
    ]);
  });

  it('never carries the private retry key, and maps attachment links', async () => {
    const messages = [makeMessage({ seq: 1, client_msg_id: 'secret-retry-key', file_url: `/api/v1/files/${ROOM_ID}/1700000000000_a.png`, file_type: 'image/png' })];
    const sink = new Sink();
    await writeJsonExport(input({ messages, fileUrl: (u) => `https://chat.example.com${u}?sig=1` }), sink);
    expect(sink.text).not.toContain('secret-retry-key');
    expect(JSON.parse(sink.text).messages[0].file_url).toBe(`https://chat.example.com/api/v1/files/${ROOM_ID}/1700000000000_a.png?sig=1`);
  });

  it('writes an empty room as valid JSON', async () => {
    const doc = await jsonOf({ messages: [], room: makeRoom() });
    expect(doc.messages).toEqual([]);
    expect(doc.rounds).toEqual([]);
  });
});

describe('import: validation', () => {
  it('reads its own export back', async () => {
    const file = await parseRoomFile(await jsonOf(), 32_000);
    expect(file.messages).toHaveLength(7);
  });

  it('refuses what is not a version-1 room export', async () => {
    const good = await jsonOf();
    await expectValidationError(() => parseRoomFile(null, 32_000));
    await expectValidationError(() => parseRoomFile([good], 32_000));
    await expectValidationError(() => parseRoomFile('{"format":"agent-chatroom.room"}', 32_000));
    await expectValidationError(() => parseRoomFile({ ...good, format: 'other' }, 32_000), /format/);
    await expectValidationError(() => parseRoomFile({ ...good, version: 2 }, 32_000), /version 2 is not supported/);
    await expectValidationError(() => parseRoomFile({ ...good, extra: 1 }, 32_000));
    await expectValidationError(() => parseRoomFile({ ...good, messages: 'x' }, 32_000));
  });

  it('refuses prototype-polluting keys anywhere, before anything else reads the value', async () => {
    const good = await jsonOf();
    for (const key of ['__proto__', 'constructor', 'prototype']) {
      const hostile = JSON.parse(JSON.stringify(good));
      hostile.messages[1] = JSON.parse(`{"${key}": {"polluted": true}, ${JSON.stringify(hostile.messages[1]).slice(1)}`);
      await expectValidationError(() => parseRoomFile(hostile, 32_000), new RegExp(`Key "${key}"`));
    }
    const nested = JSON.parse(JSON.stringify(good));
    nested.room.settings = JSON.parse('{"__proto__": {"isAdmin": true}}');
    await expectValidationError(() => parseRoomFile(nested, 32_000), /__proto__/);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(({} as Record<string, unknown>).isAdmin).toBeUndefined();
  });

  it('refuses deep nesting without exhausting the stack', async () => {
    let deep: unknown = {};
    for (let i = 0; i < 100_000; i++) deep = { a: deep };
    await expectValidationError(() => checkShape(deep), /nested too deeply/);
  });

  it('caps message count and text length, and checks names by the SPEC rules', async () => {
    const good = await jsonOf();
    const tooLong = JSON.parse(JSON.stringify(good));
    tooLong.messages[0].text_content = 'x'.repeat(101);
    await expectValidationError(() => parseRoomFile(tooLong, 100), /text_content/);
    const many = JSON.parse(JSON.stringify(good));
    many.messages = Array.from({ length: MAX_IMPORT_MESSAGES + 1 }, (_, i) => ({ ...good.messages[0], seq: i + 1, message_id: `m${i}` }));
    await expectValidationError(() => parseRoomFile(many, 32_000), /messages/);
    const badNames = ['has space', 'a@b', '', 'x'.repeat(33), 'Alice\u034f', 'Al\u200bice', '\u0301\u0301'];
    for (const name of badNames) {
      const doc = JSON.parse(JSON.stringify(good));
      doc.messages[0].sender = name;
      await expectValidationError(() => parseRoomFile(doc, 32_000), /sender/);
    }
    const badRoom = JSON.parse(JSON.stringify(good));
    badRoom.room.room_name = '1 starts with a digit';
    await expectValidationError(() => parseRoomFile(badRoom, 32_000), /room_name/);
    const badZone = JSON.parse(JSON.stringify(good));
    badZone.room.timezone = 'Mars/Olympus';
    await expectValidationError(() => parseRoomFile(badZone, 32_000), /timezone/);
  });

  it('refuses messages out of order, twice the same id, and system messages from someone else', async () => {
    const good = await jsonOf();
    const swapped = JSON.parse(JSON.stringify(good));
    [swapped.messages[0], swapped.messages[1]] = [swapped.messages[1], swapped.messages[0]];
    await expectValidationError(() => parseRoomFile(swapped, 32_000), /seq order/);
    const dup = JSON.parse(JSON.stringify(good));
    dup.messages[1].message_id = dup.messages[0].message_id;
    await expectValidationError(() => parseRoomFile(dup, 32_000), /appears twice/);
    const fake = JSON.parse(JSON.stringify(good));
    fake.messages[0].role = 'system';
    await expectValidationError(() => parseRoomFile(fake, 32_000), /system/);
    const hidden = JSON.parse(JSON.stringify(good));
    hidden.messages[0].visible = false;
    await expectValidationError(() => parseRoomFile(hidden, 32_000), /skip record/);
  });

  it('refuses times that do not exist (Date.parse would move 2026-02-30 to 2026-03-02) and keeps real ones in any offset', async () => {
    const good = await jsonOf();
    for (const bad of ['2026-02-30T10:00:00Z', '2026-04-31T00:00:00Z', '2026-01-01T24:00:00Z', '2026-01-01T10:60:00Z', '2026-01-01T10:00:00+15:00']) {
      const file = JSON.parse(JSON.stringify(good));
      file.messages[0].timestamp = bad;
      await expectValidationError(() => parseRoomFile(file, 32_000), /valid time/);
    }
    for (const fine of ['2024-02-29T23:59:59.999Z', '2026-03-08T02:30:00-05:00', '2026-01-01T00:00:00+08:00']) {
      const file = JSON.parse(JSON.stringify(good));
      file.messages[0].timestamp = fine;
      await expect(parseRoomFile(file, 32_000)).resolves.toBeDefined();
    }
  });
});

describe('import: the new room', () => {
  it('renumbers seqs, re-links replies and rounds to new ids, keeps authors by name', async () => {
    const file = await parseRoomFile(await jsonOf(), 32_000);
    const { room, messages } = await buildImport(file, ctx());
    expect(room.room_id).toBe('design-review-20260301000000-newroom01');
    expect(room.created_by).toBe('importer');
    expect(room.created_by_id).toBe('id-importer');
    expect(room.members).toHaveLength(1);
    expect(room.members[0]).toMatchObject({ name: 'importer', is_host: true });
    expect(room.password_hash).toBeNull();
    expect(room.current_round).toBeNull();
    expect(room.processed_through_seq).toBe(7);
    // The file's announcement is not taken over (SPEC §10).
    expect(room.announcement).toEqual({ user_announcement: '', announcement_publisher: '', timestamp: null, system_announcement: '' });
    expect(messages.map((m) => m.seq)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(new Set(messages.map((m) => m.message_id)).size).toBe(7);
    expect(messages.every((m) => m.room_id === room.room_id && m.processed)).toBe(true);
    // Replies point at the new id of the message they answered.
    expect(messages[1]!.response_to).toBe(messages[0]!.message_id);
    // Rounds: new ids, in order, and the room's history lists them.
    expect(messages[1]!.round_id).not.toBe('round-1');
    expect(messages[1]!.round_id).toBe(messages[2]!.round_id);
    expect(room.history_rounds).toEqual([messages[1]!.round_id, messages[4]!.round_id, expect.any(String)]);
    // Authors: kept as names only; every message is imported and nobody's (SPEC §10).
    expect(messages[0]).toMatchObject({ sender: 'bob', sender_id: null, role: 'user', imported: true });
    expect(messages[1]).toMatchObject({ sender: 'alice', sender_id: null, imported: true });
    expect(messages.every((m) => m.sender_id === null && m.imported === true)).toBe(true);
    expect(messages[2]).toMatchObject({ visible: false, skip_reason: 'skip' });
  });

  it('keeps only absolute http(s) attachment links', () => {
    expect(importedFileUrl('https://files.example.com/a.png?sig=1')).toBe('https://files.example.com/a.png?sig=1');
    expect(importedFileUrl('http://host/x')).toBe('http://host/x');
    expect(importedFileUrl('/api/v1/files/other-room/1700000000000_a.png')).toBe('');
    expect(importedFileUrl('javascript:alert(1)')).toBe('');
    expect(importedFileUrl('data:text/html,<script>')).toBe('');
  });
});

describe('html export', () => {
  it('is one self-contained file under a strict CSP: no script, no request, the inline style by its hash', async () => {
    const html = await htmlOf();
    expect(html.startsWith('<!doctype html>')).toBe(true);
    const csp = /<meta http-equiv="Content-Security-Policy" content="([^"]+)">/.exec(html)?.[1];
    expect(csp).toMatch(/default-src 'none'/);
    expect(csp).toMatch(/img-src data:/);
    expect(csp).toMatch(/style-src 'sha256-[A-Za-z0-9+/=]+'/);
    expect(csp).not.toMatch(/script-src|unsafe-inline/);
    expect(html).not.toMatch(/<script|<link|<iframe|\sstyle=|\son\w+=/i);
    expect(html).toContain('你好，世界！请评审这个设计。');
    expect(html).toContain('<h2>结论</h2>');
    expect(html).toContain('智能体');
    expect(html).not.toContain('SKIPPED-RECORD');
  });

  it('sanitises hostile message text', async () => {
    const messages = [
      makeMessage({ seq: 1, text_content: '<img src=x onerror=alert(1)> <script>alert(2)</script> <a href="javascript:alert(3)">x</a>' }),
      makeMessage({ seq: 2, text_content: '[bad](javascript:alert(4)) [ok](https://example.com/ok) ![pic](https://example.com/p.png) <svg onload=alert(5)>' }),
      makeMessage({ seq: 3, text_content: '<b>bold</b> <details><summary>more</summary>hidden</details> <iframe src="https://x"></iframe>' }),
    ];
    const html = await htmlOf({ messages });
    const body = html.slice(html.indexOf('<ol class="msg-list'));
    // What is markup (not text shown as text): only harmless tags, no handlers, no script URLs.
    const tags = [...body.matchAll(/<([a-z0-9]+)([^>]*)>/gi)];
    for (const [, name, attrs] of tags) {
      expect(['ol', 'li', 'span', 'div', 'time', 'p', 'a', 'b', 'details', 'summary', 'br']).toContain(name!.toLowerCase());
      expect(attrs).not.toMatch(/\son\w+=|javascript:|style=/i);
    }
    expect(body).toContain('&lt;script&gt;alert(2)&lt;/script&gt;');
    expect(body).toContain('<a href="https://example.com/ok" target="_blank" rel="noopener noreferrer nofollow">ok</a>');
    // An image in the text would be a request: a link to it instead.
    expect(body).toContain('<a href="https://example.com/p.png" target="_blank" rel="noopener noreferrer nofollow">[图片: pic]</a>');
    expect(body).toContain('<b>bold</b>');
  });

  it('sanitises many messages in one pass without one spilling into the next', async () => {
    expect(sanitizeMany(['<p><details><summary>x</summary>open <b>bold', '<p>second</p>', '</b></p>after', '<p onclick="x()">c</p>'])).toEqual([
      '<p></p><details><summary>x</summary>open <b>bold</b></details>',
      '<p>second</p>',
      '<p></p>after',
      '<p>c</p>',
    ]);
    const messages = [
      makeMessage({ seq: 1, text_content: '<details><summary>more</summary>\n\nnever closed **x**' }),
      makeMessage({ seq: 2, text_content: 'the **next** message' }),
    ];
    const html = await htmlOf({ messages });
    const second = html.slice(html.indexOf('id="m2"'));
    expect(second).toContain('the <strong>next</strong> message');
    // The first message's <details> is closed inside its own list item.
    const first = html.slice(html.indexOf('id="m1"'), html.indexOf('id="m2"'));
    expect(first.split('<details>').length).toBe(first.split('</details>').length);
  });

  it("embeds the room's own images up to the size limit and links the rest", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'export-html-'));
    const small = join(dir, 'small.png');
    const big = join(dir, 'big.jpg');
    const fake = join(dir, 'fake.png');
    await sharp({ create: { width: 40, height: 30, channels: 3, background: '#ff0000' } }).png().toFile(small);
    await sharp({ create: { width: 1200, height: 900, channels: 3, background: '#00ff00' } }).jpeg({ quality: 100 }).toFile(big);
    writeFileSync(fake, '<svg onload="alert(1)"></svg>');
    const url = (n: string) => `/api/v1/files/${ROOM_ID}/1700000000000_${n}`;
    const files: Record<string, string> = { [url('small.png')]: small, [url('big.jpg')]: big, [url('fake.png')]: fake };
    const messages = ['small.png', 'big.jpg', 'fake.png'].map((n, i) => makeMessage({ seq: i + 1, text_content: n, file_url: url(n), file_type: 'image/png' }));
    const html = await htmlOf(
      { messages, fileUrl: (u) => `https://chat.example.com${u}?sig=1`, ownUpload: (u) => files[u] ?? null },
      { imageMaxBytes: 4096 },
    );
    const imgs = [...html.matchAll(/<img class="attachment-preview" alt="([^"]+)" src="data:(image\/\w+);base64,/g)].map((m) => [m[1], m[2]]);
    expect(imgs).toEqual([['small.png', 'image/png']]);
    for (const n of ['small.png', 'big.jpg', 'fake.png']) expect(html).toContain(`href="https://chat.example.com${url(n)}?sig=1"`);
  });
});

describe('export slots', () => {
  it('runs at most 2 at once; the third waits and runs when one finishes', async () => {
    const slots = new ExportSlots(2, 8);
    let running = 0;
    let peak = 0;
    const releases: Array<() => void> = [];
    const job = () =>
      slots.run(async () => {
        running++;
        peak = Math.max(peak, running);
        await new Promise<void>((resolve) => releases.push(resolve));
        running--;
      });
    const jobs = [job(), job(), job()];
    await new Promise((r) => setImmediate(r));
    expect(running).toBe(2);
    expect(slots.stats).toMatchObject({ running: 2, waiting: 1 });
    releases.shift()!();
    await expect.poll(() => releases.length).toBe(2);
    expect(running).toBe(2);
    releases.splice(0).forEach((r) => r());
    await Promise.all(jobs);
    expect(peak).toBe(2);
    expect(slots.stats).toEqual({ running: 0, waiting: 0, peak: 2 });
  });

  it('refuses with rate_limited once the waiting line is full, and frees slots after failures', async () => {
    const slots = new ExportSlots(1, 1);
    let release!: () => void;
    const first = slots.run(() => new Promise<void>((r) => (release = r)));
    const second = slots.run(async () => 'second');
    await expect(slots.run(async () => 'third')).rejects.toMatchObject({ code: 'rate_limited' });
    release();
    await first;
    expect(await second).toBe('second');
    await expect(slots.run(async () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(await slots.run(async () => 'after')).toBe('after');
    expect(slots.stats.running).toBe(0);
  });
});

describe('own uploads', () => {
  it("tells the room's own upload URLs from any other", () => {
    const own = `/api/v1/files/${ROOM_ID}/1700000000000_a%20b.png`;
    expect(parseUploadUrl(own)).toEqual({ roomId: ROOM_ID, name: '1700000000000_a b.png' });
    expect(isOwnUpload(ROOM_ID, own)).toBe(true);
    expect(ownUploadPath('/data', ROOM_ID, own)).toBe(`/data/uploads/${ROOM_ID}/1700000000000_a b.png`);
    for (const url of [
      '/api/v1/files/other-room-20260101000000-abcdefgh/1700000000000_a.png',
      `/api/v1/files/${ROOM_ID}/1700000000000_a.png?x=1`,
      `/api/v1/files/${ROOM_ID}/..%2Fother%2F1700000000000_a.png`,
      `/api/v1/files/${ROOM_ID}/%2e%2e`,
      `/api/v1/files/${ROOM_ID}/sub/1700000000000_a.png`,
      `https://chat.example.com/api/v1/files/${ROOM_ID}/1700000000000_a.png`,
      `/api/v1/files/${ROOM_ID}/1700000000000_%ZZ.png`,
    ]) {
      expect(isOwnUpload(ROOM_ID, url)).toBe(false);
      expect(ownUploadPath('/data', ROOM_ID, url)).toBeNull();
    }
  });
});
