// What a new user met on the page (issue 41): the statistics table fits the sidebar at 1366×768
// in both languages, a saved session the server no longer knows is named at the sign-in form,
// the language button is named in the language it offers, English counts agree with their
// number, and the add-agent dialog shows the lines of public/agent-commands.js.
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// @ts-expect-error plain JS module of the page (checked by tsconfig.public.json)
import { agentCommands } from '../../public/agent-commands.js';
import { chromiumAvailable, EchoAgent, launchBrowser, screenshot, until, watchPageErrors } from '../helpers/browser.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

const enabled = chromiumAvailable();

/** Cells of the statistics table that are cut: wider than their box, or outside the scroller. */
function clippedCells(page: Page): Promise<string[]> {
  return page.locator('#room-side .stats').evaluate((section) => {
    const scroller = section.querySelector('.stats-scroll') as HTMLElement;
    const box = scroller.getBoundingClientRect();
    const side = (section.closest('#room-side') as HTMLElement).getBoundingClientRect();
    const cut: string[] = [];
    if (scroller.scrollWidth > scroller.clientWidth + 1) cut.push(`the table scrolls: ${scroller.scrollWidth} px in ${scroller.clientWidth} px`);
    for (const cell of Array.from(section.querySelectorAll('th, td')) as HTMLElement[]) {
      const r = cell.getBoundingClientRect();
      const label = `${cell.tagName} "${cell.textContent}"`;
      if (cell.scrollWidth > cell.clientWidth + 1 || cell.scrollHeight > cell.clientHeight + 1) cut.push(`${label} overflows its cell`);
      if (r.right > Math.min(box.right, side.right) + 1 || r.left < box.left - 1) cut.push(`${label} is outside the sidebar (${r.left}–${r.right} of ${box.left}–${box.right})`);
      // The header's text box (set vertically) stays inside its cell.
      const head = cell.querySelector('.stats-head');
      if (head) {
        const t = head.getBoundingClientRect();
        if (t.right > r.right + 1 || t.left < r.left - 1 || t.top < r.top - 1 || t.bottom > r.bottom + 1) cut.push(`${label}'s text leaves its cell`);
      }
    }
    return cut;
  });
}

