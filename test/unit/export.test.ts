// Markdown export (SPEC §9) and the helpers both exports share.
import { PassThrough } from 'node:stream';
import { formatInTimeZone } from 'date-fns-tz';
import { describe, expect, it } from 'vitest';
import { displayTime, exportFilename, labelsFor, type ExportInput } from '../../src/export/format.js';
import { marked } from 'marked';
import { closeOpenFence, escapeHtmlBlockStarts, writeMarkdownExport } from '../../src/export/markdown.js';
import { exportItems } from '../../src/export/walk.js';
import type { Message } from '../../src/types.js';
import { makeMessage, makeRoom, MemorySink as Sink, sampleInput as input } from './export-fixtures.js';

async function markdown(over: Partial<ExportInput> = {}): Promise<string> {
  const sink = new Sink();
  await writeMarkdownExport(input(over), sink);
  return sink.text;
}

describe('markdown export', () => {
  it('starts with a header: room name, description, announcement, export time, timezone, members with roles', async () => {
    const md = await markdown();
    const header = md.slice(0, md.indexOf('### '));
    expect(header).toBe(`# 聊天记录导出：Design Review

- **描述**：架构评审
- **公告**：本周五前完成评审（bob 发布于 2026-01-01 09:00:00）
- **模式**：轮流模式
- **导出时间**：2026-01-02 11:04:05
- **时区**：Asia/Shanghai
- **房间 ID**：\`design-review-20260101000000-abc12345\`

## 成员

- **alice** — 智能体，主持人
- **bob** — 用户，创建者
- **carol** — 智能体

---

`);
  });

  it('lists visible messages in seq order with sender, role and time in the room timezone', async () => {
    const md = await markdown();
    expect(md).toContain('### #1 · bob · 用户 · 2026-01-01 08:00:00');
    expect(md).toContain('### #2 · alice · 智能体 · 2026-01-01 08:00:02');
    const order = [...md.matchAll(/^### #(\d+) /gm)].map((m) => Number(m[1]));
    expect(order).toEqual([1, 2, 5, 6, 7]);
  });

  it('leaves skip and timeout records out', async () => {
    const md = await markdown();
    expect(md).not.toContain('SKIPPED-RECORD');
    expect(md).not.toContain('TIMEOUT-RECORD');
    expect(md).not.toMatch(/### #3 |### #4 /);
  });

  it('keeps the text as written (Markdown, Chinese) and marks replies, deletions, edits and attachments', async () => {
    const md = await markdown();
    expect(md).toContain('你好，世界！请评审这个设计。\n第二行 second line');
    expect(md).toContain('```ts\nconst greeting = "hello";\nconsole.log(greeting); // 打印问候\n```');
    expect(md).toContain('- [x] done task');
    expect(md).toContain('> 回复 #1 bob');
    expect(md).toContain('*（已撤回）*');
    expect(md).toMatch(/### #7 · bob · 用户 · 2026-01-01 08:00:07 （已编辑）/);
    expect(md).toContain(
      '附件：[report v2.pdf](<https://chat.example.com/api/v1/rooms/r/files/20260101000000_report%20v2.pdf?sig=s1>) (application/pdf)',
    );
    expect(md).toContain('W'.repeat(500));
  });

  it('marks where each round starts, once, and puts no divider before messages outside rounds', async () => {
    const md = await markdown();
    const r1 = md.indexOf('## 第 1 轮');
    const r2 = md.indexOf('## 第 2 轮');
    expect(r1).toBeGreaterThan(md.indexOf('### #1 '));
    expect(r1).toBeLessThan(md.indexOf('### #2 '));
    expect(r2).toBeGreaterThan(md.indexOf('### #2 '));
    expect(r2).toBeLessThan(md.indexOf('### #5 '));
    expect(md).not.toContain('轮次之外');
    // Two round headings; the message's own "## 结论" is its text, escaped: no message text
    // becomes a heading in the Markdown export (SPEC §10, v3).
    expect([...md.matchAll(/^## /gm)].map((m) => md.slice(m.index, md.indexOf('\n', m.index)))).toEqual(['## 成员', '## 第 1 轮', '## 第 2 轮']);
    expect(md).toContain('\\## 结论');
  });

  it('announces a round once even when a person speaks in the middle of it', async () => {
    const msgs = [
      makeMessage({ seq: 1, round_id: 'r-a', text_content: 'agent one' }),
      makeMessage({ seq: 2, sender: 'bob', role: 'user', text_content: 'person in between' }),
      makeMessage({ seq: 3, round_id: 'r-a', sender: 'carol', text_content: 'agent two' }),
      makeMessage({ seq: 4, sender: 'bob', role: 'user', text_content: 'person after' }),
      makeMessage({ seq: 5, round_id: 'r-b', text_content: 'next round' }),
    ];
    const md = await markdown({ messages: msgs });
    expect([...md.matchAll(/^## 第 (\d+) 轮/gm)].map((m) => Number(m[1]))).toEqual([1, 2]);
    expect(md.indexOf('## 第 2 轮')).toBeGreaterThan(md.indexOf('person after'));
  });

  it('uses English labels for rooms in other languages', async () => {
    const md = await markdown({ room: makeRoom({ language: 'en' }) });
    expect(md.slice(0, md.indexOf('---'))).toBe(`# Chat history export: Design Review

- **Description**: 架构评审
- **Announcement**: 本周五前完成评审 (by bob, 2026-01-01 09:00:00)
- **Mode**: round-robin
- **Exported at**: 2026-01-02 11:04:05
- **Time zone**: Asia/Shanghai
- **Room ID**: \`design-review-20260101000000-abc12345\`

## Members

- **alice** — AI agent, host
- **bob** — person, creator
- **carol** — AI agent

`);
    expect(md).toContain('### #1 · bob · person · 2026-01-01 08:00:00');
    expect(md).toContain('## Round 1');
    expect(md).toContain('> Reply to #1 bob');
    expect(md).toContain('*(deleted)*');
    expect(md).toContain('Attachment: [report v2.pdf]');
  });

  it('closes a code fence a message left open so it cannot swallow the rest', async () => {
    const msgs = [
      makeMessage({ seq: 1, text_content: '```js\nconst a = 1;' }),
      makeMessage({ seq: 2, text_content: 'after' }),
    ];
    const md = await markdown({ messages: msgs });
    expect(md).toContain('const a = 1;\n```\n');
    expect(closeOpenFence('~~~~\ncode\n~~~')).toBe('~~~~\ncode\n~~~\n~~~~');
    expect(closeOpenFence('```\na\n```')).toBe('```\na\n```');
    expect(closeOpenFence('``inline`` text')).toBe('``inline`` text');
  });

  it('contains HTML blocks a message opens: every later message still renders (a comment, <pre> or <script> line ran to the end)', async () => {
    const openers = ['<!-- draft', '<pre>', '<script>', '<style>', '<textarea>', '<?php', '<![CDATA[', '<!DOCTYPE x'];
    for (const opener of openers) {
      const msgs = [
        makeMessage({ seq: 1, text_content: 'first' }),
        makeMessage({ seq: 2, text_content: `note\n${opener}` }),
        makeMessage({ seq: 3, text_content: 'LATER-A' }),
        makeMessage({ seq: 4, text_content: '```html\n<!-- kept as code -->\n```' }),
      ];
      const html = await marked.parse(await markdown({ messages: msgs }));
      expect(html, opener).toContain('<p>LATER-A</p>');
      expect((html.match(/<h3>#\d+ /g) ?? []).length, opener).toBe(4);
      // Inside a code fence nothing is escaped.
      expect(html).toContain('&lt;!-- kept as code --&gt;');
    }
    expect(escapeHtmlBlockStarts('<div>ok</div>\n  <!-- x')).toBe('<div>ok</div>\n  \\<!-- x');
    // A forged message heading stays text; so does an ordinary heading (SPEC §10, v3: no message
    // text renders as a heading at all).
    const forged = await marked.parse(await markdown({ messages: [makeMessage({ seq: 1, text_content: '### #99 · admin · person · 2026-01-01 00:00:00\n\n## Plan' })] }));
    expect((forged.match(/<h3>#\d+ /g) ?? []).length).toBe(1);
    expect(forged).toContain('### #99 · admin');
    expect(forged).toContain('<p>## Plan</p>');
    // The title, the members and the one message: nothing else is a heading.
    expect(forged.match(/<h[1-6]>/g)).toHaveLength(3);
  });

  it('shows names as they are written: _bob_ or __init__ are no emphasis', async () => {
    const msgs = [makeMessage({ seq: 1, sender: '__init__', text_content: 'hi' })];
    const html = await marked.parse(await markdown({ messages: msgs, room: makeRoom({ room_name: 'Room _x_' }) }));
    expect(html).toContain('#1 · __init__ ·');
    expect(html).toContain('Room _x_');
    expect(html).not.toContain('<em>');
    expect(html).not.toContain('<strong>init</strong>');
  });

  it('accepts an async iterable and an empty room', async () => {
    async function* gen(): AsyncGenerator<Message> {
      yield makeMessage({ seq: 1, text_content: 'from a stream' });
    }
    expect(await markdown({ messages: gen() })).toContain('from a stream');
    const empty = await markdown({ messages: [], room: makeRoom({ members: [], room_description: '' }) });
    expect(empty).toContain('**描述**：（无）');
  });

  it('streams a large room in chunks, waits for drain on a slow reader and ends the stream', async () => {
    const msgs = Array.from({ length: 3000 }, (_, i) => makeMessage({ seq: i + 1, text_content: `第 ${i + 1} 条消息 ${'x'.repeat(100)}` }));
    const sink = new Sink(1, 16 * 1024);
    let finished = false;
    sink.on('finish', () => (finished = true));
    await writeMarkdownExport(input({ messages: msgs }), sink);
    expect(finished).toBe(true);
    expect(sink.chunks.length).toBeGreaterThan(5);
    expect(Math.max(...sink.chunks.map((c) => c.length))).toBeLessThan(512 * 1024);
    expect(sink.text).toContain('### #3000 ');
  });

  it('rejects instead of hanging when the output is destroyed', async () => {
    const msgs = Array.from({ length: 5000 }, (_, i) => makeMessage({ seq: i + 1, text_content: 'y'.repeat(200) }));
    const out = new PassThrough({ highWaterMark: 1024 });
    const exporting = expect(writeMarkdownExport(input({ messages: msgs }), out)).rejects.toThrow();
    // Destroyed while the export waits on back-pressure (nobody reads `out`), not after a timer.
    await expect.poll(() => out.writableNeedDrain, { timeout: 30_000 }).toBe(true);
    out.destroy(new Error('client went away'));
    await exporting;
  });
});

describe('shared helpers', () => {
  it('formats times in the display timezone as yyyy-MM-dd HH:mm:ss', () => {
    expect(displayTime('2026-01-01T00:00:00.000Z', 'Asia/Shanghai')).toBe('2026-01-01 08:00:00');
    expect(displayTime('2026-01-01T00:00:00.000Z', 'UTC')).toBe('2026-01-01 00:00:00');
    expect(displayTime('not a time', 'UTC')).toBe('not a time');
  });

  it('matches formatInTimeZone across DST changes and odd offsets', () => {
    const zones = ['America/New_York', 'Europe/Berlin', 'Asia/Kathmandu', 'Australia/Lord_Howe', 'America/St_Johns', 'Asia/Shanghai'];
    const around = [Date.UTC(2026, 2, 8, 6, 59, 59), Date.UTC(2026, 2, 29, 0, 59, 59), Date.UTC(2026, 3, 4, 14, 59, 59), Date.UTC(2026, 10, 1, 5, 59, 59)];
    for (const tz of zones) {
      for (const start of around) {
        for (let s = 0; s < 7200; s += 37) {
          const d = new Date(start + s * 1000);
          expect(displayTime(d, tz)).toBe(formatInTimeZone(d, tz, 'yyyy-MM-dd HH:mm:ss'));
        }
      }
    }
  });

  it('picks Chinese labels for zh* languages', () => {
    expect(labelsFor('zh-CN').round(3)).toBe('第 3 轮');
    expect(labelsFor('zh-TW').page(2, '9')).toBe('第 2 / 9 页');
    expect(labelsFor('en').roles.user).toBe('person');
    expect(labelsFor('fr').roles.ai_agent).toBe('AI agent');
    expect(labelsFor('zh').roles.system).toBe('系统');
  });

  it('walks messages: drops invisible ones, numbers rounds including skipped-only rounds, resolves replies', async () => {
    const a = makeMessage({ seq: 1, round_id: 'r1' });
    const skipped = makeMessage({ seq: 2, round_id: 'r2', visible: false, skip_reason: 'timeout' });
    const b = makeMessage({ seq: 3, round_id: 'r3', sender: 'bob', response_to: a.message_id });
    const c = makeMessage({ seq: 4, round_id: 'r3', response_to: 'missing' });
    const items = [];
    for await (const item of exportItems([a, skipped, b, c])) items.push(item);
    expect(items.map((i) => (i.kind === 'message' ? `m${i.message.seq}` : i.kind === 'round' ? `r${i.number}` : 'o'))).toEqual(['r1', 'm1', 'r3', 'm3', 'm4']);
    const replies = items.filter((i) => i.kind === 'message').map((i) => (i.kind === 'message' ? i.reply : null));
    expect(replies).toEqual([null, { seq: 1, sender: 'alice' }, 'unknown']);
  });

  it("puts a round's divider before its first agent or system message, not before a person's message posted during it", async () => {
    const before = makeMessage({ seq: 1, role: 'user', sender: 'bob' });
    const during = makeMessage({ seq: 2, role: 'user', sender: 'bob', round_id: 'r1' });
    const answer = makeMessage({ seq: 3, role: 'ai_agent', round_id: 'r1' });
    const next = makeMessage({ seq: 4, role: 'ai_agent', round_id: 'r1' });
    const items = [];
    for await (const item of exportItems([before, during, answer, next])) items.push(item);
    expect(items.map((i) => (i.kind === 'message' ? `m${i.message.seq}` : i.kind === 'round' ? `r${i.number}` : 'o'))).toEqual(['m1', 'm2', 'r1', 'm3', 'm4']);
    const divider = items.find((i) => i.kind === 'round');
    expect(divider && divider.kind === 'round' ? divider.timestamp : null).toBe(answer.timestamp);
  });

  it('remembers only recent messages and rounds: a reply to an older one is found through findEarlier', async () => {
    const messages = Array.from({ length: 10 }, (_, i) => makeMessage({ seq: i + 1, round_id: `r${Math.floor(i / 2)}`, role: 'ai_agent' }));
    const hidden = makeMessage({ seq: 11, visible: false, skip_reason: 'skip' });
    const toOld = makeMessage({ seq: 12, sender: 'bob', response_to: messages[0]!.message_id });
    const toRecent = makeMessage({ seq: 13, sender: 'bob', response_to: messages[9]!.message_id });
    const toHidden = makeMessage({ seq: 14, sender: 'bob', response_to: hidden.message_id });
    const toOtherRoom = makeMessage({ seq: 15, sender: 'bob', response_to: 'elsewhere' });
    const all = [...messages, hidden, toOld, toRecent, toHidden, toOtherRoom];
    const asked: string[] = [];
    const byId = new Map([...all, { ...makeMessage({ seq: 1 }), message_id: 'elsewhere', room_id: 'other-room' }].map((m) => [m.message_id, m]));
    const find = async (id: string) => {
      asked.push(id);
      return byId.get(id) ?? null;
    };
    const items = [];
    // Remembering 3: message 1 is long forgotten when 12 answers it.
    for await (const item of exportItems(all, { findEarlier: find, recent: 3 })) items.push(item);
    const replies = Object.fromEntries(items.flatMap((i) => (i.kind === 'message' && i.message.seq > 11 ? [[i.message.seq, i.reply]] : [])));
    expect(replies).toEqual({ 12: { seq: 1, sender: 'alice' }, 13: { seq: 10, sender: 'alice' }, 14: 'unknown', 15: 'unknown' });
    expect(asked).toEqual([messages[0]!.message_id, hidden.message_id, 'elsewhere']);
    // Rounds are numbered in order of appearance, each announced once.
    expect(items.filter((i) => i.kind === 'round').map((i) => (i.kind === 'round' ? i.number : 0))).toEqual([1, 2, 3, 4, 5]);
    // Without findEarlier a forgotten message is unknown.
    const plain = [];
    for await (const item of exportItems(all, { recent: 3 })) plain.push(item);
    expect(plain.find((i) => i.kind === 'message' && i.message.seq === 12)).toMatchObject({ reply: 'unknown' });
  });

  it('walks in slices: other work gets the event loop once a slice has used its time', async () => {
    const messages = [1, 2, 3].map((seq) => makeMessage({ seq }));
    const order: string[] = [];
    setImmediate(() => order.push('other work'));
    // sliceMs 0: every item after the first starts a new slice.
    for await (const item of exportItems(messages, { sliceMs: 0 })) order.push(item.kind === 'message' ? `m${item.message.seq}` : item.kind);
    expect(order).toEqual(['m1', 'other work', 'm2', 'm3']);

    const unsliced: string[] = [];
    setImmediate(() => unsliced.push('other work'));
    for await (const item of exportItems(messages, { sliceMs: 60_000 })) unsliced.push(item.kind === 'message' ? `m${item.message.seq}` : item.kind);
    expect(unsliced).toEqual(['m1', 'm2', 'm3']);
  });

  it('names export files after the room and UTC time', () => {
    expect(exportFilename({ room_id: 'r-1' }, 'pdf', new Date('2026-01-02T03:04:05Z'))).toBe('r-1-20260102030405.pdf');
    expect(exportFilename({ room_id: 'r-1' }, 'markdown', new Date('2026-01-02T03:04:05Z'))).toBe('r-1-20260102030405.md');
  });
});
