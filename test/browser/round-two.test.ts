// The web page, round two (issue 18): the bugs a newcomer hit and the features for running a
// room from the page, in real Chromium against the real server. Alice creates the rooms; Bob is
// a second person in another browser context. Screenshots land in test-artifacts/.
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChatroomClient } from '../../src/client/index.js';
import { chromiumAvailable, EchoAgent, launchBrowser, screenshot, until, watchPageErrors } from '../helpers/browser.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

const enabled = chromiumAvailable();

async function signUp(page: Page, url: string, name: string): Promise<string> {
  await page.goto(url);
  const form = page.locator('form', { has: page.locator('#reg-title') });
  await form.locator('input[name=name]').fill(name);
  await form.locator('button[type=submit]').click();
  await page.locator('.view-rooms').waitFor();
  return page.evaluate(() => JSON.parse(localStorage.getItem('agent-chatroom.session')!).token as string);
}

async function send(page: Page, text: string): Promise<void> {
  const input = page.locator('.composer-input');
  await input.fill(text);
  await input.press('Enter');
  await until(async () => (await input.inputValue()) === '', 5000, 'composer to clear');
}

async function openRoom(page: Page, url: string, roomId: string): Promise<void> {
  await page.goto(`${url}/#/room/${encodeURIComponent(roomId)}`);
  await page.locator('#room-title').waitFor();
  await page.locator('.msg-scroll').waitFor();
}

/** The element lies inside the message scroller's visible box. */
function inView(page: Page, selector: string): Promise<boolean> {
  return page.evaluate((sel) => {
    const el = document.querySelector(sel);
    const box = document.querySelector('.msg-scroll')!.getBoundingClientRect();
    if (!el) return false;
    const r = el.getBoundingClientRect();
    return r.bottom > box.top && r.top < box.bottom;
  }, selector);
}

