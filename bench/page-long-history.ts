// The web page over a room of 100,000 messages, timed (the goals of BENCHMARKS.md "Web page
// (round two)": open at the newest messages ≤ 1 s, jump to a search hit near the oldest ≤ 1 s).
// test/browser/long-history.test.ts checks the same steps for behaviour only: speed is measured
// here, not in the suite.
//
//   npx tsx bench/page-long-history.ts [--runs 3] [--messages 100000]
//
// The server runs in its own process (bench/util.ts: dist/ when built, else tsx) on a fresh
// DATA_DIR written directly by bench/dataset.ts; Chromium is Debian's (CHROMIUM_PATH). Times are
// taken with the page's own clock: from the action until the message's element is inside the
// scroller's visible box. The room's log is read once through the API before the page opens
// (the server's cold first read is the start-up benchmark's figure) and the page's code is
// loaded once on the room list, so each run times a warm room.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { launchBrowser } from '../test/helpers/browser.js';
import { writeDataset } from './dataset.js';
import { rest, startBenchServer } from './util.js';

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1]! : fallback;
}

const RUNS = Number(arg('runs', '3'));
const MESSAGES = Number(arg('messages', '100000'));

declare function appearsAfter(action: () => void, selector: string): Promise<number>;

/**
 * Installs `appearsAfter(action, selector)` in every page: ms until the element is in view. A
 * string, not a function: tsx (esbuild's keepNames) would wrap a function's inner names in a
 * `__name` helper the page does not have.
 */
const APPEARS_AFTER = `
window.appearsAfter = (action, selector) =>
  new Promise((resolve, reject) => {
    const started = performance.now();
    action();
    const check = () => {
      const el = document.querySelector(selector);
      const box = document.querySelector('.msg-scroll')?.getBoundingClientRect();
      if (el && box) {
        const r = el.getBoundingClientRect();
        if (r.bottom > box.top && r.top < box.bottom) return resolve(Math.round(performance.now() - started));
      }
      if (performance.now() - started > 30000) return reject(new Error(selector + ' did not appear'));
      requestAnimationFrame(check);
    };
    check();
  });
`;

async function timeOneRun(url: string, roomId: string, token: string, thirdText: string): Promise<{ open_ms: number; jump_ms: number }> {
  const browser = await launchBrowser();
  try {
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 820 } });
    await ctx.addInitScript(([t]) => localStorage.setItem('agent-chatroom.session', JSON.stringify({ token: t, name: 'bench' })), [token]);
    await ctx.addInitScript({ content: APPEARS_AFTER });
    const page: Page = await ctx.newPage();
    await page.goto(`${url}/#/rooms`);
    await page.locator('.view-rooms').waitFor();
    const open_ms = await page.evaluate(
      ([id, seq]) => appearsAfter(() => (location.hash = `#/room/${encodeURIComponent(id as string)}`), `.msg-list [data-seq="${seq}"]`),
      [roomId, MESSAGES] as const,
    );
    await page.locator('#search-input').fill(thirdText);
    await page.locator('.search-form button[type=submit]').click();
    await page.locator('.search-results .search-hit[data-seq="3"]').waitFor();
    const jump_ms = await page.evaluate(() =>
      appearsAfter(() => (document.querySelector('.search-hit[data-seq="3"]') as HTMLElement).click(), '.msg-list [data-seq="3"]'),
    );
    return { open_ms, jump_ms };
  } finally {
    await browser.close();
  }
}

const dataDir = await mkdtemp(join(tmpdir(), 'chatroom-bench-page-'));
try {
  const data = await writeDataset(dataDir, 1, MESSAGES);
  const roomId = data.roomIds[0]!;
  // Message 3's own text (written by bench/dataset.ts) is the search query.
  const log = await readFile(join(dataDir, 'room_messages', `${roomId}.jsonl`), 'utf8');
  const third = JSON.parse(log.split('\n', 3)[2]!) as { seq: number; text_content: string };
  const server = await startBenchServer({ DATA_DIR: dataDir });
  try {
    await rest(server.url, 'get_messages', { room_id: roomId, limit: 1 }, data.token);
    const runs: Array<{ open_ms: number; jump_ms: number }> = [];
    for (let i = 0; i < RUNS; i++) {
      runs.push(await timeOneRun(server.url, roomId, data.token, third.text_content));
      console.log(`run ${i + 1}/${RUNS}: ${JSON.stringify(runs[i])}`);
    }
    const range = (k: 'open_ms' | 'jump_ms') => `${Math.min(...runs.map((r) => r[k]))}–${Math.max(...runs.map((r) => r[k]))} ms`;
    console.log(`[page long history] ${MESSAGES} messages, ${RUNS} runs: open ${range('open_ms')} (goal ≤ 1,000), jump ${range('jump_ms')} (goal ≤ 1,000)`);
  } finally {
    await server.stop();
  }
} finally {
  await rm(dataDir, { recursive: true, force: true });
}
// undici's pool (bench/util.ts rest) would keep the process alive.
process.exit(0);
