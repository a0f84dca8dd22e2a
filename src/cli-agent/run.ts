// `agent-chatroom cli-agent --room R --name N [--preset claude|codex|gemini] -- <command…>`:
// an agent CLI as a room member. On each of its turns the CLI runs once, headless, with the room
// as its prompt; its answer is posted, and a crash, a non-zero exit, silence or the deadline
// becomes a skip whose reason people see. One child at a time; the CLI's session id is kept per
// room so the next turn resumes the same conversation.
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { DEFAULT_SERVER_URL, numberFlag, parseFlags, parseOrExit, PROGRAM_RUNNER_FLAGS, programRunnerOptions, runUntilSignal, RUNNER_FLAGS, stderrLog, splitCommand, type ProgramRunnerOptions } from '../agent/command.js';
import { agentClient, checkServer, signInAndJoin, StartError, stateDir } from '../agent/connect.js';
import { writeMcpConfig } from '../agent/mcp-config.js';
import { requireProgram } from '../agent/program.js';
import { readReply } from '../agent/prompt.js';
import { childEnvironment } from '../agent/secrets.js';
import { giveUp, OneAtATime, passHeldTurns, turnHistory } from '../agent/turns.js';
import type { ChatroomClient, TurnAnswer, TurnInfo } from '../client/index.js';
import type { Participant } from '../types.js';
import { lastLine, runChild, type ChildResult } from './child.js';
import { PRESETS, parsePlainOutput, type McpPlan, type Preset, type PresetName } from './presets.js';
import { buildCliPrompt } from './prompt.js';

export interface CliAgentOptions extends ProgramRunnerOptions<PresetName> {
  /** Messages of history quoted in the prompt. */
  history: number;
  /** Working directory of the CLI (default: the current one). */
  cwd?: string;
}

export interface RunningCliAgent {
  client: ChatroomClient;
  participant: Participant;
  /** Session id kept per room (for --resume). */
  sessions: Map<string, string>;
  /** Kills the running child, skips the turn it held (with the reason), sets activity idle, closes. */
  stop(reason?: string): Promise<void>;
}

const CLI_DEFAULTS = { url: DEFAULT_SERVER_URL, history: 30, maxChars: 8000 } as const;

export async function runCliAgent(options: CliAgentOptions): Promise<RunningCliAgent> {
  const log = options.log ?? (() => undefined);
  const preset: Preset | null = options.preset ? PRESETS[options.preset] : null;
  const command = options.command.length ? options.command : preset ? [preset.program] : [];
  if (command.length === 0) throw new StartError('Give the command to run after "--", or a --preset');
  const program = path.basename(command[0]!);
  await checkServer(options.url);
  // Before signing in: a CLI that is not installed would otherwise skip every turn.
  requireProgram(command[0]!, {
    ...(preset && command[0] === preset.program ? { install: preset.install } : {}),
    ...(options.cwd ? { cwd: options.cwd } : {}),
  });
  const { base, identity, rooms } = await signInAndJoin({ ...options, log }, options.rooms);
  for (const room of rooms) log(`in room "${room.room_name}" (${room.room_id}) as ${identity.participant.name}`);
  const server = options.mcp ? await writeMcpConfig(base, identity.token) : null;
  const mcp: { plan: McpPlan; dir: string } | null = server
    ? { plan: { configPath: server.configPath, command: server.command, args: server.args, env: {} }, dir: server.dir }
    : null;

  const client = agentClient(base, identity.token, {
    ...(options.marginMs !== undefined ? { marginMs: options.marginMs } : {}),
    turnTimeoutReason: `${program} did not answer before the deadline and was stopped`,
    log,
  });
  const participant = await client.connect();
  const me = { name: participant.name, ...(options.introduce ? { introduce: options.introduce } : {}) };
  const sessions = new Map<string, string>();

  // One child at a time, whatever the number of rooms: turns queue here.
  const queue = new OneAtATime();
  let stopping = false;
  const shutdown = new AbortController();
  /** Rooms whose turn is being worked on, with whether it may be skipped. */
  const working = new Map<string, boolean>();

  const takeTurn = async (turn: TurnInfo): Promise<TurnAnswer> => {
    if (stopping || turn.signal.aborted) return undefined;
    working.set(turn.room_id, turn.can_skip);
    try {
      void client.setActivity(turn.room_id, 'thinking', `running ${program}`);
      const history = await turnHistory(client, turn, options.history);
      const prompt = buildCliPrompt(me, turn, history, { mcp: mcp !== null });
      const sessionId = preset?.resumes ? (sessions.get(turn.room_id) ?? null) : null;
      const args = [...command.slice(1), ...(preset ? preset.plan({ sessionId, mcp: mcp?.plan ?? null }).args : [])];
      log(`turn in ${turn.room_id} (${turn.reason}${turn.can_skip ? '' : ', must answer'}): running ${program}${sessionId ? ` (resuming ${sessionId})` : ''}`);
      const result = await runChild({
        command: command[0]!,
        args,
        stdin: prompt,
        signal: AbortSignal.any([turn.signal, shutdown.signal]),
        ...(options.cwd ? { cwd: options.cwd } : {}),
        // Never the token (SPEC §10): the CLI reaches the room through the MCP proxy's private file.
        env: childEnvironment(process.env, identity.token, {
          CHATROOM_URL: base,
          CHATROOM_ROOM_ID: turn.room_id,
          CHATROOM_AGENT_NAME: participant.name,
        }),
      });
      if (stopping) return undefined; // stop() passes the turn with its own reason
      const parsed = preset ? preset.parse(result.stdout) : parsePlainOutput(result.stdout);
      if (parsed.sessionId && preset?.resumes) sessions.set(turn.room_id, parsed.sessionId);
      const failure = describeFailure(program, result, parsed.error);
      log(`${program} finished in ${result.durationMs} ms${failure ? `: ${failure}` : ''}`);
      if (failure) return giveUp(client, turn, failure);
      if (mcp) {
        // The CLI may have posted with send_message itself: then the turn has moved on.
        const now = await client.call<{ your_turn: { round_id: string } | null }>('get_context', { room_id: turn.room_id, limit: 1 }, { signal: turn.signal });
        if (!now.your_turn || now.your_turn.round_id !== turn.round_id) {
          log(`${program} answered through the room's tools`);
          return undefined;
        }
      }
      if (!parsed.text.trim()) return giveUp(client, turn, `${program} printed no answer`);
      return readReply(parsed.text, me, { canSkip: turn.can_skip, maxChars: options.maxChars, language: turn.context.room.language });
    } finally {
      working.delete(turn.room_id);
    }
  };

  client.onTurn((turn) => queue.run(() => takeTurn(turn)));

  return {
    client,
    participant,
    sessions,
    async stop(reason = 'agent stopped') {
      if (stopping) return;
      stopping = true;
      const held = [...working.entries()];
      shutdown.abort();
      await queue.idle(); // the child is dead once its turn's work has settled
      await passHeldTurns(client, held, reason);
      await client.close();
      if (mcp) await rm(mcp.dir, { recursive: true, force: true });
    },
  };
}

