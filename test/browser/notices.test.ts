// The page shows the room's standing notice (`system_announcement`, SPEC §4) above the person's
// announcement, each agent's capabilities, and the engine's records and guard notice in the
// reader's language whatever the room's language (SPEC §6: readers rely on skip_reason).
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromiumAvailable, launchBrowser, screenshot, watchPageErrors } from '../helpers/browser.js';
import { registerUser, startTestServer, type TestServer } from '../helpers/server.js';

const enabled = chromiumAvailable();

describe.skipIf(!enabled)('standing notice, capabilities and records on the page', { timeout: 120_000 }, () => {
  let server: TestServer;
  let browser: Browser;
  const pageErrors: string[] = [];

  beforeAll(async () => {
    server = await startTestServer({ turnTimeoutMs: 60_000 });
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await server?.stop();
    expect(pageErrors).toEqual([]);
  });

  async function open(token: string, name: string, roomId: string, lang: 'zh-CN' | 'en'): Promise<Page> {
    const ctx = await browser.newContext({ viewport: { width: 1366, height: 768 } });
    await ctx.addInitScript(
      ([t, n, l]) => {
        localStorage.setItem('agent-chatroom.session', JSON.stringify({ token: t, name: n }));
        localStorage.setItem('agent-chatroom.lang', l!);
      },
      [token, name, lang],
    );
    const page = await ctx.newPage();
    watchPageErrors(page, name, pageErrors);
    await page.goto(`${server.url}/#/room/${encodeURIComponent(roomId)}`);
    await page.locator('.room-head').waitFor();
    return page;
  }

  it('shows system_announcement above the announcement, live, and members’ capabilities', async () => {
    const person = await registerUser(server, 'NoticeHost');
    const agent = await server.ok('register_agent', { name: 'CapableBot', capabilities: ['SQL tuning', 'code review'] });
    const { room } = await server.ok('create_room', { room_name: 'Notice room' }, person.token);
    await server.ok('join_room', { room_id: room.room_id }, agent.token);
    await server.ok('set_announcement', { room_id: room.room_id, user_announcement: 'Agenda: the schema' }, person.token);
    const page = await open(person.token, 'NoticeHost', room.room_id, 'zh-CN');

    const caps = page.locator('.member[data-name="CapableBot"] .member-cap');
    await expect.poll(() => caps.allTextContents()).toEqual(['SQL tuning', 'code review']);
    const notice = page.locator('.system-announcement');
    expect(await notice.isHidden()).toBe(true);

    await server.ok('set_room_status', { room_id: room.room_id, system_status: 'paused' }, person.token);
    await notice.waitFor({ state: 'visible' });
    await expect.poll(() => notice.textContent()).toContain('NoticeHost');
    // Above the person's announcement, which still shows.
    const noticeBox = (await notice.boundingBox())!;
    const annBox = (await page.locator('.announcement').boundingBox())!;
    expect(noticeBox.y + noticeBox.height).toBeLessThanOrEqual(annBox.y);
    await expect.poll(() => page.locator('.announcement-text').textContent()).toBe('Agenda: the schema');
    await screenshot(page, 'system-announcement');

    await server.ok('set_room_status', { room_id: room.room_id, system_status: 'active' }, person.token);
    await notice.waitFor({ state: 'hidden' });
    await page.context().close();
  });

  it('renders an English room’s records and guard notice in the reader’s language', async () => {
    const person = await registerUser(server, 'ReaderZh');
    const agent = await server.ok('register_agent', { name: 'EnBot' });
    const { room } = await server.ok('create_room', { room_name: 'English records', language: 'en' }, person.token);
    await server.ok('join_room', { room_id: room.room_id }, agent.token);
    await server.ok('update_room', { room_id: room.room_id, max_auto_rounds: 1 }, person.token);
    await server.ok('send_message', { room_id: room.room_id, text_content: 'first' }, person.token);
    await server.ok('skip_response', { room_id: room.room_id, reason: 'nothing new' }, agent.token);
    await server.ok('send_message', { room_id: room.room_id, text_content: 'second' }, person.token);
    await server.ok('send_message', { room_id: room.room_id, text_content: 'an answer' }, agent.token);
    const stored = (await server.ok('get_messages', { room_id: room.room_id }, person.token)).messages;
    expect(stored.find((m: any) => m.skip_reason === 'skip').text_content).toBe('(skipped: nothing new)');
    expect(stored.find((m: any) => m.role === 'system').text_content).toMatch(/^Automatic round limit/);

    const zh = await open(person.token, 'ReaderZh', room.room_id, 'zh-CN');
    await zh.locator('.note-skip', { hasText: 'EnBot 跳过了本轮：nothing new' }).waitFor();
    await zh.locator('.note-system', { hasText: '已达到自动轮次上限（1 轮）' }).waitFor();
    await zh.context().close();

    const en = await open(person.token, 'ReaderZh', room.room_id, 'en');
    await en.locator('.note-skip', { hasText: 'EnBot skipped this turn: nothing new' }).waitFor();
    await en.locator('.note-system', { hasText: 'Automatic round limit reached (1 round).' }).waitFor();
    await en.context().close();
  });
});
