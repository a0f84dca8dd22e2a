// The real ACP programs of the three presets, installed from npm into a scratch directory and
// started by `acp-agent --preset …` far enough to complete `initialize` and go online (no
// session, no prompt, so no model call and no login). Heavy (a few hundred MB from npm, about
// half a minute per adapter), so it runs in CI (CI=true, where a failed install is a failure,
// never a skip) or when ACP_ADAPTER_SMOKE=1; elsewhere it is reported as skipped.
import { execFile, spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerUser, serverAndWorkDirForFile } from '../helpers/server.js';
import { CLI } from '../helpers/process.js';

const run = promisify(execFile);
const enabled = Boolean(process.env.CI) || process.env.ACP_ADAPTER_SMOKE === '1';
const shared = serverAndWorkDirForFile('acp-adapters-test-');

/** Each preset, the npm package that provides its program (docs/agents.md). */
const ADAPTERS = [
  { preset: 'claude', pkg: '@agentclientprotocol/claude-agent-acp', shows: /claude-agent-acp .*speaks ACP 1/ },
  { preset: 'codex', pkg: '@agentclientprotocol/codex-acp', shows: /codex-acp .*speaks ACP 1/ },
  { preset: 'gemini', pkg: '@google/gemini-cli', shows: /gemini --acp .*speaks ACP 1/ },
] as const;

describe.skipIf(!enabled)('acp-agent presets with the real adapters (npm)', () => {
  let prefix = '';
  beforeAll(async () => {
    prefix = await mkdtemp(path.join(os.tmpdir(), 'acp-adapters-'));
  });
  afterAll(async () => {
    if (prefix) await rm(prefix, { recursive: true, force: true });
  });

  for (const adapter of ADAPTERS) {
    it(`--preset ${adapter.preset}: ${adapter.pkg} installs, starts and answers initialize`, { timeout: 400_000 }, async () => {
      const dir = path.join(prefix, adapter.preset);
      await run('npm', ['install', '--no-audit', '--no-fund', '--ignore-scripts', '--prefix', dir, adapter.pkg], { timeout: 300_000 });
      const person = await registerUser(shared.server, `Smoke-${adapter.preset}`);
      const { room } = await shared.server.ok('create_room', { room_name: `Smoke ${adapter.preset}` }, person.token);
      // A home of its own: the adapters find no login, and nothing of the user's is read.
      const home = path.join(dir, 'home');
      await mkdir(home, { recursive: true });
      const child = spawn(
        process.execPath,
        [CLI, 'acp-agent', '--url', shared.server.url, '--room', room.room_id, '--name', `Real-${adapter.preset}`, '--preset', adapter.preset, '--start-timeout', '120'],
        {
          env: { ...process.env, HOME: home, CHATROOM_STATE_DIR: path.join(dir, 'state'), PATH: `${path.join(dir, 'node_modules', '.bin')}${path.delimiter}${process.env.PATH}` },
          stdio: ['ignore', 'ignore', 'pipe'],
        },
      );
      let out = '';
      child.stderr!.on('data', (c: Buffer) => (out += c.toString()));
      const exited = new Promise((resolve) => child.once('exit', resolve));
      try {
        await expect.poll(() => out, { timeout: 150_000, interval: 200 }).toMatch(/ready: waiting for turns|Cannot start the agent/);
        expect(out).toMatch(adapter.shows);
        expect(out).toContain('ready: waiting for turns');
      } finally {
        child.kill('SIGTERM');
        await exited;
      }
    });
  }
});
