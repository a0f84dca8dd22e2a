// The page over a room of 100,000 messages (DATA_DIR written directly in the storage format by
// bench/dataset.ts): it opens at the newest messages, jumps to a search hit near the oldest,
// never holds more than ~500 message elements, and its JS heap stays small after scrolling
// through 10,000 messages (measured with the DevTools protocol). How fast it opens and jumps is
// a benchmark's question, not the suite's: bench/page-long-history.ts times the same steps
// (BENCHMARKS.md, "Web page (round two)").
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeDataset } from '../../bench/dataset.js';
import { chromiumAvailable, launchBrowser, screenshot, watchPageErrors } from '../helpers/browser.js';
import { startTestServer, tempDataDir, type TestServer } from '../helpers/server.js';

const MESSAGES = 100_000;
const MAX_ELEMENTS = 500;
const enabled = chromiumAvailable();

function elementCount(page: Page): Promise<number> {
  return page.locator('.msg-list [data-seq]').count();
}

/** True when the element of message `seq` is inside the message scroller's visible box. */
function inScroller(page: Page, seq: number): Promise<boolean> {
  return page.evaluate((s) => {
    const el = document.querySelector(`.msg-list [data-seq="${s}"]`);
    const box = document.querySelector('.msg-scroll')?.getBoundingClientRect();
    if (!el || !box) return false;
    const r = el.getBoundingClientRect();
    return r.bottom > box.top && r.top < box.bottom;
  }, seq);
}

// Generous: the page is slow while the whole suite runs; the time itself is the bench's.
const SHOWN = { timeout: 60_000 };

describe.skipIf(!enabled)('web page over a long history', { timeout: 180_000 }, () => {
  let server: TestServer;
  let browser: Browser;
  let page: Page;
  let roomId = '';
  let token = '';
  const pageErrors: string[] = [];
  const numbers: Record<string, number> = {};

  beforeAll(async () => {
    const dataDir = await tempDataDir();
    const data = await writeDataset(dataDir, 1, MESSAGES);
    roomId = data.roomIds[0]!;
    token = data.token;
    server = await startTestServer({ dataDir });
    // The server's first read of the log (lazy parsing) would otherwise land in the room open.
    await server.ok('get_messages', { room_id: roomId, limit: 1 }, token);
    browser = await launchBrowser();
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 820 } });
    await ctx.addInitScript(
      ([t]) => localStorage.setItem('agent-chatroom.session', JSON.stringify({ token: t, name: 'bench' })),
      [token],
    );
    page = await ctx.newPage();
    watchPageErrors(page, 'bench', pageErrors);
    // The room list first, as a person arrives; then the room is opened by its address.
    await page.goto(`${server.url}/#/rooms`);
    await page.locator('.view-rooms').waitFor();
  });

  afterAll(async () => {
    console.log(`[web long history] ${JSON.stringify(numbers)}`);
    await browser?.close();
    await server?.stop();
  });

  it('opens the room at its newest messages, with a bounded number of elements', async () => {
    await page.evaluate((id) => (location.hash = `#/room/${encodeURIComponent(id)}`), roomId);
    // The newest message is in the scroller's view (the list opened at the bottom), the oldest
    // is not rendered at all.
    await expect.poll(() => inScroller(page, MESSAGES), SHOWN).toBe(true);
    expect(await page.locator('.msg-list [data-seq="1"]').count()).toBe(0);
    expect(await elementCount(page)).toBeLessThanOrEqual(MAX_ELEMENTS);
    await screenshot(page, 'web-long-history-newest');
  });

  it('jumps to a search hit near the oldest message', async () => {
    // Message 3's own text (written by bench/dataset.ts) as the query.
    const log = await readFile(path.join(server.dataDir, 'room_messages', `${roomId}.jsonl`), 'utf8');
    const third = JSON.parse(log.slice(0, 20_000).split('\n')[2]!) as { seq: number; text_content: string };
    expect(third.seq).toBe(3);
    await page.locator('#search-input').fill(third.text_content);
    await page.locator('.search-form button[type=submit]').click();
    const hit = page.locator('.search-results .search-hit[data-seq="3"]');
    await hit.waitFor();
    await hit.click();
    // Message 3 is in the scroller's view, the newest one no longer rendered.
    await expect.poll(() => inScroller(page, 3), SHOWN).toBe(true);
    expect(await page.locator(`.msg-list [data-seq="${MESSAGES}"]`).count()).toBe(0);
    expect(await elementCount(page)).toBeLessThanOrEqual(MAX_ELEMENTS);
    // Back to the newest messages from far away.
    await page.locator('.new-pill').click();
    await page.locator(`.msg-list [data-seq="${MESSAGES}"]`).waitFor({ state: 'visible' });
  });

  it('scrolls back through 10,000 messages with at most ~500 elements and a JS heap ≤ 100 MB', async () => {
    const started = Date.now();
    const maxElements = await page.evaluate(async (target) => {
      const scroller = document.querySelector('.msg-scroll') as HTMLElement;
      const seqs = () => Array.from(document.querySelectorAll<HTMLElement>('.msg-list [data-seq]'), (e) => Number(e.dataset.seq));
      const minSeq = () => Math.min(...seqs());
      const start = minSeq();
      let most = 0;
      while (start - minSeq() < target) {
        const before = minSeq();
        // Scrolled to the top, the page loads older messages: wait for the list to change (a
        // page that stopped loading fails on the test's timeout).
        await new Promise<void>((resolve) => {
          const observer = new MutationObserver(() => {
            if (minSeq() === before) return;
            observer.disconnect();
            resolve();
          });
          observer.observe(document.querySelector('.msg-list')!, { childList: true, subtree: true });
          scroller.scrollTop = 0;
        });
        most = Math.max(most, seqs().length);
      }
      return most;
    }, 10_000);
    numbers.scroll_10k_ms = Date.now() - started;
    numbers.max_elements = maxElements;
    expect(maxElements).toBeLessThanOrEqual(MAX_ELEMENTS);

    const cdp = await page.context().newCDPSession(page);
    await cdp.send('HeapProfiler.collectGarbage');
    const heap = (await cdp.send('Runtime.getHeapUsage')) as { usedSize: number; totalSize: number };
    numbers.heap_used_mb = Math.round((heap.usedSize / 1024 / 1024) * 10) / 10;
    expect(heap.usedSize).toBeLessThanOrEqual(100 * 1024 * 1024);
    expect(pageErrors).toEqual([]);
  });
});
