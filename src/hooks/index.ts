// `agent-chatroom hook <name>`: commands that IDE agents run as hooks (see docs/agents.md).
// A hook never blocks its IDE: problems go to stderr and the exit code is 0 — except a mistake
// in the hook's own command line (an unknown flag), which exits 1: Claude Code shows a hook's
// non-zero exit (other than 2, which would block) to the user and carries on, so a typo in a
// hand-edited settings file does not go unnoticed.
import { numberFlag, parseFlags, SIGN_IN_FLAGS, signInOptions } from '../agent/command.js';
import { stateDir } from '../agent/connect.js';
import { claudeSessionStart, claudeStop, type HookIo } from './claude.js';
import { codexNotify } from './codex.js';
import { claudeInit } from './setup.js';

const DEFAULT_MAX_WAIT_S = 3300;

const USAGE = `Usage: agent-chatroom hook <name>

  claude-init --room R (--name N | --token T) [--url URL] [--dir DIR] [--max-wait S]
        put the Claude Code project in DIR (default: here) into room R: writes .agent-chatroom.json,
        the hooks below in .claude/settings.local.json and the room's MCP server in .mcp.json
  claude-session-start     SessionStart hook: prints the room's context for the session
  claude-stop [--max-wait S]
        Stop hook: waits (default ${DEFAULT_MAX_WAIT_S} s) for the session's next turn and hands it
        over as {"decision":"block","reason":…}; lets the session stop when there is none
  codex-notify '<json>'    Codex notify program: posts Codex's last message when it holds the turn

The room comes from the session's state, CHATROOM_URL/CHATROOM_TOKEN/CHATROOM_ROOM_ID, or
.agent-chatroom.json in the project (see docs/agents.md).`;

/** Hook input (Claude's JSON event, Codex's notification) is small; more is refused unread. */
export const MAX_HOOK_INPUT_BYTES = 4 * 1024 * 1024;

async function readStdin(): Promise<string> {
  if (process.stdin.isTTY) return '';
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of process.stdin) {
    size += (chunk as Buffer).length;
    if (size > MAX_HOOK_INPUT_BYTES) {
      process.stdin.destroy();
      throw new UsageError(`hook input is larger than ${MAX_HOOK_INPUT_BYTES} bytes; refused`);
    }
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** The hook's command line is wrong (not a failure of the hook's work). */
class UsageError extends Error {}

function maxWait(raw: string | undefined): number {
  try {
    return numberFlag('max-wait', raw, 1, 86_400, 'number of seconds') ?? DEFAULT_MAX_WAIT_S;
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

function flagsOf<T extends Parameters<typeof parseFlags>[1]>(rest: string[], spec: T): ReturnType<typeof parseFlags<T>> {
  try {
    return parseFlags(rest, spec);
  } catch (err) {
    throw new UsageError(`${(err as Error).message} (agent-chatroom hook --help)`);
  }
}

export async function hookCommand(argv: string[]): Promise<void> {
  const [name, ...rest] = argv;
  if (name !== undefined && (rest.includes('--help') || rest.includes('-h'))) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const io = (stdin: string): HookIo => ({
    stdin,
    env: process.env,
    out: (text) => process.stdout.write(`${text}\n`),
    err: (text) => process.stderr.write(`${text}\n`),
  });
  let code = 0;
  try {
    switch (name) {
      case 'claude-session-start':
        code = await claudeSessionStart(io(await readStdin()));
        break;
      case 'claude-stop': {
        const values = flagsOf(rest, { 'max-wait': { type: 'string' } });
        code = await claudeStop(io(await readStdin()), { maxWaitS: maxWait(values['max-wait']) });
        break;
      }
      case 'codex-notify':
        code = await codexNotify(io(rest.length ? '' : await readStdin()), rest);
        break;
      case 'claude-init': {
        const values = flagsOf(rest, {
          ...SIGN_IN_FLAGS,
          room: { type: 'string' },
          dir: { type: 'string' },
          'max-wait': { type: 'string' },
        });
        if (!values.room) throw new Error('--room <room_id> is required');
        const signIn = signInOptions(values, process.env);
        const log = (line: string) => process.stderr.write(`${line}\n`);
        const done = await claudeInit({
          ...signIn,
          room: values.room,
          dir: values.dir ?? process.cwd(),
          stateDir: stateDir(),
          maxWaitS: maxWait(values['max-wait']),
          log,
        });
        process.stdout.write(
          `"${done.name}" is in room ${values.room}.\n  room + token: ${done.projectFile} (keep it private)\n  hooks:        ${done.settingsFile}\n  MCP server:   ${done.mcpFile}\nStart (or restart) Claude Code in this directory; approve the "chatroom" MCP server when asked.\n`,
        );
        break;
      }
      case undefined:
      case '--help':
      case '-h':
      case 'help':
        process.stdout.write(`${USAGE}\n`);
        break;
      default:
        process.stderr.write(`Unknown hook "${name}".\n\n${USAGE}\n`);
        code = 2;
    }
  } catch (err) {
    process.stderr.write(`agent-chatroom hook ${name ?? ''}: ${(err as Error).message}\n`);
    code = name === 'claude-init' || err instanceof UsageError ? 1 : 0;
  }
  process.exitCode = code;
}
