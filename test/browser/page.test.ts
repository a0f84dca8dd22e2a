// The web page end to end: two people in two browser contexts, two echo agents on WebSocket,
// against the real server. The tests run in order and share one room.
import { readFile } from 'node:fs/promises';
import type { Browser, BrowserContext, Download, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromiumAvailable, EchoAgent, launchBrowser, screenshot, watchPageErrors } from '../helpers/browser.js';
import { eventually } from '../helpers/ws.js';
import { startTestServer, tempDataDir, type TestServer } from '../helpers/server.js';

const TURN_MS = 4000;
/**
 * The presence window (90 s in production): short, so a closed agent socket shows as offline
 * within the test. Open sockets keep everyone else online whatever its length.
 */
const PRESENCE_MS = 2000;
const HOST_PASSWORD = 'host-pass';
const ROOM_TZ = 'Asia/Shanghai';

/** What the page must show for an instant: room timezone, yyyy-MM-dd HH:mm:ss. */
function roomTime(iso: string): string {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat('en-US', {
      timeZone: ROOM_TZ,
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
      hourCycle: 'h23',
    })
      .formatToParts(new Date(iso))
      .map((p) => [p.type, p.value]),
  );
  return `${parts.year}-${parts.month}-${parts.day} ${parts.hour}:${parts.minute}:${parts.second}`;
}

async function send(page: Page, text: string): Promise<void> {
  const input = page.locator('.composer-input');
  await input.fill(text);
  await input.press('Enter');
  await eventually(async () => (await input.inputValue()) === '', 5000, `composer to clear after sending "${text.slice(0, 30)}"`);
}

/** The body of a message by `sender` containing `text` (agents' echoes contain it too). */
function message(page: Page, text: string, sender: string) {
  return page.locator(`.msg-list .msg[data-sender="${sender}"] .msg-body`, { hasText: text });
}

/** Clicks and waits for the download; fails at once with the page's error toast instead. */
async function download(page: Page, selector: string, timeoutMs = 20_000): Promise<Download> {
  const failed = page
    .locator('.toast-error')
    .first()
    .waitFor({ timeout: timeoutMs })
    .then(async () => {
      throw new Error(`the page reported: ${await page.locator('.toast-error').first().textContent()}`);
    });
  failed.catch(() => undefined);
  const [file] = await Promise.all([Promise.race([page.waitForEvent('download', { timeout: timeoutMs }), failed]), page.locator(selector).click()]);
  return file as Download;
}

async function seqsOnPage(page: Page): Promise<number[]> {
  return page.locator('.msg-list [data-seq]').evaluateAll((els) => els.map((el) => Number((el as HTMLElement).dataset.seq)));
}

async function signUp(page: Page, url: string, name: string, password?: string): Promise<void> {
  await page.goto(url);
  const form = page.locator('form', { has: page.locator('#reg-title') });
  await form.locator('input[name=name]').fill(name);
  if (password) await form.locator('input[name=password]').fill(password);
  await form.locator('button[type=submit]').click();
  await page.locator('.view-rooms').waitFor();
}

/** The page's session token (the person signed in there). */
function sessionToken(page: Page): Promise<string> {
  return page.evaluate(() => JSON.parse(localStorage.getItem('agent-chatroom.session')!).token as string);
}

/** Presses Tab until the focused element matches `selector`; fails after `maxPresses`. */
async function tabTo(page: Page, selector: string, maxPresses: number): Promise<void> {
  for (let i = 0; i < maxPresses; i++) {
    await page.keyboard.press('Tab');
    if (await focusIsOn(page, selector)) return;
  }
  const at = await page.evaluate(() => document.activeElement?.outerHTML.slice(0, 120));
  throw new Error(`${maxPresses} presses of Tab did not reach ${selector}; focus is on ${at}`);
}

function focusIsOn(page: Page, selector: string): Promise<boolean> {
  return page.evaluate((sel) => document.activeElement?.matches(sel) ?? false, selector);
}

/**
 * The visible controls (input, select, textarea, button) and those among them without an
 * accessible name: aria-labelledby, aria-label, a <label>, a button's text, or a title.
 */
async function controlNames(page: Page): Promise<{ checked: number; unnamed: string[] }> {
  return page.locator('input, select, textarea, button').evaluateAll((els) => {
    const clean = (s: string | null | undefined) => (s ?? '').replace(/\s+/g, ' ').trim();
    const nameOf = (el: HTMLElement) => {
      const by = el.getAttribute('aria-labelledby');
      if (by) return clean(by.split(/\s+/).map((id) => document.getElementById(id)?.textContent).join(' '));
      const labels = (el as HTMLInputElement).labels;
      return (
        clean(el.getAttribute('aria-label')) ||
        clean(labels ? Array.from(labels, (l) => l.textContent).join(' ') : '') ||
        (el.tagName === 'BUTTON' ? clean(el.textContent) : '') ||
        clean(el.getAttribute('title'))
      );
    };
    const shown = (els as HTMLElement[]).filter((el) => !el.closest('[aria-hidden="true"]') && el.checkVisibility());
    return { checked: shown.length, unnamed: shown.filter((el) => nameOf(el) === '').map((el) => el.outerHTML.slice(0, 160)) };
  });
}

const enabled = chromiumAvailable();