describe.skipIf(!enabled)('first contact with the page', { timeout: 90_000 }, () => {
  let server: TestServer;
  let browser: Browser;
  let ctx: BrowserContext;
  let page: Page;
  let token = '';
  let roomId = '';
  const agents: EchoAgent[] = [];
  const pageErrors: string[] = [];

  beforeAll(async () => {
    server = await startTestServer({ turnTimeoutMs: 5000 });
    browser = await launchBrowser();
    ctx = await browser.newContext({ viewport: { width: 1366, height: 768 }, locale: 'zh-CN', deviceScaleFactor: 2 });
    ctx.setDefaultTimeout(12_000);
    page = await ctx.newPage();
    watchPageErrors(page, 'mia', pageErrors);
  });

  afterAll(async () => {
    await Promise.all(agents.map((a) => a.close()));
    await browser?.close();
    await server?.stop();
  });

  it('a saved session the server no longer knows: the sign-in form says so', async () => {
    const stale = await ctx.newPage();
    watchPageErrors(stale, 'stale', pageErrors);
    await stale.addInitScript(() => {
      localStorage.setItem('agent-chatroom.session', JSON.stringify({ token: 'ut_no-longer-known', name: 'Ghost' }));
    });
    await stale.goto(server.url);
    await stale.locator('#reg-title').waitFor();
    const notice = stale.getByRole('alert').filter({ hasText: '保存的登录已失效' });
    await notice.waitFor();
    expect(await notice.textContent()).toContain('请重新登录');
    // The language switch repaints it; signing in makes it go.
    await stale.locator('#lang-btn').click();
    await stale.getByRole('alert').filter({ hasText: 'Your saved session is no longer valid' }).waitFor();
    await screenshot(stale, 'web-stale-session');
    await stale.locator('#lang-btn').click();
    await stale.close();

    // A fresh page without a saved session shows no such notice.
    await page.goto(server.url);
    const form = page.locator('form', { has: page.locator('#reg-title') });
    await form.waitFor();
    expect(await page.locator('.login-notice').count()).toBe(0);
    await form.locator('input[name=name]').fill('Mia');
    await form.locator('button[type=submit]').click();
    await page.locator('.view-rooms').waitFor();
    token = await page.evaluate(() => JSON.parse(localStorage.getItem('agent-chatroom.session')!).token as string);
  });

  it('names the language button in the language it offers', async () => {
    const toEnglish = page.getByRole('button', { name: 'Switch to English', exact: true });
    expect(await toEnglish.textContent()).toBe('English');
    expect(await toEnglish.getAttribute('lang')).toBe('en');
    await toEnglish.click();
    const toChinese = page.getByRole('button', { name: '切换到中文', exact: true });
    expect(await toChinese.textContent()).toBe('中文');
    expect(await toChinese.getAttribute('lang')).toBe('zh-CN');
    await toChinese.click();
    await page.getByRole('button', { name: 'Switch to English', exact: true }).waitFor();
  });

  it('fits the statistics table into the sidebar at 1366×768, in Chinese and in English', async () => {
    const { room } = await server.ok('create_room', { room_name: 'First contact', language: 'en' }, token);
    roomId = room.room_id;
    agents.push(await EchoAgent.start(server.url, 'Claude', roomId, 'reviewer'), await EchoAgent.start(server.url, 'Codex', roomId, 'coder'));
    await server.ok('send_message', { room_id: roomId, text_content: 'Hello both, please echo.' }, token);
    await page.goto(`${server.url}/#/room/${encodeURIComponent(roomId)}`);
    await page.locator('.msg-list .msg[data-sender="Codex"]').first().waitFor();
    const stats = page.locator('#room-side .stats');
    await until(async () => (await stats.locator('tbody tr[data-name=Codex] td[data-key=turns_answered]').textContent()) === '1', 10_000, 'the statistics of the round');

    for (const [lang, answered] of [
      ['zh-CN', '已回答'],
      ['en', 'Answered'],
    ] as const) {
      if ((await page.evaluate(() => document.documentElement.lang)) !== lang) await page.locator('#lang-btn').click();
      await stats.locator('thead th[data-key=turns_answered]', { hasText: answered }).waitFor();
      await stats.locator('tbody tr[data-name=Codex]').waitFor();
      await stats.scrollIntoViewIfNeeded();
      expect(await clippedCells(page), lang).toEqual([]);
      // Every column is there, median included.
      expect(await stats.locator('thead th[scope=col]').count()).toBe(7);
      expect(await stats.locator('tbody tr[data-name=Claude] td[data-key=median_answer_ms]').textContent()).toMatch(/^\d+\.\d (秒|s)$/);
      await until(async () => (await page.locator('.toast').count()) === 0, 10_000, 'the toasts to go (for the screenshot)');
      await screenshot(stats, `sidebar-stats-1366-${lang}`);
    }
  });

  it('counts in English agree with their number: "1 message found"', async () => {
    expect(await page.evaluate(() => document.documentElement.lang)).toBe('en');
    for (const a of agents) a.mode = 'skip';
    await server.ok('send_message', { room_id: roomId, text_content: 'a zebra walks by' }, token);
    await page.locator('.msg-list .msg-body', { hasText: 'a zebra walks by' }).waitFor();
    const search = async (query: string) => {
      await page.locator('#search-input').fill(query);
      await page.locator('#search-input').press('Enter');
      await page.locator('.search-status', { hasText: /found|No matching/ }).waitFor();
      return page.locator('.search-status').textContent();
    };
    expect(await search('zebra')).toBe('1 message found (newest first)');
    // The first message and both echoes of it.
    expect(await search('please echo')).toBe('3 messages found (newest first)');
  });

  it('offers the add-agent lines of agent-commands.js, flags once, new runners and the channel included', async () => {
    await page.locator('#add-agent-btn').click();
    const dialog = page.locator('.agent-dialog');
    await dialog.waitFor();
    await dialog.locator('input[name=agent_name]').fill('Alpha');
    for (const preset of ['claude', 'codex', 'gemini'] as const) {
      await dialog.locator('select[name=preset]').selectOption(preset);
      const want = agentCommands({ url: server.url, roomId, name: 'Alpha', preset, hasPassword: false });
      const shown = async (key: string) => (await dialog.locator(`[data-key=${key}] code`).textContent()) ?? '';
      expect(await shown('cli')).toBe(`agent-chatroom cli-agent --url ${server.url} --room ${roomId} --name Alpha --preset ${preset}`);
      expect(await shown('acp')).toBe(`agent-chatroom acp-agent --url ${server.url} --room ${roomId} --name Alpha --preset ${preset}`);
      expect(await shown('a2a')).toBe(`agent-chatroom a2a-agent --url ${server.url} --room ${roomId} --name Alpha --card <CARD_URL>`);
      expect(await shown('channel-launch')).toBe('claude --dangerously-load-development-channels server:chatroom');
      expect(JSON.parse(await shown('channel-json'))).toEqual({
        mcpServers: { chatroom: { command: 'agent-chatroom', args: ['mcp', '--url', server.url], env: { CHATROOM_TOKEN: '${CHATROOM_TOKEN:-}' } } },
      });
      for (const [key, line] of [
        ['cli', want.cli],
        ['acp', want.acp],
        ['a2a', want.a2a],
        ['agent', want.agent],
        ['claude-mcp', want.claudeMcp],
      ]) {
        expect(await shown(key!), key).toBe(line);
      }
      // No token on any command line.
      expect(await dialog.locator('code').allTextContents()).not.toContain(expect.stringContaining('--token'));
    }
    expect(await dialog.locator('[data-key=channel-prompt] code').textContent()).toContain('Do not call wait_for_turn');
    await screenshot(page, 'web-add-agent-dialog-en');
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'detached' });
    expect(await page.evaluate(() => [...((window as unknown as { __i18nMissing: Set<string> }).__i18nMissing ?? [])])).toEqual([]);
    expect(pageErrors).toEqual([]);
  });
});
