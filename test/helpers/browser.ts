// Browser tests' helpers: launching Debian's Chromium, echo agents on the typed client, and
// small page utilities.
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { chromium, type Browser, type Locator, type Page } from 'playwright-core';
import { ChatroomClient, type TurnAnswer, type TurnInfo } from '../../src/client/index.js';

export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const ARTIFACTS_DIR = path.resolve('test-artifacts');

export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/**
 * True when the browser tests can run here. Outside CI a missing browser skips them and says
 * why on stderr (once per test file); in CI it is an error, never a skip.
 */
export function chromiumAvailable(env: Record<string, string | undefined> = process.env, warn: (line: string) => void = (line) => process.stderr.write(`${line}\n`)): boolean {
  const chromium = env.CHROMIUM_PATH ?? '/usr/bin/chromium';
  if (existsSync(chromium)) return true;
  if (env.CI) {
    throw new Error(`Chromium not found at ${chromium}: CI must install it (apt-get install chromium) — browser tests never skip in CI`);
  }
  warn(`Browser tests skipped: Chromium not found at ${chromium} (apt-get install chromium fonts-noto-cjk, or set CHROMIUM_PATH to a Chromium binary).`);
  return false;
}

export async function launchBrowser(): Promise<Browser> {
  if (!existsSync(CHROMIUM_PATH)) throw new Error(`Chromium not found at ${CHROMIUM_PATH}`);
  return chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS });
}

/** A screenshot of the page's viewport, or of one element, into test-artifacts/{name}.png. */
export async function screenshot(target: Page | Locator, name: string): Promise<string> {
  await mkdir(ARTIFACTS_DIR, { recursive: true });
  const file = path.join(ARTIFACTS_DIR, `${name}.png`);
  await target.screenshot({ path: file });
  return file;
}

/**
 * Collects uncaught page errors and Content-Security-Policy violations into `sink` (the page
 * must run under the server's strict CSP without tripping it).
 */
export function watchPageErrors(page: Page, label: string, sink: string[]): void {
  page.on('pageerror', (err) => sink.push(`${label}: ${err.message}`));
  page.on('console', (msg) => {
    if (/Content Security Policy/i.test(msg.text())) sink.push(`${label}: ${msg.text()}`);
  });
}

export type EchoMode = 'echo' | 'silent' | 'skip';

/**
 * An agent on ChatroomClient that echoes the newest person message it has not echoed yet and
 * skips when there is none. `mode` switches it to silent (lets turns time out) or always-skip;
 * `silentTurns` makes the next n turns silent.
 */
export class EchoAgent {
  mode: EchoMode = 'echo';
  silentTurns = 0;
  readonly turns: Array<{ room_id: string; reason: string; can_skip: boolean; deadline: string }> = [];
  private lastEchoed = 0;

  private constructor(
    readonly name: string,
    readonly token: string,
    readonly client: ChatroomClient,
  ) {}

  static async start(baseUrl: string, name: string, roomId: string, introduce: string): Promise<EchoAgent> {
    const { token } = await ChatroomClient.register(baseUrl, name, { introduce });
    await ChatroomClient.rest(baseUrl, 'join_room', { room_id: roomId }, token);
    const client = new ChatroomClient({ url: baseUrl, token, backoff: { initialMs: 100, maxMs: 1000 } });
    const agent = new EchoAgent(name, token, client);
    client.onTurn((turn) => agent.answer(turn));
    await client.connect();
    return agent;
  }

  private answer(turn: TurnInfo): TurnAnswer {
    this.turns.push({ room_id: turn.room_id, reason: turn.reason, can_skip: turn.can_skip, deadline: turn.deadline });
    if (this.silentTurns > 0) {
      this.silentTurns -= 1;
      return undefined;
    }
    if (this.mode === 'silent') return undefined;
    if (this.mode === 'skip') return turn.can_skip ? { skip: true } : { text: '（收到）' };
    const people = turn.context.messages.filter((m) => m.role === 'user' && m.seq > this.lastEchoed);
    const last = people[people.length - 1];
    if (!last) return turn.can_skip ? { skip: true } : { text: '（收到）' };
    this.lastEchoed = last.seq;
    // No "@" in echoes: an echo must not mention anyone (that would start mention chains).
    return { text: `echo: ${last.text_content.replace(/@/g, '＠')}` };
  }

  close(): Promise<void> {
    return this.client.close();
  }
}

/** Polls until `check` returns true (or throws the last failure after `timeoutMs`). */
export async function until(check: () => Promise<boolean> | boolean, timeoutMs = 10_000, label = 'condition'): Promise<void> {
  const end = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < end) {
    try {
      if (await check()) return;
    } catch (err) {
      last = err;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${label}${last ? `: ${String(last)}` : ''}`);
}
