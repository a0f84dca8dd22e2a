// The page's "add an agent" dialog (public/agent-commands.js builds its lines) offers command
// lines a person pastes into a terminal: run as they are, against stand-in CLIs that record
// their argv, each flag reaches the CLI once (a preset appends its own flags, so the line must
// not repeat them). The browser test (test/browser/round-two.test.ts) checks that the dialog
// shows these very lines.
import { spawn, type ChildProcess } from 'node:child_process';
import { chmod, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
// @ts-expect-error plain JS module of the page (checked by tsconfig.public.json)
import { agentCommands } from '../../public/agent-commands.js';
import { CLI } from '../helpers/process.js';
import { registerUser, serverAndWorkDirForFile } from '../helpers/server.js';

const shared = serverAndWorkDirForFile('dialog-commands-');
const PRESETS = ['claude', 'codex', 'gemini'] as const;

/** What each preset runs (docs/agents.md, "command run"), flags once. */
const EXPECTED_ARGV = {
  claude: ['-p', '--output-format', 'json'],
  codex: ['exec', '--json', '--skip-git-repo-check', '-'],
  gemini: ['--output-format', 'json', '-p', expect.stringContaining('chat room')],
};

const children: ChildProcess[] = [];
afterAll(async () => {
  for (const child of children) {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await exited;
    }
  }
});

/** Flags of a command line (or argv) that appear more than once. */
function repeatedFlags(words: readonly string[]): string[] {
  const flags = words.filter((w) => /^-{1,2}[A-Za-z]/.test(w));
  return flags.filter((f, i) => flags.indexOf(f) !== i);
}

describe('the add-agent dialog’s command lines', () => {
  it('carry each flag once, text and settings alike', () => {
    for (const preset of PRESETS) {
      for (const hasPassword of [false, true]) {
        const lines = agentCommands({ url: 'http://127.0.0.1:3000', roomId: 'r-1', name: 'Alpha', preset, hasPassword }) as Record<string, string>;
        for (const [key, line] of Object.entries(lines)) {
          if (key.endsWith('Json') || key.endsWith('Toml')) continue;
          expect(repeatedFlags(line.split(' ')), `${preset} ${key}: ${line}`).toEqual([]);
          // Tokens go through CHATROOM_TOKEN or the saved state, never a command line.
          expect(line, key).not.toContain('--token');
        }
        expect(lines.cli).not.toContain(' -- ');
        expect(lines.acp).not.toContain(' -- ');
      }
    }
  });

  it('run the CLIs with each flag once (stand-ins on PATH record their argv)', async () => {
    const person = await registerUser(shared.server, 'DialogMia');
    const { room } = await shared.server.ok('create_room', { room_name: 'Dialog room', language: 'en' }, person.token);
    await shared.server.ok('update_room', { room_id: room.room_id, turn_timeout_ms: 20_000, max_auto_rounds: 1 }, person.token);

    // claude, codex and gemini on PATH: one script that writes down how it was called.
    const argvLog = path.join(shared.work, 'argv.jsonl');
    for (const cli of PRESETS) {
      const file = path.join(shared.work, cli);
      await writeFile(
        file,
        `#!${process.execPath}\nrequire('node:fs').appendFileSync(${JSON.stringify(argvLog)}, JSON.stringify({ cli: ${JSON.stringify(cli)}, argv: process.argv.slice(2) }) + '\\n');\n`,
      );
      await chmod(file, 0o755);
    }

    for (const preset of PRESETS) {
      const line: string = agentCommands({ url: shared.server.url, roomId: room.room_id, name: `Dlg-${preset}`, preset, hasPassword: false }).cli;
      const [program, ...args] = line.split(' ');
      expect(program).toBe('agent-chatroom');
      const child = spawn(process.execPath, [CLI, ...args], {
        env: { ...process.env, PATH: `${shared.work}${path.delimiter}${process.env.PATH}`, CHATROOM_STATE_DIR: path.join(shared.work, 'state') },
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      children.push(child);
      let out = '';
      child.stderr!.on('data', (c: Buffer) => (out += c.toString()));
      await expect.poll(() => out, { timeout: 20_000, interval: 50 }).toMatch(/ready: waiting for turns/);
    }

    // A message starts a round: each agent's turn runs its CLI once.
    await shared.server.ok('send_message', { room_id: room.room_id, text_content: 'Hello, who is there?' }, person.token);
    const runs = async () =>
      (await readFile(argvLog, 'utf8').catch(() => ''))
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as { cli: (typeof PRESETS)[number]; argv: string[] });
    await expect.poll(async () => new Set((await runs()).map((r) => r.cli)).size, { timeout: 30_000, interval: 100 }).toBe(3);
    for (const run of await runs()) {
      expect(repeatedFlags(run.argv), `${run.cli} ${run.argv.join(' ')}`).toEqual([]);
      expect(run.argv, run.cli).toEqual(EXPECTED_ARGV[run.cli]);
    }
  });
});
