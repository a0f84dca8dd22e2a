// The HTML export opened in Chromium with the network off: it renders like the page (messages,
// round dividers, the header table), its images show (embedded), no script of any kind runs
// (hostile message text included), nothing trips its Content-Security-Policy and it asks the
// network for nothing.
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Browser } from 'playwright-core';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromiumAvailable, launchBrowser, screenshot, watchPageErrors } from '../helpers/browser.js';
import { registerUser, startTestServer, type TestServer } from '../helpers/server.js';

const enabled = chromiumAvailable();

describe.skipIf(!enabled)('html export in a browser', { timeout: 60_000 }, () => {
  let server: TestServer;
  let browser: Browser;
  let file: string;

  beforeAll(async () => {
    server = await startTestServer({ turnTimeoutMs: 60_000 });
    const owner = await registerUser(server, 'Viewer');
    const roomId = (await server.ok('create_room', { room_name: 'Html Room', room_description: '网页导出' }, owner.token)).room.room_id;
    await server.ok('set_announcement', { room_id: roomId, user_announcement: '离线也能打开' }, owner.token);
    const png = await sharp({ create: { width: 320, height: 200, channels: 3, background: '#e02020' } }).png().toBuffer();
    const form = new FormData();
    form.append('file', new Blob([new Uint8Array(png)]), 'red.png');
    const up = await fetch(`${server.url}/api/v1/rooms/${roomId}/uploads`, { method: 'POST', headers: { authorization: `Bearer ${owner.token}` }, body: form });
    const { file_url, file_type } = ((await up.json()) as any).data;
    await server.ok('send_message', { room_id: roomId, text_content: '看图 😀', file_url, file_type }, owner.token);
    await server.ok('send_message', { room_id: roomId, text_content: '## 标题\n\n**粗体** `code` [link](https://example.com)\n\n```js\nconsole.log("hi")\n```' }, owner.token);
    const hostile = [
      '<img src=x onerror="window.__pwned=1">',
      '<script>window.__pwned=2</script>',
      '[click](javascript:window.__pwned=3)',
      '<a href="javascript:window.__pwned=4">a</a> <svg onload="window.__pwned=5"></svg>',
      '![remote](https://example.com/tracker.png)',
      '<iframe src="https://example.com"></iframe> <style>body{display:none}</style>',
    ].join('\n\n');
    await server.ok('send_message', { room_id: roomId, text_content: hostile }, owner.token);
    const data = await server.ok('export_chat_history', { room_id: roomId, format: 'html' }, owner.token);
    const html = await (await fetch(server.url + data.url)).text();
    file = path.join(server.dataDir, 'export.html');
    await writeFile(file, html);
    browser = await launchBrowser();
  });

  afterAll(async () => {
    await browser?.close();
    await server?.stop();
  });

  it('renders offline with its images, runs no script, trips no CSP and requests nothing', async () => {
    const context = await browser.newContext({ offline: true, viewport: { width: 1000, height: 900 } });
    const page = await context.newPage();
    const errors: string[] = [];
    watchPageErrors(page, 'export', errors);
    const requests: string[] = [];
    page.on('request', (req) => {
      if (!req.url().startsWith('file:') && !req.url().startsWith('data:')) requests.push(req.url());
    });
    // Runs before the document's own content, outside its CSP (it is the test's, not the page's).
    await page.addInitScript(() => {
      (window as any).__violations = [];
      document.addEventListener('securitypolicyviolation', (e) => (window as any).__violations.push(`${e.violatedDirective} ${e.blockedURI}`));
    });
    await page.goto(pathToFileURL(file).href);
    await page.waitForLoadState('load');

    await expect(page.locator('h1.export-title').textContent()).resolves.toBe('Html Room');
    await expect(page.locator('.export-meta').textContent()).resolves.toContain('离线也能打开');
    expect(await page.locator('.msg-list .msg').count()).toBe(3);
    expect(await page.locator('.msg-body h2').textContent()).toBe('标题');
    expect(await page.locator('.msg-body pre code').textContent()).toContain('console.log("hi")');
    // The page's look: its stylesheet applies (avatars are coloured circles, badges are chips).
    const avatar = await page.locator('.msg .avatar').first().evaluate((el) => getComputedStyle(el).backgroundColor);
    expect(avatar).not.toBe('rgba(0, 0, 0, 0)');

    const img = page.locator('img.attachment-preview');
    expect(await img.count()).toBe(1);
    const shown = await img.evaluate((el: HTMLImageElement) => ({ ok: el.complete && el.naturalWidth === 320, w: el.getBoundingClientRect().width, src: el.src.slice(0, 22) }));
    expect(shown.ok).toBe(true);
    expect(shown.w).toBeGreaterThan(100);
    expect(shown.src).toBe('data:image/png;base64,');

    expect(await page.evaluate(() => (window as any).__pwned)).toBeUndefined();
    expect(await page.evaluate(() => document.scripts.length)).toBe(0);
    expect(await page.locator('iframe, svg, img:not(.attachment-preview), style:not(head style)').count()).toBe(0);
    // Links to javascript: lost their href; the remote picture is a link, never loaded.
    expect(await page.locator('a[href^="javascript"]').count()).toBe(0);
    expect(await page.locator('a[href="https://example.com/tracker.png"]').count()).toBe(1);
    await page.locator('.msg').last().hover();
    expect(await page.evaluate(() => (window as any).__violations)).toEqual([]);
    expect(errors).toEqual([]);
    expect(requests).toEqual([]);
    await screenshot(page, 'export-html');
    await context.close();
  });
});