describe.skipIf(!enabled)('web page, round two', { timeout: 60_000 }, () => {
  let server: TestServer;
  let browser: Browser;
  let ctxA: BrowserContext;
  let ctxB: BrowserContext;
  let alice: Page;
  let bob: Page;
  let aliceToken = '';
  let bobToken = '';
  let roomId = '';
  const agents: EchoAgent[] = [];
  const pageErrors: string[] = [];

  beforeAll(async () => {
    server = await startTestServer({ turnTimeoutMs: 20_000 });
    browser = await launchBrowser();
    ctxA = await browser.newContext({ viewport: { width: 1280, height: 820 }, locale: 'zh-CN', acceptDownloads: true });
    ctxB = await browser.newContext({ viewport: { width: 1100, height: 760 }, locale: 'zh-CN' });
    for (const ctx of [ctxA, ctxB]) {
      ctx.setDefaultTimeout(10_000);
      await ctx.grantPermissions(['clipboard-read', 'clipboard-write', 'notifications'], { origin: server.url });
      // Records notifications and blob URLs (the real ones are still created).
      await ctx.addInitScript(() => {
        const w = window as unknown as Record<string, unknown>;
        w.__notes = [];
        w.__blobs = { created: 0, revoked: 0 };
        const Real = window.Notification;
        class Recording extends Real {
          constructor(title: string, opts?: NotificationOptions) {
            super(title, opts);
            (w.__notes as string[]).push(title);
          }
        }
        window.Notification = Recording as typeof Notification;
        const create = URL.createObjectURL.bind(URL);
        const revoke = URL.revokeObjectURL.bind(URL);
        URL.createObjectURL = (o: Blob | MediaSource) => ((w.__blobs as { created: number }).created++, create(o));
        URL.revokeObjectURL = (u: string) => ((w.__blobs as { revoked: number }).revoked++, revoke(u));
      });
    }
    // Bob's page runs on Playwright's clock (real time until a test moves it), so a test can
    // let the page's timers run without waiting for them.
    await ctxB.clock.install();
    alice = await ctxA.newPage();
    bob = await ctxB.newPage();
    watchPageErrors(alice, 'alice', pageErrors);
    watchPageErrors(bob, 'bob', pageErrors);
    aliceToken = await signUp(alice, server.url, 'Alice');
    bobToken = await signUp(bob, server.url, 'Bob');
  });

  afterAll(async () => {
    await Promise.all(agents.map((a) => a.close()));
    await browser?.close();
    await server?.stop();
  });

  it('states the English-only room name rule in the form before it refuses', async () => {
    await alice.getByRole('button', { name: '＋ 创建房间' }).click();
    const hint = alice.locator('[data-field=room_name] .field-hint');
    expect(await hint.textContent()).toContain('只能用英文');
    expect(await alice.locator('[data-field=room_name] label').textContent()).toContain('只能用英文');
    await alice.locator('input[name=room_name]').fill('Round Two');
    await alice.getByRole('button', { name: '创建并进入' }).click();
    await alice.locator('.view-room').waitFor();
    roomId = decodeURIComponent(/#\/room\/(.+)$/.exec(alice.url())![1]!);
    await server.ok('join_room', { room_id: roomId }, bobToken);
  });

  it('offers the add-agent dialog with one-line commands for this room, copied exactly', async () => {
    // The empty room says how to bring an agent in.
    await alice.locator('.empty-hint').waitFor();
    await alice.locator('#add-agent-btn').click();
    const dialog = alice.locator('.agent-dialog');
    await dialog.waitFor();
    await dialog.locator('input[name=agent_name]').fill('Alpha');
    const cli = await dialog.locator('[data-key=cli] code').textContent();
    // The preset appends the CLI's own flags: the line names no command after it (issue 41).
    expect(cli).toBe(`agent-chatroom cli-agent --url ${server.url} --room ${roomId} --name Alpha --preset claude`);
    await dialog.locator('select[name=preset]').selectOption('codex');
    expect(await dialog.locator('[data-key=cli] code').textContent()).toBe(`agent-chatroom cli-agent --url ${server.url} --room ${roomId} --name Alpha --preset codex`);
    expect(await dialog.locator('[data-key=agent] code').textContent()).toBe(
      `agent-chatroom agent --url ${server.url} --room ${roomId} --name Alpha --model gpt-4o-mini --api-key-env OPENAI_API_KEY`,
    );
    expect(await dialog.locator('[data-key=claude-mcp] code').textContent()).toBe(`claude mcp add --transport http chatroom ${server.url}/mcp`);
    expect(JSON.parse((await dialog.locator('[data-key=cursor-json] code').textContent())!)).toEqual({ mcpServers: { chatroom: { url: `${server.url}/mcp` } } });
    expect(JSON.parse((await dialog.locator('[data-key=stdio-json] code').textContent())!).mcpServers.chatroom.args).toEqual(['mcp', '--url', server.url]);
    expect(await dialog.locator('[data-key=codex-toml] code').textContent()).toContain(`args = ["mcp", "--url", "${server.url}"]`);
    await dialog.locator('[data-key=cli] .copy-btn').click();
    await dialog.locator('[data-key=cli] .copy-btn', { hasText: '已复制' }).waitFor();
    expect(await alice.evaluate(() => navigator.clipboard.readText())).toBe(`agent-chatroom cli-agent --url ${server.url} --room ${roomId} --name Alpha --preset codex`);
    await screenshot(alice, 'web-add-agent-dialog');
    await alice.keyboard.press('Escape');
    await dialog.waitFor({ state: 'detached' });
  });

  it('scrolls your own message into view when you had scrolled up, attachments too', async () => {
    for (let i = 1; i <= 60; i++) await server.ok('send_message', { room_id: roomId, text_content: `填充消息 ${i}\n第二行\n第三行` }, bobToken);
    await openRoom(alice, server.url, roomId);
    await alice.locator('.msg-body', { hasText: '填充消息 60' }).waitFor();
    for (let round = 0; round < 2; round++) {
      await alice.locator('.msg-scroll').evaluate((el) => (el.scrollTop = 0));
      await until(async () => !(await inView(alice, '.msg[data-sender="Bob"]:last-of-type')), 3000, 'scrolled up');
      if (round === 1) await alice.locator('.composer input[type=file]').setInputFiles({ name: 'plan.txt', mimeType: 'text/plain', buffer: Buffer.from('plan') });
      await send(alice, `我自己的消息 ${round}`);
      const own = alice.locator('.msg-mine', { has: alice.locator('.msg-body', { hasText: `我自己的消息 ${round}` }) });
      await own.waitFor({ state: 'attached' });
      const seq = await own.getAttribute('data-seq');
      await until(() => inView(alice, `.msg-list [data-seq="${seq}"]`), 3000, `own message ${round} in view`);
    }
  });

  it('lists search hits newest first and jumps to a hit that is not loaded', async () => {
    await server.ok('send_message', { room_id: roomId, text_content: 'findme 最新' }, bobToken);
    await alice.locator('.side-toggle').isVisible();
    await alice.locator('#search-input').fill('填充消息 1');
    await alice.locator('.search-form button[type=submit]').click();
    const hits = alice.locator('.search-results .search-hit');
    await hits.first().waitFor();
    const seqs = await hits.evaluateAll((els) => els.map((e) => Number((e as HTMLElement).dataset.seq)));
    expect(seqs.length).toBeGreaterThan(2);
    expect([...seqs].sort((a, b) => b - a)).toEqual(seqs);
    // "填充消息 1" (seq 1) is the last hit; the list shows the newest page only.
    await hits.last().click();
    await alice.locator('.msg-list [data-seq="1"].flash').waitFor({ state: 'visible' });
    await until(() => inView(alice, '.msg-list [data-seq="1"]'), 3000, 'seq 1 in view');
  });

  it('replies with a quote, edits and deletes your own message, live on the other page', async () => {
    await openRoom(bob, server.url, roomId);
    await send(alice, '请看这个方案');
    const aliceMsg = bob.locator('.msg', { has: bob.locator('.msg-body', { hasText: '请看这个方案' }) });
    await aliceMsg.hover();
    await aliceMsg.locator('.msg-reply').click();
    await bob.locator('.reply-chip', { hasText: 'Alice' }).waitFor();
    await send(bob, '同意这个方案');
    const reply = alice.locator('.msg', { has: alice.locator('.msg-body', { hasText: '同意这个方案' }) });
    await reply.locator('.msg-quote', { hasText: '请看这个方案' }).waitFor();
    // Bob may not edit Alice's message; Alice may.
    expect(await aliceMsg.locator('.msg-edit').count()).toBe(0);
    const ownId = await alice.locator('.msg-mine', { has: alice.locator('.msg-body', { hasText: '请看这个方案' }) }).getAttribute('data-message-id');
    const own = alice.locator(`.msg[data-message-id="${ownId}"]`);
    await own.hover();
    await own.locator('.msg-edit').click();
    await own.locator('.msg-edit-input').fill('请看这个方案（修订版）');
    await own.locator('.msg-edit-form button[type=submit]').click();
    await bob.locator('.msg-body', { hasText: '修订版' }).waitFor();
    await bob.locator('.msg-edited').first().waitFor();
    const edited = alice.locator('.msg-mine', { has: alice.locator('.msg-body', { hasText: '修订版' }) });
    await edited.hover();
    await edited.locator('.msg-delete').click();
    await alice.locator('.dialog-confirm').click();
    await bob.locator('.msg-deleted .msg-body', { hasText: '此消息已撤回' }).waitFor();
    expect(await bob.locator('.msg-body', { hasText: '修订版' }).count()).toBe(0);
  });

  it('highlights code blocks and copies them', async () => {
    await send(alice, '```js\nconst answer = 42; // 注释\n```');
    const block = bob.locator('.code-block').last();
    await block.locator('code.hljs .hljs-keyword', { hasText: 'const' }).waitFor();
    await block.locator('.hljs-number', { hasText: '42' }).waitFor();
    await block.hover();
    await block.locator('.code-copy').click();
    expect(await bob.evaluate(() => navigator.clipboard.readText())).toBe('const answer = 42; // 注释\n');
  });

  it('keeps image previews across re-renders and revokes the blob URLs it made', async () => {
    // A 1×1 PNG.
    const png = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==', 'base64');
    await bob.locator('.composer input[type=file]').setInputFiles({ name: '设计 说明(v2).png', mimeType: 'image/png', buffer: png });
    await send(bob, '截图');
    const img = alice.locator('.msg', { hasText: '截图' }).locator('img.attachment-preview');
    await img.waitFor({ state: 'visible' });
    const blobs = () => alice.evaluate(() => ({ ...(window as unknown as { __blobs: { created: number; revoked: number } }).__blobs }));
    const before = await blobs();
    // A member joining redraws the message window: the preview comes from the cache.
    const agent = await server.ok<{ token: string }>('register_agent', { name: 'Joiner' });
    await server.ok('join_room', { room_id: roomId }, agent.token);
    await alice.locator('.members [data-name=Joiner]').waitFor();
    await alice.locator('.msg', { hasText: '截图' }).locator('img.attachment-preview').waitFor({ state: 'visible' });
    expect((await blobs()).created).toBe(before.created);
    // A download's blob URL is revoked once the download started.
    const link = alice.locator('.msg', { hasText: '截图' }).locator('a.attachment');
    const [file] = await Promise.all([alice.waitForEvent('download'), link.click()]);
    expect(file.suggestedFilename()).toMatch(/\.png$/);
    await until(async () => (await blobs()).revoked >= before.revoked + 1, 3000, 'the download blob revoked');
    await server.ok('leave_room', { room_id: roomId }, agent.token);
  });

  it('shows unread counts, last activity and a title badge; notifies a mention after permission', async () => {
    await alice.goto(`${server.url}/#/rooms`);
    await alice.locator('.room-item').first().waitFor();
    expect(await alice.locator(`.room-item[data-room-id="${roomId}"] .room-last`).textContent()).toContain('最近活动');
    await server.ok('send_message', { room_id: roomId, text_content: '有人在吗' }, bobToken);
    await server.ok('send_message', { room_id: roomId, text_content: '@Alice 请看一下' }, bobToken);
    const badge = alice.locator(`.room-item[data-room-id="${roomId}"] .unread-badge`);
    await badge.filter({ hasText: '2' }).waitFor();
    await until(async () => (await alice.title()).startsWith('(2) '), 3000, 'title badge');
    await until(async () => ((await alice.evaluate(() => (window as unknown as { __notes: string[] }).__notes)) ?? []).some((t) => t.includes('Bob')), 3000, 'a notification');
    await screenshot(alice, 'web-room-list');
    // Opening the room reads it.
    await alice.locator(`.room-item[data-room-id="${roomId}"] button`).click();
    await alice.locator('.msg-body', { hasText: '请看一下' }).waitFor();
    await until(async () => !(await alice.title()).startsWith('('), 3000, 'title without count');
  });

  it('host mode: the idle hint names the host; the member list marks the host only there', async () => {
    const { room } = await server.ok<{ room: { room_id: string } }>('create_room', { room_name: 'Host Hall', interaction_mode: 'host' }, aliceToken);
    await openRoom(alice, server.url, room.room_id);
    await alice.locator('.turnbar[data-state=idle] .turn-headline', { hasText: '主持人' }).waitFor();
    await alice.locator('.members [data-name=Alice] .badge-host').waitFor();
    // 开始新一轮 with a person host is refused (details.reason person_host): the page says why.
    const guest = await server.ok<{ token: string }>('register_agent', { name: 'HallGuest' });
    await server.ok('join_room', { room_id: room.room_id }, guest.token);
    await alice.locator('#start-round-btn').click();
    await alice.locator('.toast', { hasText: '主持人 @提及 智能体即开始新一轮' }).waitFor();
    // In the round-robin room the creator has no host badge.
    await openRoom(alice, server.url, roomId);
    await alice.locator('.members [data-name=Alice]').waitFor();
    expect(await alice.locator('.members [data-name=Alice] .badge-host').count()).toBe(0);
  });

  it('in a mention round the turn bar lists only the agents that will be asked; skip reasons are shown', async () => {
    for (const name of ['Alpha', 'Beta', 'Gamma']) {
      const a = await EchoAgent.start(server.url, name, roomId, `${name} 测试智能体`);
      a.mode = 'silent';
      agents.push(a);
    }
    await openRoom(bob, server.url, roomId);
    await bob.locator('.members [data-name=Gamma][data-status=online]').waitFor();
    await send(alice, '开始新话题');
    await bob.locator('.turnbar[data-state=turn] .turn-agent', { hasText: 'Alpha' }).waitFor();
    await until(async () => JSON.stringify(await bob.locator('.turn-queue-item').allTextContents()) === '["Alpha","Beta","Gamma"]', 5000, 'queue Alpha, Beta, Gamma');
    await screenshot(bob, 'web-busy-room');
    // Alice mentions Gamma while Alpha holds the turn: the chain [Gamma] follows Alpha and the
    // round ends after it, so Beta is not shown.
    await send(alice, '@Gamma 请你先说');
    await until(async () => JSON.stringify(await bob.locator('.turn-queue-item').allTextContents()) === '["Alpha","Gamma"]', 5000, 'queue Alpha, Gamma');
    // Alpha skips with a reason; the note carries it.
    const alpha = agents[0]!;
    await ChatroomClient.rest(server.url, 'skip_response', { room_id: roomId, reason: '模型超时' }, alpha.token);
    await bob.locator('.note-skip', { hasText: 'Alpha 跳过了本轮：模型超时' }).waitFor();
  });

  it('shows what an agent reported with set_activity', async () => {
    const gamma = agents[2]!;
    await bob.locator('.turnbar[data-state=turn] .turn-agent', { hasText: 'Gamma' }).waitFor();
    await ChatroomClient.rest(server.url, 'set_activity', { room_id: roomId, activity: 'thinking', note: '读取文件' }, gamma.token);
    await bob.locator('.turn-activity', { hasText: 'Gamma 正在思考…（读取文件）' }).waitFor();
    await bob.locator('.members [data-name=Gamma] .member-activity', { hasText: '正在思考' }).waitFor();
    await ChatroomClient.rest(server.url, 'send_message', { room_id: roomId, text_content: '我说完了' }, gamma.token);
    await bob.locator('.turn-activity').waitFor({ state: 'hidden' });
  });

  it('a person member who is not an admin may pause and start rounds', async () => {
    const pause = bob.locator('#pause-btn');
    await pause.waitFor();
    expect(await bob.locator('#start-round-btn').isVisible()).toBe(true);
    expect(await bob.locator('#settings-btn').isVisible()).toBe(false);
    await pause.click();
    await alice.locator('.room-status', { hasText: '已暂停' }).waitFor();
    await bob.locator('#pause-btn').click();
    await alice.locator('.room-status', { hasText: '进行中' }).waitFor();
  });

  it('stops the countdown and greys members while disconnected', async () => {
    await server.ok('start_round', { room_id: roomId }, aliceToken).catch(() => undefined);
    await bob.locator('.turnbar[data-state=turn]').waitFor();
    await ctxB.setOffline(true);
    await bob.locator('.view-room.disconnected').waitFor();
    await bob.locator('.turn-countdown', { hasText: '--:--' }).waitFor();
    const shown = await bob.locator('.turn-countdown').textContent();
    // Every text the countdown takes from here on is recorded: a reconnect attempt's re-render
    // may write '--:--' again, and must not hide a tick in between.
    await bob.locator('.turn-countdown').evaluate((el) => {
      const seen: string[] = ((window as unknown as { __countdownSeen: string[] }).__countdownSeen = []);
      new MutationObserver(() => seen.push(el.textContent ?? '')).observe(el, { childList: true, characterData: true, subtree: true });
    });
    // Four periods of the countdown's 250 ms interval, run on the page's clock (no waiting).
    await ctxB.clock.runFor(1100);
    const seen = await bob.evaluate(() => (window as unknown as { __countdownSeen: string[] }).__countdownSeen);
    expect(seen.filter((text) => text !== shown)).toEqual([]);
    expect(await bob.locator('.turn-countdown').textContent()).toBe(shown);
    expect(await bob.locator('.members .status-dot').first().evaluate((el) => getComputedStyle(el).opacity)).toBe('0.6');
    await ctxB.setOffline(false);
    await bob.locator('.view-room:not(.disconnected)').waitFor();
    await until(async () => /^\d\d:\d\d$/.test((await bob.locator('.turn-countdown').textContent()) ?? ''), 5000, 'countdown back');
  });

  it('shows edits and deletions made while it was disconnected once it is back (a replay carries only new messages)', async () => {
    const kept = (await server.ok<{ message: { message_id: string } }>('send_message', { room_id: roomId, text_content: 'before the outage: kept' }, aliceToken)).message;
    const gone = (await server.ok<{ message: { message_id: string } }>('send_message', { room_id: roomId, text_content: 'before the outage: retracted' }, aliceToken)).message;
    await bob.locator('.msg-body', { hasText: 'before the outage: retracted' }).waitFor();
    await ctxB.setOffline(true);
    await bob.locator('.view-room.disconnected').waitFor();
    await server.ok('edit_message', { message_id: kept.message_id, text_content: 'edited during the outage' }, aliceToken);
    await server.ok('delete_message', { message_id: gone.message_id }, aliceToken);
    await ctxB.setOffline(false);
    await bob.locator('.view-room:not(.disconnected)').waitFor();
    await bob.locator('.msg-body', { hasText: 'edited during the outage' }).waitFor();
    await until(async () => (await bob.locator('.msg-body', { hasText: 'before the outage: retracted' }).count()) === 0, 5000, 'the retracted text is gone');
    expect(await bob.locator('.msg-body', { hasText: 'before the outage: kept' }).count()).toBe(0);
  });

  it('keeps agent names whole in the statistics table', async () => {
    const cells = bob.locator('.stats-table tbody .stats-name');
    await bob.locator('.stats-refresh').click();
    await cells.first().waitFor();
    const lines = await cells.evaluateAll((els) =>
      els.map((el) => {
        const range = document.createRange();
        range.selectNodeContents(el);
        return new Set(Array.from(range.getClientRects(), (r) => Math.round(r.top))).size;
      }),
    );
    expect(lines.every((n) => n === 1)).toBe(true);
  });

  it("a late answer to the settings panel's resume does not roll the turn bar back to the turn it handed out", async () => {
    const { room } = await server.ok<{ room: { room_id: string } }>('create_room', { room_name: 'Late Answer' }, aliceToken);
    const quick = await EchoAgent.start(server.url, 'Quick1', room.room_id, '先答');
    const slow = await EchoAgent.start(server.url, 'Quick2', room.room_id, '后答');
    quick.mode = 'silent';
    slow.mode = 'silent';
    agents.push(quick, slow);
    await openRoom(alice, server.url, room.room_id);
    await alice.locator('.members [data-name=Quick2][data-status=online]').waitFor();
    await send(alice, 'late answer test');
    await alice.locator('.turnbar[data-state=turn] .turn-agent', { hasText: 'Quick1' }).waitFor();
    await server.ok('set_room_status', { room_id: room.room_id, system_status: 'paused' }, aliceToken);
    await alice.locator('.room-status', { hasText: '已暂停' }).waitFor();
    // Resumed, Quick1 gets its turn again and answers at once, so Quick2 holds the turn before
    // the resume's answer (held back 700 ms, a slow network) reaches the page.
    quick.mode = 'echo';
    await alice.route('**/api/v1/tools/set_room_status', async (route) => {
      const response = await route.fetch();
      await new Promise((r) => setTimeout(r, 700));
      await route.fulfill({ response });
    });
    try {
      await alice.locator('#settings-btn').click();
      const dlg = alice.locator('.settings-dialog');
      await dlg.waitFor();
      await dlg.locator('#settings-pause').click();
      await alice.locator('.turnbar[data-state=turn] .turn-agent', { hasText: 'Quick2' }).waitFor();
      await dlg.locator('#settings-pause', { hasText: '暂停' }).waitFor(); // the late answer has arrived
      await new Promise((r) => setTimeout(r, 300));
      expect(await alice.locator('.turnbar .turn-agent').textContent()).toContain('Quick2');
      await alice.keyboard.press('Escape');
      await dlg.waitFor({ state: 'detached' });
    } finally {
      await alice.unroute('**/api/v1/tools/set_room_status');
    }
    await openRoom(alice, server.url, roomId);
  });

  it('the settings panel changes the room, removes a member and archives', async () => {
    await alice.locator('#settings-btn').click();
    const dlg = alice.locator('.settings-dialog');
    await dlg.waitFor();
    await screenshot(alice, 'web-settings-panel');
    await dlg.locator('input[name=max_auto_rounds]').fill('5');
    await dlg.locator('input[name=turn_timeout_ms]').fill('45');
    await dlg.locator('input[name=room_description]').fill('第二轮');
    await dlg.locator('#settings-save').click();
    await dlg.waitFor({ state: 'detached' });
    const { room } = await server.ok('get_room', { room_id: roomId }, aliceToken);
    expect(room.settings.max_auto_rounds).toBe(5);
    expect(room.settings.turn_timeout_ms).toBe(45_000);
    expect(room.room_description).toBe('第二轮');
    // Remove Bob: his page leaves the room.
    await alice.locator('#settings-btn').click();
    await dlg.locator('.settings-members li[data-name=Bob] button').click();
    await alice.locator('.dialog-confirm').click();
    await alice.locator('.settings-members li[data-name=Bob]').waitFor({ state: 'detached' });
    const after = await server.ok('get_room', { room_id: roomId }, aliceToken);
    expect(after.room.members.map((m: { name: string }) => m.name)).not.toContain('Bob');
    // Bob's open page is told (its socket's subscription ended) and leaves the room.
    await bob.locator('.toast', { hasText: '你已不在这个房间里' }).waitFor();
    await until(async () => bob.url().endsWith('#/rooms'), 5000, "Bob's page back at the room list");
    await dlg.locator('#settings-archive').click();
    await alice.locator('.dialog-confirm').click();
    await alice.locator('.room-status', { hasText: '已归档' }).waitFor();
    expect(await alice.locator('.composer-input').isDisabled()).toBe(true);
  });

  it('follows the system dark theme, toggles it, and switches the page to English (remembered)', async () => {
    const dark = await browser.newContext({ viewport: { width: 1280, height: 820 }, colorScheme: 'dark', locale: 'zh-CN' });
    const page = await dark.newPage();
    watchPageErrors(page, 'dark', pageErrors);
    await page.addInitScript((t) => localStorage.setItem('agent-chatroom.session', JSON.stringify({ token: t, name: 'Bob' })), bobToken);
    const rooms = (await server.ok<{ rooms: Array<{ room_id: string; room_name: string }> }>('list_rooms', {}, bobToken)).rooms;
    const hall = rooms.find((r) => r.room_name === 'Host Hall')!;
    await server.ok('join_room', { room_id: hall.room_id }, bobToken);
    await server.ok('send_message', { room_id: hall.room_id, text_content: '深色主题下的消息，含 `code` 和 **粗体**\n```py\ndef hello():\n    return "你好"\n```' }, aliceToken);
    await page.goto(`${server.url}/#/room/${encodeURIComponent(hall.room_id)}`);
    await page.locator('.code-block .hljs-keyword').first().waitFor();
    const bg = () => page.evaluate(() => getComputedStyle(document.documentElement).backgroundColor);
    expect(await bg()).toBe('rgb(15, 18, 24)');
    await screenshot(page, 'web-dark-mode');
    // system → dark → light
    await page.locator('#theme-btn').click();
    await page.locator('#theme-btn').click();
    expect(await page.evaluate(() => document.documentElement.dataset.theme)).toBe('light');
    expect(await bg()).toBe('rgb(245, 246, 250)');

    await page.goto(`${server.url}/#/rooms`);
    await page.locator('#lang-btn').click();
    await page.locator('#rooms-heading', { hasText: 'Rooms' }).waitFor();
    await page.reload();
    await page.locator('#rooms-heading', { hasText: 'Rooms' }).waitFor();
    expect(await page.evaluate(() => document.documentElement.lang)).toBe('en');
    await page.goto(`${server.url}/#/room/${encodeURIComponent(hall.room_id)}`);
    await page.locator('.turnbar .turn-headline', { hasText: 'host' }).waitFor();
    await screenshot(page, 'web-english-ui');
    expect(await page.evaluate(() => [...((window as unknown as { __i18nMissing: Set<string> }).__i18nMissing ?? [])])).toEqual([]);
    await dark.close();
  });

  it('ran without a CSP violation or an uncaught page error', () => {
    expect(pageErrors).toEqual([]);
  });
});
