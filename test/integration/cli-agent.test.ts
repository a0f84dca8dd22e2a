// `agent-chatroom cli-agent` against the real server, with fake agent CLIs (test/fixtures/fake-*.mjs)
// that take each preset's real flags and print that CLI's real output format. The agents run as
// child processes of the compiled CLI (.test-dist), as a user would start them.
import { execFileSync, spawn } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { PACKAGE_ROOT } from '../../src/paths.js';
import { CLI, closedPort } from '../helpers/process.js';
import { alive, loggedCalls as calls, runnerReady, runnerStarter, roomMessages, type RunnerProcess } from '../helpers/runner-process.js';
import { registerUser, serverAndWorkDirForFile } from '../helpers/server.js';

const FIXTURES = path.join(PACKAGE_ROOT, 'test', 'fixtures');
const fake = (cli: 'claude' | 'codex' | 'gemini') => path.join(FIXTURES, `fake-${cli}.mjs`);

const shared = serverAndWorkDirForFile('cli-agent-test-');
const start = runnerStarter(shared, 'cli-agent', 'SIGKILL');

type AgentProcess = RunnerProcess & { name: string };

let counter = 0;
/** A fresh room with a person (its creator) and a short turn timeout. */
async function room(turnTimeoutMs = 1500, maxAutoRounds = 1) {
  counter++;
  const person = await registerUser(shared.server, `Mia${counter}`);
  const { room } = await shared.server.ok('create_room', { room_name: `CLI room ${counter}`, language: 'en' }, person.token);
  // An English room: its skip records read `(skipped: reason)` (SPEC v3 §6).
  await shared.server.ok('update_room', { room_id: room.room_id, turn_timeout_ms: turnTimeoutMs, max_auto_rounds: maxAutoRounds }, person.token);
  return { person, roomId: room.room_id as string, log: path.join(shared.work, `calls-${counter}.jsonl`), tag: `t${process.pid}-${counter}` };
}

function startAgent(
  name: string,
  roomId: string,
  preset: 'claude' | 'codex' | 'gemini',
  env: Record<string, string>,
  extra: string[] = [],
): AgentProcess {
  return { ...start(['--room', roomId, '--name', name, '--preset', preset, ...extra, '--', fake(preset)], env), name };
}

async function waitReady(agents: AgentProcess[]): Promise<void> {
  for (const agent of agents) {
    await runnerReady(agent);
    // What Ctrl-C really does: it stops the process; the agent stays a member (never "leaves").
    expect(agent.output()).toContain('Ctrl-C stops the agent: it stays a member of its rooms');
    expect(agent.output()).not.toMatch(/Ctrl-C leaves/);
  }
}

const messages = (roomId: string, token: string) => roomMessages(shared.server, roomId, token);

/** Lines of the process table whose command line contains `marker`. */
function processesWith(marker: string): string[] {
  return execFileSync('ps', ['-eo', 'pid,args'], { encoding: 'utf8' })
    .split('\n')
    .filter((line) => line.includes(marker));
}