describe.skipIf(!enabled)('web page', { timeout: 60_000 }, () => {
  let server: TestServer;
  let dataDir: string;
  let browser: Browser;
  let ctxA: BrowserContext;
  let ctxB: BrowserContext;
  let alice: Page;
  let bob: Page;
  let roomId = '';
  let bobToken = '';
  let hostRoomId = '';
  const agents: EchoAgent[] = [];
  const pageErrors: string[] = [];

  beforeAll(async () => {
    dataDir = await tempDataDir();
    server = await startTestServer({ turnTimeoutMs: TURN_MS, dataDir }, { presenceWindowMs: PRESENCE_MS, socketGraceMs: PRESENCE_MS });
    browser = await launchBrowser();
    // The browsers run in another timezone than the room: the page must show room time.
    ctxA = await browser.newContext({ viewport: { width: 1280, height: 820 }, acceptDownloads: true, timezoneId: 'America/New_York', locale: 'zh-CN' });
    ctxB = await browser.newContext({ viewport: { width: 1100, height: 760 }, acceptDownloads: true, timezoneId: 'Europe/Berlin', locale: 'zh-CN' });
    // Fail with the locator's name rather than the test's timeout.
    ctxA.setDefaultTimeout(12_000);
    ctxB.setDefaultTimeout(12_000);
    alice = await ctxA.newPage();
    bob = await ctxB.newPage();
    watchPageErrors(alice, 'alice', pageErrors);
    watchPageErrors(bob, 'bob', pageErrors);
  });

  afterAll(async () => {
    await Promise.all(agents.map((a) => a.close()));
    await browser?.close();
    await server?.stop();
  });

  /** Both pages show `agent` holding the turn for `reason` and, when given, whether it may skip. */
  async function expectTurnOnBothPages(agent: string, reason: string, skip?: string): Promise<void> {
    await Promise.all(
      [alice, bob].map(async (page) => {
        await page.locator('.turnbar[data-state=turn] .turn-agent', { hasText: agent }).waitFor();
        expect(await page.locator('.turnbar .turn-reason').textContent()).toBe(reason);
        if (skip !== undefined) expect(await page.locator('.turnbar .turn-skip').textContent()).toBe(skip);
      }),
    );
  }

  it('signs up, refuses a taken name, validates and creates a room, lists rooms with locks and a filter', async () => {
    await signUp(alice, server.url, 'Alice', 'alice-password');
    await alice.locator('#me-name', { hasText: 'Alice' }).waitFor();

    // Create: a bad name is refused beside its field.
    await alice.getByRole('button', { name: '＋ 创建房间' }).click();
    await alice.locator('input[name=room_name]').fill('1 bad name');
    await alice.getByRole('button', { name: '创建并进入' }).click();
    const nameError = alice.locator('[data-field=room_name] .field-error');
    await nameError.waitFor();
    expect(await nameError.textContent()).toContain('英文字母开头');
    expect(await alice.locator('input[name=room_name]').getAttribute('aria-invalid')).toBe('true');

    await alice.locator('input[name=room_name]').fill('Design Review');
    await alice.locator('input[name=room_description]').fill('设计评审');
    await alice.getByRole('button', { name: '创建并进入' }).click();
    await alice.locator('.view-room').waitFor();
    roomId = decodeURIComponent(/#\/room\/(.+)$/.exec(alice.url())![1]!);
    await alice.locator('#room-title', { hasText: 'Design Review' }).waitFor();

    // More rooms for the list: one with a password.
    const carol = await server.ok<{ token: string }>('register_user', { name: 'Carol' });
    await server.ok('create_room', { room_name: 'Secret Lab', room_description: 'locked', password: 'open-sesame' }, carol.token);
    await server.ok('create_room', { room_name: 'Ops', room_description: '值班', interaction_mode: 'host' }, carol.token);

    // Bob: the name "alice" is taken (names are case-insensitive).
    await bob.goto(server.url);
    const reg = bob.locator('form', { has: bob.locator('#reg-title') });
    await reg.locator('input[name=name]').fill('alice');
    await reg.locator('button[type=submit]').click();
    const taken = reg.locator('[data-field=name] .field-error');
    await taken.waitFor();
    expect(await taken.textContent()).toContain('已被占用');

    await reg.locator('input[name=name]').fill('Bob');
    await reg.locator('button[type=submit]').click();
    await bob.locator('.view-rooms').waitFor();
    bobToken = await sessionToken(bob);
    expect(bobToken).toMatch(/\S{20,}/);

    const items = bob.locator('.room-item');
    await eventually(async () => (await items.count()) === 3, 5000, 'three rooms in the list');
    const design = bob.locator('.room-item', { hasText: 'Design Review' });
    expect(await design.textContent()).toContain('设计评审');
    expect(await design.textContent()).toContain('1 位成员');
    expect(await design.textContent()).toContain('轮流模式');
    expect(await bob.locator('.room-item', { hasText: 'Secret Lab' }).locator('[aria-label="需要密码"]').count()).toBe(1);
    expect(await bob.locator('.room-item', { hasText: 'Ops' }).textContent()).toContain('主持人模式');
    expect(await design.locator('[aria-label="需要密码"]').count()).toBe(0);

    await bob.locator('#room-filter').fill('secret');
    await eventually(async () => (await items.count()) === 1, 2000, 'filter to one room');
    await bob.locator('#room-filter').fill('');
    await eventually(async () => (await items.count()) === 3, 2000, 'filter cleared');
    await screenshot(bob, 'room-list');

    // A password room asks for its password; a wrong one is refused in the dialog.
    await bob.locator('.room-item', { hasText: 'Secret Lab' }).getByRole('button').click();
    const dialog = bob.locator('dialog[open]');
    await dialog.waitFor();
    await dialog.locator('input[type=password]').fill('wrong');
    await dialog.getByRole('button', { name: '加入' }).click();
    await dialog.locator('.field-error', { hasText: '密码错误' }).waitFor();
    await dialog.locator('input[type=password]').fill('open-sesame');
    await dialog.getByRole('button', { name: '加入' }).click();
    await bob.locator('#room-title', { hasText: 'Secret Lab' }).waitFor();

    // Back to the list; join Design Review.
    await bob.getByRole('link', { name: '返回房间列表' }).click();
    await bob.locator('.room-item', { hasText: 'Design Review' }).getByRole('button').click();
    await bob.locator('#room-title', { hasText: 'Design Review' }).waitFor();
    await alice.locator('.members [data-name=Bob]').waitFor();

    // Logging in with name + password elsewhere shows the same person and rooms.
    const ctxC = await browser.newContext();
    try {
      const carolPage = await ctxC.newPage();
      await carolPage.goto(server.url);
      const login = carolPage.locator('form', { has: carolPage.locator('#login-title') });
      await login.locator('input[name=name]').fill('Alice');
      await login.locator('input[name=password]').fill('not-it');
      await login.locator('button[type=submit]').click();
      await login.locator('.form-error', { hasText: '名字或密码不正确' }).waitFor();
      await login.locator('input[name=password]').fill('alice-password');
      await login.locator('button[type=submit]').click();
      await carolPage.locator('#me-name', { hasText: 'Alice' }).waitFor();
      await carolPage.locator('.room-item', { hasText: 'Design Review' }).locator('.chip-ok', { hasText: '已加入' }).waitFor();
    } finally {
      await ctxC.close();
    }
  });

  it('delivers messages live between the two people, renders Markdown, shows agents, answers and quiet skip notes', async () => {
    agents.push(await EchoAgent.start(server.url, 'Echo1', roomId, '我会复述大家说的话。'));
    agents.push(await EchoAgent.start(server.url, 'Echo2', roomId, '我是第二个复读机，也会复述。'));
    for (const page of [alice, bob]) {
      await page.locator('.members [data-name=Echo1][data-status=online]').waitFor();
      await page.locator('.members [data-name=Echo2][data-status=online]').waitFor();
    }
    expect(await alice.locator('.members [data-name=Echo1] .member-intro').textContent()).toBe('我会复述大家说的话。');
    // A round-robin room has no host badge; the creator is marked as such.
    expect(await alice.locator('.members [data-name=Alice] .badge-host').count()).toBe(0);
    expect(await alice.locator('.members [data-name=Alice] .badge-quiet').textContent()).toBe('创建者');

    await send(alice, '大家好，**今天**讨论设计');
    const onBob = bob.locator('.msg[data-sender=Alice] .msg-body', { hasText: '大家好' });
    await onBob.waitFor();
    expect(await onBob.locator('strong').textContent()).toBe('今天');
    const item = bob.locator('.msg[data-sender=Alice]', { has: bob.locator('.msg-body', { hasText: '大家好' }) });
    expect(await item.locator('.msg-sender').textContent()).toBe('Alice');
    // People carry no badge on their messages (only agents and a host-mode host do).
    expect(await item.locator('.badge').count()).toBe(0);
    // Time in the room's timezone, whatever the browser's timezone is.
    const iso = (await item.locator('time').getAttribute('datetime'))!;
    expect(await item.locator('time').textContent()).toBe(roomTime(iso));

    // Both agents answer, then (nothing new to echo) both skip: quiet notes.
    for (const page of [alice, bob]) {
      await page.locator('.msg[data-sender=Echo1] .msg-body', { hasText: 'echo: 大家好' }).waitFor();
      await page.locator('.msg[data-sender=Echo2] .msg-body', { hasText: 'echo: 大家好' }).waitFor();
      await page.locator('.note-skip', { hasText: 'Echo1 跳过了本轮' }).waitFor();
      await page.locator('.note-skip', { hasText: 'Echo2 跳过了本轮' }).waitFor();
    }
    expect(await bob.locator('.msg[data-sender=Echo1] .badge-ai_agent').first().textContent()).toBe('智能体');
    expect(await alice.locator('.round-sep').count()).toBeGreaterThanOrEqual(2);

    // The toggle hides the skip notes.
    await bob.locator('#toggle-skips').uncheck();
    expect(await bob.locator('.note-skip').first().isVisible()).toBe(false);
    await bob.locator('#toggle-skips').check();
    expect(await bob.locator('.note-skip').first().isVisible()).toBe(true);

    // "@" completion of member names, then Enter sends; Shift+Enter makes a new line.
    await alice.locator('.turnbar[data-state=idle]').waitFor();
    const input = bob.locator('.composer-input');
    await input.fill('');
    await input.pressSequentially('@Ec');
    const options = bob.locator('.mention-list [role=option]');
    await eventually(async () => (await options.count()) === 2, 2000, 'two suggestions');
    await input.press('ArrowDown');
    await input.press('Enter');
    expect(await input.inputValue()).toBe('@Echo2 ');
    await input.pressSequentially('第一行');
    await input.press('Shift+Enter');
    await input.pressSequentially('第二行');
    expect(await input.inputValue()).toBe('@Echo2 第一行\n第二行');
    await input.press('Enter');
    const mention = message(alice, '第二行', 'Bob');
    await mention.waitFor();
    expect(await mention.locator('.mention').textContent()).toBe('@Echo2');
    // The mentioned agent must answer first.
    await alice.locator('.msg[data-sender=Echo2] .msg-body', { hasText: 'echo: ＠Echo2 第一行' }).waitFor();
    await alice.locator('.turnbar[data-state=idle]').waitFor({ timeout: 10_000 });

    // Lists and code blocks render as such.
    await send(bob, '要点：\n- 首页改版\n- 配置放在 `settings.json`\n\n```js\nconst answer = 42;\n```');
    const rich = message(alice, '首页改版', 'Bob');
    await rich.locator('li', { hasText: '首页改版' }).waitFor();
    expect(await rich.locator('pre code').textContent()).toContain('const answer = 42;');
    await alice.locator('.msg[data-sender=Echo2] .msg-body', { hasText: 'echo: 要点' }).waitFor();
    await alice.locator('.turnbar[data-state=idle]').waitFor({ timeout: 10_000 });
  });

  it('turn bar follows agent_turn with a live countdown; pause stops turns, resume restarts them; pass and timeout notes', async () => {
    const [echo1, echo2] = agents as [EchoAgent, EchoAgent];
    const aliceToken = await sessionToken(alice);
    // An announcement (admin only).
    await alice.getByRole('button', { name: '房间设置' }).click();
    await alice.locator('.settings-dialog textarea[name=user_announcement]').fill('今天的议题：首页改版。请智能体简短发言。');
    await alice.locator('#settings-save').click();
    await alice.locator('.settings-dialog').waitFor({ state: 'detached' });
    await bob.locator('.announcement-text', { hasText: '首页改版' }).waitFor();
    expect(await bob.getByRole('button', { name: '房间设置' }).count()).toBe(0);

    // Long turns here, so a slow machine cannot run into a deadline by accident.
    const LONG_MS = 20_000;
    await server.ok('update_room', { room_id: roomId, turn_timeout_ms: LONG_MS }, aliceToken);
    echo1.mode = 'silent';
    echo2.mode = 'silent';
    await send(alice, '轮次测试：请依次发言');

    await expectTurnOnBothPages('Echo1', '轮转', '可以跳过');
    await Promise.all([alice, bob].map((page) => page.locator('.members [data-name=Echo1].member-speaking').waitFor()));
    const countdown = alice.locator('.turn-countdown');
    const remaining = async () => Number(await countdown.getAttribute('data-remaining-ms'));
    const readFrom = Date.now();
    const r1 = await remaining();
    expect(r1).toBeGreaterThan(5000);
    expect(r1).toBeLessThanOrEqual(LONG_MS + 500);
    expect(await countdown.textContent()).toMatch(/^00:[0-2]\d$/);
    // The countdown follows real time: once it has dropped by 700 ms, it has gone at least half
    // as fast as the clock (not stuck, not slow), and by no more than the time that passed (a
    // 250 ms tick and a clock re-estimate of slack: not fast). Rates, not time limits.
    await eventually(async () => (await remaining()) < r1 - 700, 5000, 'the countdown to move');
    const r2 = await remaining();
    const elapsed = Date.now() - readFrom;
    expect((r1 - r2) / elapsed).toBeGreaterThan(0.5);
    expect(r1 - r2).toBeLessThanOrEqual(elapsed + 400);
    expect(await countdown.textContent()).toMatch(/^00:[0-2]\d$/);
    // The other page counts down too.
    expect(Number(await bob.locator('.turn-countdown').getAttribute('data-remaining-ms'))).toBeLessThan(LONG_MS);

    // Pause: the turn keeps its holder but its timer is gone, and no new turn is issued.
    const turnsBefore = echo1.turns.length + echo2.turns.length;
    let turnEventsWhilePaused = 0;
    const stopCounting = [echo1, echo2].map((echo) => echo.client.on('agent_turn', () => turnEventsWhilePaused++));
    await alice.locator('#pause-btn').click();
    await Promise.all(
      [alice, bob].map(async (page) => {
        await page.locator('.turnbar[data-state=paused]').waitFor();
        await page.locator('.room-status', { hasText: '已暂停' }).waitFor();
      }),
    );
    expect(await alice.locator('.turn-countdown').isVisible()).toBe(false);
    expect(await alice.locator('.turnbar[data-state=paused] .turn-agent').textContent()).toBe('Echo1');
    const paused = await server.ok<{ room: { current_round: { turn: { agent: string; deadline: string | null } } } }>('get_room', { room_id: roomId }, aliceToken);
    expect(paused.room.current_round.turn).toMatchObject({ agent: 'Echo1', deadline: null });
    // A call on each agent's own socket answers after every event published before it, so a
    // turn the pause gave out would have reached the agents by now.
    await Promise.all([echo1, echo2].map((echo) => echo.client.call('get_room', { room_id: roomId })));
    stopCounting.forEach((stop) => stop());
    expect(turnEventsWhilePaused).toBe(0);
    expect(echo1.turns.length + echo2.turns.length).toBe(turnsBefore);

    // Resume: Echo1 gets a fresh turn and answers; Echo2 stays silent and an admin passes it.
    echo1.mode = 'echo';
    echo2.mode = 'echo';
    echo2.silentTurns = 1;
    await alice.locator('#pause-btn').click();
    await alice.locator('.room-status', { hasText: '进行中' }).waitFor();
    await Promise.all(
      [alice, bob].map(async (page) => {
        await page.locator('.msg[data-sender=Echo1] .msg-body', { hasText: 'echo: 轮次测试' }).waitFor();
        await page.locator('.turnbar[data-state=turn] .turn-agent', { hasText: 'Echo2' }).waitFor();
      }),
    );
    expect(echo1.turns.length).toBeGreaterThan(0);
    await alice.locator('.msg[data-sender=Echo1] .msg-body', { hasText: 'echo: 轮次测试' }).scrollIntoViewIfNeeded();
    await screenshot(alice, 'room-busy');
    expect(await bob.locator('.turn-pass').isVisible()).toBe(false);
    await alice.getByRole('button', { name: '跳过 Echo2 的本次发言' }).click();
    await Promise.all([alice, bob].map((page) => page.locator('.note-passed', { hasText: 'Echo2 的发言被管理员跳过' }).waitFor()));
    await alice.locator('.turnbar[data-state=idle]').waitFor({ timeout: 15_000 });

    // A turn that runs out leaves a quiet timeout note (1 s turns for this part).
    await server.ok('update_room', { room_id: roomId, turn_timeout_ms: 1000 }, aliceToken);
    echo2.silentTurns = 1;
    await send(alice, '超时测试');
    await Promise.all([alice, bob].map((page) => page.locator('.note-timeout', { hasText: 'Echo2 超时跳过' }).waitFor()));
    await alice.locator('.turnbar[data-state=idle]').waitFor({ timeout: 15_000 });
    await server.ok('update_room', { room_id: roomId, turn_timeout_ms: null }, aliceToken);

    // Bob is no admin, but every person member may pause and start rounds (SPEC v2 §3); the
    // settings are for admins only.
    expect(await bob.locator('#pause-btn').isVisible()).toBe(true);
    expect(await bob.locator('#start-round-btn').isVisible()).toBe(true);
    expect(await bob.locator('#settings-btn').isVisible()).toBe(false);
  });

  it('shows per-agent turn statistics matching get_room_stats, refreshed on round_end and by its button', async () => {
    const aliceToken = await sessionToken(alice);
    type Stats = {
      rounds: number;
      messages: number;
      agents: Array<{ name: string; turns_answered: number; turns_skipped: number; turns_timed_out: number; turns_passed: number; turns_offline: number; median_answer_ms: number | null }>;
    };
    const cols = ['turns_answered', 'turns_skipped', 'turns_timed_out', 'turns_passed', 'turns_offline'] as const;
    const fetchStats = async () => (await server.ok<{ stats: Stats }>('get_room_stats', { room_id: roomId }, aliceToken)).stats;
    /** What the page's table says, in the tool's shape (median as the cell's text). */
    const onPage = (page: Page) =>
      page.locator('.stats').evaluate((section) => {
        const figure = (key: string) => Number(section.querySelector(`[data-key=${key}] dd`)?.textContent);
        const rows = Array.from(section.querySelectorAll('tbody tr')).map((tr) => {
          const cell = (key: string) => tr.querySelector(`td[data-key=${key}]`)?.textContent ?? '';
          return {
            name: tr.querySelector('th[scope=row]')?.textContent ?? '',
            ...Object.fromEntries(['turns_answered', 'turns_skipped', 'turns_timed_out', 'turns_passed', 'turns_offline'].map((k) => [k, Number(cell(k))])),
            median: cell('median_answer_ms'),
          };
        });
        return { rounds: figure('rounds'), messages: figure('messages'), rows };
      });
    const expected = (s: Stats) => ({
      rounds: s.rounds,
      messages: s.messages,
      rows: s.agents.map((a) => ({
        name: a.name,
        ...Object.fromEntries(cols.map((k) => [k, a[k]])),
        median: a.median_answer_ms === null ? '—无' : `${(a.median_answer_ms / 1000).toFixed(1)} 秒`,
      })),
    });

    // The turn-bar test left answers, skips, a pass and a timeout behind; round_end refreshed the table.
    let want: ReturnType<typeof expected> | undefined;
    let got: unknown;
    await eventually(async () => {
      want = expected(await fetchStats());
      got = await onPage(alice);
      return JSON.stringify(got) === JSON.stringify(want);
    }, 5000, 'the stats table to match get_room_stats').catch((err: Error) => {
      throw new Error(`${err.message}\npage: ${JSON.stringify(got)}\ntool: ${JSON.stringify(want)}`);
    });
    const byName = Object.fromEntries(want!.rows.map((r) => [r.name, r as Record<string, unknown>]));
    expect(Object.keys(byName).sort()).toEqual(['Echo1', 'Echo2']);
    expect(byName.Echo1!.turns_answered).toBeGreaterThanOrEqual(3);
    expect(byName.Echo2!.turns_passed).toBe(1);
    expect(byName.Echo2!.turns_timed_out).toBeGreaterThanOrEqual(1);
    expect(byName.Echo1!.median).toMatch(/^\d+\.\d 秒$/);

    // A real table: column and row headers, Chinese labels.
    const table = alice.getByRole('table', { name: '各智能体的发言统计' });
    expect(await table.locator('thead th[scope=col]').allTextContents()).toEqual(['智能体', '已回答', '跳过', '超时', '管理员跳过', '离线', '回答中位时间']);
    expect(await table.locator('tbody th[scope=row]').count()).toBe(2);

    // The refresh button asks the server again.
    for (const a of agents) a.mode = 'skip';
    await server.ok('send_message', { room_id: roomId, text_content: '统计刷新测试' }, bobToken);
    await message(alice, '统计刷新测试', 'Bob').waitFor();
    await alice.locator('.turnbar[data-state=idle]').waitFor({ timeout: 10_000 });
    const refresh = alice.getByRole('button', { name: '刷新统计' });
    const [answer] = await Promise.all([alice.waitForResponse((r) => r.url().endsWith('/api/v1/tools/get_room_stats')), refresh.click()]);
    expect(answer.ok()).toBe(true);
    await eventually(async () => JSON.stringify(await onPage(alice)) === JSON.stringify(expected(await fetchStats())), 5000, 'the table to match after 刷新统计');
    expect((await onPage(alice)).messages).toBe(want!.messages + 1);
    for (const a of agents) a.mode = 'echo';

    await alice.locator('.stats').scrollIntoViewIfNeeded();
    await screenshot(alice.locator('#room-side'), 'sidebar-stats');
  });

  it('starts a round with the admin button; the turn bar shows rotation, then a mention that must be answered', async () => {
    const [echo1, echo2] = agents as [EchoAgent, EchoAgent];
    const aliceToken = await sessionToken(alice);
    // Long turns (as above) and agents that skip, so only the silent turn below is held.
    await server.ok('update_room', { room_id: roomId, turn_timeout_ms: 20_000 }, aliceToken);
    for (const a of agents) a.mode = 'skip';
    await Promise.all([alice, bob].map((page) => page.locator('.turnbar[data-state=idle]').waitFor({ timeout: 10_000 })));
    const separatorsBefore = await bob.locator('.round-sep').count();

    echo1.silentTurns = 1;
    await alice.locator('#start-round-btn').click();
    await expectTurnOnBothPages('Echo1', '轮转');
    type Round = { round_id: string; completed: boolean; kind: string; turn: { agent: string; reason: string; can_skip: boolean } | null };
    const running = (await server.ok<{ room: { current_round: Round; history_rounds: string[] } }>('get_room', { room_id: roomId }, aliceToken)).room;
    expect(running.current_round).toMatchObject({ completed: false, kind: 'rotation', turn: { agent: 'Echo1', reason: 'rotation', can_skip: true } });
    expect(running.history_rounds).not.toContain(running.current_round.round_id);

    // Passing the silent turn writes the round's first record: its separator appears.
    await alice.getByRole('button', { name: '跳过 Echo1 的本次发言' }).click();
    for (const page of [alice, bob]) {
      await page.locator(`.round-sep[data-round-id="${running.current_round.round_id}"]`).waitFor();
      await page.locator('.turnbar[data-state=idle]').waitFor({ timeout: 10_000 });
    }
    expect(await bob.locator('.round-sep').count()).toBe(separatorsBefore + 1);

    // A mentioned agent holds the turn for the mention and may not skip it.
    echo2.silentTurns = 1;
    await send(alice, '@Echo2 请说明首页改版的风险');
    await expectTurnOnBothPages('Echo2', '被提及', '必须回答');
    for (const page of [alice, bob]) expect(await page.locator('.turnbar .turn-skip').getAttribute('class')).toContain('chip-warn');
    const mentioned = (await server.ok<{ room: { current_round: Round } }>('get_room', { room_id: roomId }, aliceToken)).room;
    expect(mentioned.current_round.turn).toMatchObject({ agent: 'Echo2', reason: 'mention', can_skip: false });
    await alice.getByRole('button', { name: '跳过 Echo2 的本次发言' }).click();
    await Promise.all([alice, bob].map((page) => page.locator('.turnbar[data-state=idle]').waitFor({ timeout: 10_000 })));

    await server.ok('update_room', { room_id: roomId, turn_timeout_ms: null }, aliceToken);
    for (const a of agents) a.mode = 'echo';
  });

  it('creates a host room with a password and people muted from the form, with errors beside the fields', async () => {
    await alice.goto(`${server.url}/#/rooms`);
    await alice.getByRole('button', { name: '＋ 创建房间' }).click();
    const form = alice.locator('#create-room');
    // Two bad fields at once: each error stands beside its own field, the first gets focus.
    await form.locator('input[name=room_name]').fill('9 Host Hall');
    await form.locator('input[name=room_description]').fill('这个简介写得实在是太长太长了');
    await form.getByRole('button', { name: '创建并进入' }).click();
    await form.locator('[data-field=room_name] .field-error', { hasText: '英文字母开头' }).waitFor();
    expect(await form.locator('[data-field=room_description] .field-error').textContent()).toContain('最多 10 个汉字');
    expect(await form.locator('[data-field=interaction_mode] .field-error').isVisible()).toBe(false);
    expect(await form.locator('input[name=room_description]').getAttribute('aria-invalid')).toBe('true');
    expect(await focusIsOn(alice, 'input[name=room_name]')).toBe(true);

    await form.locator('input[name=room_name]').fill('Host Hall');
    await form.locator('input[name=room_description]').fill('主持人点名');
    await form.getByLabel('模式').selectOption('host');
    await form.getByLabel('房间密码（可选）').fill(HOST_PASSWORD);
    await form.getByLabel('允许用户发言').uncheck();
    await form.getByRole('button', { name: '创建并进入' }).click();
    await alice.locator('#room-title', { hasText: 'Host Hall' }).waitFor();
    hostRoomId = decodeURIComponent(/#\/room\/(.+)$/.exec(alice.url())![1]!);

    const aliceToken = await sessionToken(alice);
    const { room } = await server.ok<{ room: Record<string, unknown> }>('get_room', { room_id: hostRoomId }, aliceToken);
    expect(room).toMatchObject({ room_name: 'Host Hall', room_description: '主持人点名', interaction_mode: 'host', has_password: true, user_participation: false });
    expect(await alice.locator('.room-info').textContent()).toContain('仅管理员');
    // Long turns here too: the silent turn below must not time out while it is looked at.
    await server.ok('update_room', { room_id: hostRoomId, turn_timeout_ms: 20_000 }, aliceToken);
  });

  it('works by keyboard alone: filter, join button, the password dialog takes focus and Escape closes it', async () => {
    await bob.goto(`${server.url}/#/rooms`);
    const hall = bob.locator(`.room-item[data-room-id="${hostRoomId}"]`);
    await hall.waitFor();
    expect(await hall.locator('[aria-label="需要密码"]').count()).toBe(1);
    expect(await hall.textContent()).toContain('主持人模式');

    await bob.evaluate(() => (document.activeElement as HTMLElement | null)?.blur());
    await tabTo(bob, '#room-filter', 8);
    await bob.keyboard.type('host');
    await eventually(async () => (await bob.locator('.room-item').count()) === 1, 2000, 'the filter to leave Host Hall');
    const joinSelector = `.room-item[data-room-id="${hostRoomId}"] button`;
    await tabTo(bob, joinSelector, 3);

    const dialog = bob.locator('dialog[open]');
    await bob.keyboard.press('Enter');
    await dialog.waitFor();
    await eventually(() => focusIsOn(bob, 'dialog[open] input[type=password]'), 2000, 'the password field to take focus');
    await bob.keyboard.press('Escape');
    await bob.locator('dialog').waitFor({ state: 'detached' });
    expect(await focusIsOn(bob, joinSelector)).toBe(true);

    // Again, this time with the password, all from the keyboard.
    await bob.keyboard.press('Enter');
    await eventually(() => focusIsOn(bob, 'dialog[open] input[type=password]'), 5000, 'the password field to take focus');
    await bob.keyboard.type(HOST_PASSWORD);
    await bob.keyboard.press('Enter');
    await bob.locator('#room-title', { hasText: 'Host Hall' }).waitFor();
    // People may not post here; Bob is no admin.
    expect(await bob.locator('.composer-input').isDisabled()).toBe(true);
    expect(await bob.locator('.composer').textContent()).toContain('这个房间只允许智能体和管理员发言');
  });

  it('shows the host reason when the host names an agent in a host-mode room', async () => {
    const [echo1] = agents as [EchoAgent, EchoAgent];
    const aliceToken = await sessionToken(alice);
    for (const a of agents) await server.ok('join_room', { room_id: hostRoomId, password: HOST_PASSWORD }, a.token);
    for (const page of [alice, bob]) {
      await page.locator('.members [data-name=Echo2][data-status=online]').waitFor();
      await page.locator('.members [data-name=Alice] .badge-host').waitFor();
    }

    echo1.silentTurns = 1;
    await send(alice, '@Echo1 请先介绍议程');
    await expectTurnOnBothPages('Echo1', '主持', '必须回答');
    const { room } = await server.ok<{ room: { current_round: { kind: string; turn: unknown } } }>('get_room', { room_id: hostRoomId }, aliceToken);
    expect(room.current_round).toMatchObject({ kind: 'host', turn: { agent: 'Echo1', reason: 'host', can_skip: false } });
    await alice.getByRole('button', { name: '跳过 Echo1 的本次发言' }).click();
    // A person host waits for no one: the room goes idle.
    await Promise.all([alice, bob].map((page) => page.locator('.turnbar[data-state=idle]').waitFor({ timeout: 10_000 })));
  });

  it('names every visible control on the room list and in the room', async () => {
    const expectNamed = async (page: Page, where: string) => {
      const { checked, unnamed } = await controlNames(page);
      expect(checked, `controls found on ${where}`).toBeGreaterThan(4);
      expect(unnamed, `unnamed controls on ${where}`).toEqual([]);
    };
    // The admin's room view has the most controls (pause, start round, announcement, pass).
    await expectNamed(alice, 'the room (admin)');
    await expectNamed(bob, 'the room');
    await alice.goto(`${server.url}/#/rooms`);
    await alice.locator('.room-item').first().waitFor();
    await alice.getByRole('button', { name: '＋ 创建房间' }).click();
    await alice.locator('#create-room input[name=room_name]').waitFor();
    await expectNamed(alice, 'the room list with the create form');

    // Back to the shared room for the tests below.
    for (const page of [alice, bob]) {
      await page.goto(`${server.url}/#/room/${encodeURIComponent(roomId)}`);
      await page.locator('#room-title', { hasText: 'Design Review' }).waitFor();
    }
  });

  it('renders hostile Markdown inert: no script runs, no handlers, no javascript: links', async () => {
    const hostile =
      'look <img src=x onerror="window.__xss=1"> and [click me](javascript:window.__xss=2) ' +
      '<a href="javascript:window.__xss=3" onclick="window.__xss=4">a2</a> <script>window.__xss=5</script> ' +
      '<svg onload="window.__xss=6"></svg> and [safe link](https://example.com/page)';
    await send(bob, hostile);
    for (const page of [alice, bob]) {
      const body = message(page, 'safe link', 'Bob');
      await body.waitFor();
      // An injected image would have started loading "x" when the message rendered; once a fetch of
      // the same address has failed, its onerror would have run.
      await page.evaluate(() => fetch('x').then(() => undefined, () => undefined));
      await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve))));
      expect(await page.evaluate(() => (window as any).__xss)).toBeUndefined();
      expect(await page.locator('.msg-list [onerror], .msg-list [onclick], .msg-list [onload]').count()).toBe(0);
      expect(await page.locator('.msg-list a[href^="javascript:" i]').count()).toBe(0);
      expect(await page.locator('.msg-list script, .msg-list svg[onload]').count()).toBe(0);
      // Raw HTML is shown as text, not parsed.
      expect(await body.textContent()).toContain('<img src=x onerror=');
      const safe = body.locator('a', { hasText: 'safe link' });
      expect(await safe.getAttribute('href')).toBe('https://example.com/page');
      expect(await safe.getAttribute('target')).toBe('_blank');
      expect(await safe.getAttribute('rel')).toContain('noopener');
      // Clicking the defanged link does nothing either.
      await body.locator('a', { hasText: 'click me' }).click();
      expect(await page.evaluate(() => (window as any).__xss)).toBeUndefined();
    }
  });

  it('sends an attachment that the other person can download', async () => {
    await bob.locator('.composer input[type=file]').setInputFiles({ name: 'notes.txt', mimeType: 'text/plain', buffer: Buffer.from('会议纪要 v1\n') });
    await bob.locator('.file-chip', { hasText: 'notes.txt' }).waitFor();
    await send(bob, '附件：会议纪要');
    const link = alice.locator('.msg', { hasText: '附件：会议纪要' }).locator('a.attachment');
    await link.waitFor();
    expect(await link.textContent()).toContain('notes.txt');
    const [download] = await Promise.all([alice.waitForEvent('download'), link.click()]);
    expect(download.suggestedFilename()).toBe('notes.txt');
    expect(await readFile((await download.path())!, 'utf8')).toBe('会议纪要 v1\n');
  });

  it('pages older history by scrolling up and jumps to search hits', async () => {
    const aliceToken = await sessionToken(alice);
    const { room } = await server.ok<{ room: { room_id: string } }>('create_room', { room_name: 'Archive Hall', timezone: 'UTC' }, aliceToken);
    for (let i = 1; i <= 70; i++) {
      await server.ok('send_message', { room_id: room.room_id, text_content: `历史消息 #${String(i).padStart(3, '0')}` }, aliceToken);
    }
    await alice.goto(`${server.url}/#/room/${encodeURIComponent(room.room_id)}`);
    await message(alice, '历史消息 #070', 'Alice').waitFor();
    // The newest page first, in a room with its own timezone (UTC).
    const firstSeqs = await seqsOnPage(alice);
    expect(firstSeqs[firstSeqs.length - 1]).toBe(70);
    const first = alice.locator('.msg-list .msg').first();
    expect(await first.locator('time').textContent()).toBe(new Date((await first.locator('time').getAttribute('datetime'))!).toISOString().slice(0, 19).replace('T', ' '));

    // Scrolling up shows older messages down to the first, consecutive, without duplicates.
    await alice.locator('.msg-scroll').evaluate((el) => (el.scrollTop = 0));
    await message(alice, '历史消息 #001', 'Alice').waitFor();
    expect(await seqsOnPage(alice)).toEqual(Array.from({ length: 70 }, (_, i) => i + 1));

    await alice.reload();
    await message(alice, '历史消息 #070', 'Alice').waitFor();
    await alice.locator('#search-input').fill('#005');
    await alice.locator('#search-input').press('Enter');
    const hit = alice.locator('.search-results .search-hit');
    await eventually(async () => (await hit.count()) === 1, 5000, 'one search hit');
    expect(await hit.locator('mark').textContent()).toBe('#005');
    await hit.click();
    await alice.locator('.msg.flash[data-seq="5"]').waitFor();

    await alice.goto(`${server.url}/#/room/${encodeURIComponent(roomId)}`);
    await alice.locator('#room-title', { hasText: 'Design Review' }).waitFor();
  });

  it('exports the history as Markdown and PDF downloads', async () => {
    const md = await download(alice, '#export-md');
    expect(md.suggestedFilename()).toMatch(/\.md$/);
    const text = await readFile((await md.path())!, 'utf8');
    expect(text).toContain('Design Review');
    expect(text).toContain('大家好');

    const pdf = await download(alice, '#export-pdf');
    expect(pdf.suggestedFilename()).toMatch(/\.pdf$/);
    const bytes = await readFile((await pdf.path())!);
    expect(bytes.subarray(0, 5).toString('latin1')).toBe('%PDF-');
  });

  it('shows a banner when the server goes away and resumes after a restart without a gap or a duplicate', async () => {
    await alice.locator('.turnbar[data-state=idle]').waitFor({ timeout: 10_000 });
    for (const a of agents) a.mode = 'skip';
    const port = server.port;
    // Bob's browser is offline while the server restarts: messages posted meanwhile can only
    // reach him by the resume (subscribe after_seq). Alice reconnects whenever it is back.
    await server.stop();
    for (const page of [alice, bob]) {
      await page.locator('#conn-banner:not([hidden])', { hasText: '连接已断开' }).waitFor({ timeout: 5000 });
    }
    await ctxB.setOffline(true);
    server = await startTestServer({ turnTimeoutMs: TURN_MS, dataDir, port }, { presenceWindowMs: PRESENCE_MS, socketGraceMs: PRESENCE_MS });
    const posted: number[] = [];
    for (const n of [1, 2, 3]) {
      const { message: m } = await server.ok<{ message: { seq: number } }>('send_message', { room_id: roomId, text_content: `断线期间的消息 ${n}` }, bobToken);
      posted.push(m.seq);
    }
    // Bob must still be cut off: a WebSocket his page opens now fails (so the messages above can
    // reach him only through the resume), and his page has not connected.
    const probe = await bob.evaluate(
      () =>
        new Promise<string>((resolve) => {
          const ws = new WebSocket(`${location.origin.replace(/^http/, 'ws')}/ws`);
          ws.onopen = () => (ws.close(), resolve('open'));
          ws.onerror = () => resolve('failed');
        }),
    );
    expect(probe).toBe('failed');
    expect(await bob.locator('#conn-dot').getAttribute('data-state')).not.toBe('open');
    expect(await message(bob, '断线期间的消息 1', 'Bob').count()).toBe(0);
    await ctxB.setOffline(false);

    for (const page of [alice, bob]) {
      await page.locator('#conn-dot[data-state=open]').waitFor({ timeout: 15_000 });
      await message(page, '断线期间的消息 3', 'Bob').waitFor();
    }
    await bob.locator('#conn-banner[hidden]').waitFor({ state: 'attached', timeout: 5000 });

    await send(alice, '重连之后的消息');
    await message(bob, '重连之后的消息', 'Alice').waitFor();

    // Every page holds exactly the server's messages from its first loaded seq on: no gap, no double.
    for (const page of [alice, bob]) {
      let seen: number[] = [];
      let serverSeqs: number[] = [];
      await eventually(async () => {
        const { messages } = await server.ok<{ messages: Array<{ seq: number }> }>('get_messages', { room_id: roomId, limit: 200 }, bobToken);
        serverSeqs = messages.map((m) => m.seq);
        seen = await seqsOnPage(page);
        const expected = serverSeqs.filter((s) => s >= seen[0]!);
        return JSON.stringify(seen) === JSON.stringify(expected);
      }, 8000, 'the page to hold every message once').catch((err: Error) => {
        throw new Error(`${err.message}\npage:   ${seen.join(',')}\nserver: ${serverSeqs.join(',')}`);
      });
      const ids = await page.locator('.msg-list [data-message-id]').evaluateAll((els) => els.map((el) => (el as HTMLElement).dataset.messageId));
      expect(new Set(ids).size).toBe(ids.length);
      for (const n of [1, 2, 3]) expect(await message(page, `断线期间的消息 ${n}`, 'Bob').count()).toBe(1);
    }
    expect([...posted].sort((a, b) => a - b)).toEqual(posted);
    await screenshot(alice, 'room-after-restart');
  });

  it('shows an agent whose socket closed as offline on both pages once the presence window has passed', async () => {
    const echo2 = agents[1]!;
    const heading = async (page: Page) => (await page.locator('#members-heading').textContent()) ?? '';
    for (const page of [alice, bob]) await page.locator('.members [data-name=Echo2][data-status=online]').waitFor();
    const before = await heading(alice);
    await echo2.close();
    for (const page of [alice, bob]) {
      await page.locator('.members [data-name=Echo2][data-status=offline]').waitFor({ timeout: PRESENCE_MS + 8000 });
      expect(await page.locator('.members [data-name=Echo2] .status-dot').getAttribute('aria-label')).toBe('离线');
      expect(await page.locator('.members [data-name=Echo1]').getAttribute('data-status')).toBe('online');
    }
    // One fewer online in the heading, e.g. "成员（4 人，4 在线）" → "成员（4 人，3 在线）".
    const online = (text: string) => Number(/(\d+) 在线/.exec(text)?.[1]);
    expect(online(await heading(alice))).toBe(online(before) - 1);
    const { room } = await server.ok<{ room: { members: Array<{ name: string; status: string }> } }>('get_room', { room_id: roomId }, bobToken);
    expect(room.members.find((m) => m.name === 'Echo2')?.status).toBe('offline');
  });

  it('works on a phone-sized screen with the member panel behind a button', async () => {
    const phone = await ctxA.newPage();
    watchPageErrors(phone, 'phone', pageErrors);
    await phone.setViewportSize({ width: 390, height: 844 });
    await phone.goto(`${server.url}/#/room/${encodeURIComponent(roomId)}`);
    await message(phone, '重连之后的消息', 'Alice').waitFor();
    const toggle = phone.getByRole('button', { name: /成员与工具/ });
    expect(await toggle.isVisible()).toBe(true);
    expect(await phone.locator('#room-side').isVisible()).toBe(false);
    // No horizontal scrolling on a phone.
    expect(await phone.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).toBe(true);
    await screenshot(phone, 'room-phone');
    await toggle.click();
    await phone.locator('#room-side.open .members [data-name=Echo1]').waitFor();
    await phone.locator('.side-close').waitFor();
    // The panel slides in: wait for its transitions to finish. A transition that a re-render
    // replaces (a room_update arriving meanwhile) is cancelled, and its promise rejects: that one
    // is over too.
    await phone.locator('#room-side').evaluate((el) => Promise.all(el.getAnimations({ subtree: true }).map((a) => a.finished.catch(() => undefined))));
    await screenshot(phone, 'room-phone-panel');
    // The statistics fit the panel: no sideways scrolling inside or outside it.
    const stats = phone.locator('#room-side .stats');
    await stats.locator('tbody tr[data-name=Echo2]').waitFor();
    await stats.scrollIntoViewIfNeeded();
    expect(await stats.locator('.stats-scroll').evaluate((el) => el.scrollWidth <= el.clientWidth + 1)).toBe(true);
    expect(await phone.locator('#room-side').evaluate((el) => el.scrollWidth <= el.clientWidth + 1)).toBe(true);
    await screenshot(phone, 'room-phone-stats');
    await phone.keyboard.press('Escape');
    await eventually(async () => !(await phone.locator('#room-side').isVisible()), 2000, 'panel closed');
    await phone.close();
    expect(pageErrors).toEqual([]);
  });
});