/** Why a run gave no answer, or null when it did. */
export function describeFailure(program: string, result: ChildResult, reported?: string): string | null {
  if (result.spawnError) return `cannot start ${program}: ${result.spawnError}`;
  if (result.killed) return `${program} did not finish before the deadline and was stopped`;
  if (result.code !== 0) {
    const why = reported ?? (lastLine(result.stderr) || lastLine(result.stdout));
    const how = result.signal ? `was killed by ${result.signal}` : `exited with code ${result.code}`;
    return `${program} ${how}${why ? `: ${why}` : ''}`;
  }
  if (reported) return `${program} reported an error: ${reported}`;
  return null;
}

const USAGE = `Usage: agent-chatroom cli-agent --room <room_id> (--name <name> | --token <token>) [--preset claude|codex|gemini] [options] [-- <command…>]

Runs an agent CLI once per turn with the room as its prompt and posts its answer.
  --url <url>            chat server (default ${CLI_DEFAULTS.url})
  --room <room_id>       room to join; repeat for several rooms
  --name <name>          agent name; registers it (the token is saved and reused) when no token is given
  --token <token>        an existing agent token (or env CHATROOM_TOKEN)
  --preset <p>           claude (claude -p --output-format json, --resume),
                         codex (codex exec --json, resume), gemini (gemini -p, --output-format json)
  --mcp                  let the CLI call the room's tools itself (claude, codex)
  --introduce <text>     a line about the agent, for registration and the prompt
  --room-password <pw>   password of a protected room
  --history <n>          messages quoted in the prompt (default ${CLI_DEFAULTS.history})
  --cwd <dir>            working directory of the CLI
  --margin-ms <n>        stop the CLI this long before the turn's deadline
  -- <command…>          the program and its own flags (default: the preset's program);
                         without a preset it gets the prompt on stdin and its stdout is the answer`;

export function parseCliAgentArgs(argv: string[], env: Record<string, string | undefined> = process.env): CliAgentOptions | 'help' {
  const { own, command } = splitCommand(argv);
  const values = parseFlags(own, { ...RUNNER_FLAGS, ...PROGRAM_RUNNER_FLAGS });
  if (values.help) return 'help';
  const common = programRunnerOptions(values, command, PRESETS, { maxChars: CLI_DEFAULTS.maxChars, stateDir: stateDir(env) }, env);
  if (common.mcp && common.preset === 'gemini') throw new Error('--mcp works with --preset claude or codex (add the server to Gemini\'s settings.json instead, see docs/agents.md)');
  return {
    ...common,
    history: numberFlag('history', values.history, 1, 200, 'whole number') ?? CLI_DEFAULTS.history,
    ...(values.cwd ? { cwd: path.resolve(values.cwd) } : {}),
  };
}

/** `agent-chatroom cli-agent …` (src/cli.ts). Runs until SIGINT/SIGTERM. */
export async function cliAgentCommand(argv: string[] = process.argv.slice(3)): Promise<void> {
  const options = parseOrExit(parseCliAgentArgs, argv, USAGE);
  if (!options) return;
  const log = stderrLog(options.name ?? options.preset ?? 'cli-agent');
  await runUntilSignal(
    () => runCliAgent({ ...options, log }),
    (agent, signal) => agent.stop(`agent stopped (${signal})`),
    log,
  );
}