describe('cli-agent', () => {
  it('three CLI agents and a person hold a conversation: rotation, a mention and a timeout; the slow CLI is killed, nothing is left running', async () => {
    const { person, roomId, log, tag } = await room(3000, 1); // short turns, with room for a loaded machine
    const env = { FAKE_CLI_LOG: log, FAKE_CLI_TAG: tag };
    // One after the other, so the join order (the rotation) is known.
    await waitReady([startAgent('Cla', roomId, 'claude', env)]);
    await waitReady([startAgent('Cod', roomId, 'codex', env)]);
    await waitReady([startAgent('Gem', roomId, 'gemini', { ...env, FAKE_CLI_MODE: 'slow' })]);
    const members = (await shared.server.ok('get_room', { room_id: roomId }, person.token)).room.members.map((m: { name: string }) => m.name);
    expect(members).toEqual([`Mia${counter}`, 'Cla', 'Cod', 'Gem']);

    // Rotation in join order; the slow one is stopped before its deadline and skips.
    await shared.server.ok('send_message', { room_id: roomId, text_content: 'Hello agents, what do you think?' }, person.token);
    await expect
      .poll(async () => (await messages(roomId, person.token)).filter((m) => m.sender === 'Gem').length, { timeout: 15_000, interval: 100 })
      .toBeGreaterThanOrEqual(1);
    let all = await messages(roomId, person.token);
    const firstRound = all.slice(1, 4);
    expect(firstRound.map((m) => [m.sender, m.visible])).toEqual([
      ['Cla', true],
      ['Cod', true],
      ['Gem', false],
    ]);
    expect(firstRound[0]!.text_content).toBe('[claude] Cla read 1 messages; last: Hello agents, what do you think?');
    expect(firstRound[1]!.text_content).toMatch(/^\[codex\] Cod read 2 messages; last: \[claude\] Cla read 1/);
    // Skipped by the agent (its CLI was stopped before the deadline), not timed out by the shared.server.
    expect(firstRound[2]!.skip_reason).toBe('skip');
    expect(firstRound[2]!.text_content).toBe('(skipped: fake-gemini.mjs did not answer before the deadline and was stopped)');

    // The guard (max_auto_rounds 1) ends the automatic rounds; wait for the room to rest.
    await expect.poll(async () => (await shared.server.ok('get_room', { room_id: roomId }, person.token)).room.current_round?.completed ?? true, { timeout: 15_000 }).toBe(true);

    // A mention: Cod answers first, whatever the rotation.
    const before = (await messages(roomId, person.token)).length;
    await shared.server.ok('send_message', { room_id: roomId, text_content: '@Cod can you check this?' }, person.token);
    await expect
      .poll(async () => (await messages(roomId, person.token)).slice(before + 1).filter((m) => m.role === 'ai_agent').length, { timeout: 15_000 })
      .toBeGreaterThanOrEqual(1);
    all = await messages(roomId, person.token);
    expect(all[before + 1]).toMatchObject({ sender: 'Cod', visible: true });
    expect(all[before + 1]!.text_content).toContain('last: (at)Cod can you check this?');

    // A mentioned slow CLI cannot skip: it is stopped, and the server's timeout passes the turn.
    await expect.poll(async () => (await shared.server.ok('get_room', { room_id: roomId }, person.token)).room.current_round?.completed ?? true, { timeout: 15_000 }).toBe(true);
    const mark = (await messages(roomId, person.token)).length;
    await shared.server.ok('send_message', { room_id: roomId, text_content: '@Gem are you there?' }, person.token);
    await expect
      .poll(async () => (await messages(roomId, person.token)).slice(mark + 1).find((m) => m.sender === 'Gem')?.skip_reason, { timeout: 15_000 })
      .toBe('timeout');

    // Every slow run was killed with its helper process: nothing of it is left in the process table.
    const slowRuns = (await calls(log)).filter((c) => c.cli === 'gemini');
    const pids = slowRuns.flatMap((c) => [c.pid, c.helper_pid]).filter((p): p is number => typeof p === 'number');
    expect(slowRuns.some((c) => typeof c.helper_pid === 'number')).toBe(true);
    await expect.poll(() => pids.filter(alive), { timeout: 5000 }).toEqual([]);
    await expect.poll(() => processesWith(`fake-helper-of-gemini-${tag}`), { timeout: 5000 }).toEqual([]);
    // The CLIs got their presets' real flags.
    const argv = Object.fromEntries((await calls(log)).filter((c) => c.argv.length).map((c) => [c.cli, c.argv]));
    expect(argv.claude.slice(0, 3)).toEqual(['-p', '--output-format', 'json']);
    expect(argv.codex.slice(0, 3)).toEqual(['exec', '--json', '--skip-git-repo-check']);
    expect(argv.codex.at(-1)).toBe('-');
    expect(argv.gemini.slice(0, 3)).toEqual(['--output-format', 'json', '-p']);
  });

  it('resume: the next turn passes the session id the CLI printed (claude --resume, codex exec resume)', async () => {
    const { person, roomId, log } = await room(5000, 2);
    const env = { FAKE_CLI_LOG: log };
    await waitReady([startAgent('Res1', roomId, 'claude', env)]);
    await waitReady([startAgent('Res2', roomId, 'codex', env)]);
    await shared.server.ok('send_message', { room_id: roomId, text_content: 'Let us talk.' }, person.token);
    // Two agents answered and both are online: a follow-up round gives each a second turn.
    await expect.poll(async () => (await calls(log)).length, { timeout: 15_000 }).toBeGreaterThanOrEqual(4);
    const runs = await calls(log);
    const claude = runs.filter((c) => c.cli === 'claude');
    const codex = runs.filter((c) => c.cli === 'codex');
    expect(claude[0]!.resume).toBeNull();
    expect(codex[0]!.resume).toBeNull();
    const all = await messages(roomId, person.token);
    expect(all.filter((m) => m.sender === 'Res1' && m.visible).length).toBeGreaterThanOrEqual(2);
    // The session ids the first runs printed (the fakes print a new UUID when not resuming).
    expect(claude[1]!.resume).toMatch(/^[0-9a-f-]{36}$/);
    expect(claude[1]!.argv).toEqual(['-p', '--output-format', 'json', '--resume', claude[1]!.resume]);
    expect(codex[1]!.resume).toMatch(/^[0-9a-f-]{36}$/);
    expect(codex[1]!.argv.slice(-3)).toEqual(['resume', codex[1]!.resume, '-']);
    expect(claude[1]!.resume).not.toBe(codex[1]!.resume);
    await shared.server.ok('set_room_status', { room_id: roomId, system_status: 'paused' }, person.token);
  });

  it('a crashing CLI and a silent CLI: the room shows why they skipped', async () => {
    const { person, roomId, log } = await room(5000, 1);
    await waitReady([startAgent('Crashy', roomId, 'claude', { FAKE_CLI_LOG: log, FAKE_CLI_MODE: 'crash' })]);
    await waitReady([startAgent('Mute', roomId, 'gemini', { FAKE_CLI_LOG: log, FAKE_CLI_MODE: 'silent' })]);
    await shared.server.ok('send_message', { room_id: roomId, text_content: 'status report please' }, person.token);
    await expect.poll(async () => (await messages(roomId, person.token)).length, { timeout: 15_000 }).toBeGreaterThanOrEqual(3);
    const all = await messages(roomId, person.token);
    expect(all[1]).toMatchObject({ sender: 'Crashy', visible: false, skip_reason: 'skip' });
    expect(all[2]).toMatchObject({ sender: 'Mute', visible: false, skip_reason: 'skip' });
    // SPEC v2 §7: the record's text carries the reason.
    expect(all[1]!.text_content).toBe('(skipped: fake-claude.mjs exited with code 3: claude: Error: API quota exceeded (fake))');
    expect(all[2]!.text_content).toBe('(skipped: fake-gemini.mjs printed no answer)');
  });

  it('SIGTERM kills the running CLI and its helpers, passes the turn with the reason, and exits 0', async () => {
    const { person, roomId, log, tag } = await room(60_000, 1);
    const agent = startAgent('Sleepy', roomId, 'codex', { FAKE_CLI_LOG: log, FAKE_CLI_MODE: 'slow', FAKE_CLI_TAG: tag });
    await waitReady([agent]);
    await shared.server.ok('send_message', { room_id: roomId, text_content: 'take your time' }, person.token);
    await expect.poll(async () => (await calls(log)).find((c) => typeof c.helper_pid === 'number'), { timeout: 15_000 }).toBeTruthy();
    const runs = await calls(log);
    const pids = [runs[0]!.pid as number, runs.find((c) => c.helper_pid)!.helper_pid as number];
    expect(pids.every(alive)).toBe(true);
    agent.child.kill('SIGTERM');
    expect(await agent.exited).toEqual({ code: 0, signal: null });
    expect(pids.filter(alive)).toEqual([]);
    expect(processesWith(`fake-helper-of-codex-${tag}`)).toEqual([]);
    const all = await messages(roomId, person.token);
    expect(all[1]).toMatchObject({ sender: 'Sleepy', visible: false, skip_reason: 'skip' });
    expect(all[1]!.text_content).toBe('(skipped: agent stopped (SIGTERM))');
    // A restart reuses the saved token: same name, no name_taken.
    const again = startAgent('Sleepy', roomId, 'codex', { FAKE_CLI_LOG: log });
    await waitReady([again]);
    expect(again.output()).toMatch(/using the saved token of "Sleepy"/);
  });

  it('--mcp: the CLI gets the room as an MCP server and may post itself; its output is then not posted again', async () => {
    const { person, roomId, log } = await room(10_000, 1);
    const agent = startAgent('Tooly', roomId, 'claude', { FAKE_CLI_LOG: log, FAKE_CLI_MODE: 'mcp-post' }, ['--mcp']);
    await waitReady([agent]);
    await shared.server.ok('send_message', { room_id: roomId, text_content: 'use your tools' }, person.token);
    await expect.poll(async () => (await messages(roomId, person.token)).length, { timeout: 20_000 }).toBeGreaterThanOrEqual(2);
    await expect.poll(() => agent.output(), { timeout: 10_000 }).toMatch(/answered through the room's tools/);
    const all = (await messages(roomId, person.token)).filter((m) => m.role !== 'system'); // the guard's notice
    expect(all.map((m) => [m.sender, m.text_content])).toEqual([
      [`Mia${counter}`, 'use your tools'],
      ['Tooly', '[claude] Tooly read 1 messages; last: use your tools (posted through MCP)'],
    ]);
    const [run] = await calls(log);
    expect(run!.argv).toContain('--mcp-config');
    expect(run!.argv).toContain('--allowedTools');
    // The token reaches the MCP server through its environment, never a command line.
    expect(run!.argv.join(' ')).not.toContain('act_');
  });

  it('a CLI that is not installed stops the start with one line naming what to install, before registering', async () => {
    const emptyPath = await mkdtemp(path.join(shared.work, 'no-clis-'));
    const run = (args: string[]) =>
      new Promise<{ code: number | null; out: string }>((resolve) => {
        const child = spawn(process.execPath, [CLI, 'cli-agent', '--url', shared.server.url, ...args], {
          env: { ...process.env, PATH: emptyPath, CHATROOM_STATE_DIR: path.join(shared.work, 'state') },
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let out = '';
        child.stdout.on('data', (c: Buffer) => (out += c.toString()));
        child.stderr.on('data', (c: Buffer) => (out += c.toString()));
        child.once('exit', (code) => resolve({ code, out }));
      });
    const { roomId } = await room();
    const installs = {
      claude: 'install Claude Code (npm install -g @anthropic-ai/claude-code)',
      codex: 'install the Codex CLI (npm install -g @openai/codex)',
      gemini: 'install the Gemini CLI (npm install -g @google/gemini-cli)',
    };
    for (const [preset, install] of Object.entries(installs)) {
      const missing = await run(['--room', roomId, '--name', `Missing-${preset}`, '--preset', preset]);
      expect(missing.code, preset).toBe(1);
      expect(missing.out.trim().split('\n'), missing.out).toHaveLength(1);
      expect(missing.out).toContain(`Cannot find the program "${preset}" on PATH: ${install}`);
      expect(missing.out).not.toMatch(/registered|ready/);
    }
    // A command given after "--" that is not there: named, nothing to suggest installing.
    const path404 = await run(['--room', roomId, '--name', 'MissingPath', '--', './no-such-cli']);
    expect(path404.code).toBe(1);
    expect(path404.out.trim().split('\n')).toHaveLength(1);
    expect(path404.out).toContain(`Cannot run ${path.resolve('no-such-cli')}: not an executable file`);
    // None of them registered: the names are still free.
    for (const name of ['Missing-claude', 'MissingPath']) {
      await expect(shared.server.ok('register_agent', { name })).resolves.toMatchObject({ agent: { name } });
    }
  });

  it('refuses bad start-up input with one clear line', async () => {
    const run = (args: string[]) =>
      new Promise<{ code: number | null; out: string }>((resolve) => {
        const child = spawn(process.execPath, [CLI, 'cli-agent', ...args], { env: { ...process.env, CHATROOM_STATE_DIR: path.join(shared.work, 'state') }, stdio: ['ignore', 'pipe', 'pipe'] });
        let out = '';
        child.stdout.on('data', (c: Buffer) => (out += c.toString()));
        child.stderr.on('data', (c: Buffer) => (out += c.toString()));
        child.once('exit', (code) => resolve({ code, out }));
      });
    const port = await closedPort();
    const down = await run(['--url', `http://127.0.0.1:${port}`, '--room', 'r', '--name', 'X', '--preset', 'claude']);
    expect(down.code).toBe(1);
    expect(down.out).toContain(`Cannot reach the server at http://127.0.0.1:${port} (connection refused)`);
    const noRoom = await run(['--url', shared.server.url, '--room', 'no-such-room', '--name', 'Lost1', '--preset', 'claude', '--', fake('claude')]);
    expect(noRoom.code).toBe(1);
    expect(noRoom.out).toContain(`There is no room "no-such-room" on ${shared.server.url}`);
    expect(noRoom.out).toMatch(/registered "Lost1"; its token: \S+/);
    // The retry reuses the saved token instead of failing with name_taken.
    const retry = await run(['--url', shared.server.url, '--room', 'no-such-room', '--name', 'Lost1', '--preset', 'claude', '--', fake('claude')]);
    expect(retry.out).toContain('using the saved token of "Lost1"');
    expect(retry.out).not.toContain('taken');
    const usage = await run(['--room', 'r', '--name', 'X', '--preset', 'nope']);
    expect(usage.code).toBe(2);
    expect(usage.out).toContain('--preset must be one of claude, codex, gemini');
  });
});
