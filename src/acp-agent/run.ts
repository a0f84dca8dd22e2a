// `agent-chatroom acp-agent --room R --name N [--preset claude|codex|gemini] [-- <command…>]`
// (SPEC §12): an agent program that speaks the Agent Client Protocol over stdio as a room
// member. The program starts once and keeps one ACP session per room (saved, and loaded again
// after a restart where the agent can); each turn is one `session/prompt` holding what is new
// in the room, its streamed updates become the member's activity, its streamed text the answer.
// Near the deadline the runner sends `session/cancel` and passes the turn; a crash is a visible
// skip and the program is started again for the next turn. One prompt at a time.
import { rm } from 'node:fs/promises';
import path from 'node:path';
import type { McpServer } from '@agentclientprotocol/sdk';
import { DEFAULT_SERVER_URL, numberFlag, parseFlags, parseOrExit, PROGRAM_RUNNER_FLAGS, programRunnerOptions, runUntilSignal, RUNNER_FLAGS, stderrLog, splitCommand, type ProgramRunnerOptions } from '../agent/command.js';
import { agentClient, checkServer, signInAndJoin, StartError, stateDir } from '../agent/connect.js';
import { writeMcpConfig, type RoomMcpServer } from '../agent/mcp-config.js';
import { requireProgram } from '../agent/program.js';
import { readReply } from '../agent/prompt.js';
import { giveUp, OneAtATime, passHeldTurns } from '../agent/turns.js';
import type { ChatroomClient, TurnAnswer, TurnInfo } from '../client/index.js';
import type { Participant } from '../types.js';
import { ActivityThrottle, choosePermission, TOOL_KINDS, TurnUpdates } from './activity.js';
import { AcpAgentProcess, AgentExitedError, describeExit, scrubbedEnv } from './connection.js';
import { ACP_PRESETS, type AcpPresetName } from './presets.js';
import { buildAcpPrompt, newMessages, omittedCount } from './prompt.js';
import { SessionStore } from './sessions.js';

export interface AcpAgentOptions extends ProgramRunnerOptions<AcpPresetName> {
  /** Tool kinds whose permission requests are allowed (`all` for every kind). */
  allow: ReadonlySet<string>;
  /** Working directory of the program and of its sessions (absolute). */
  cwd: string;
  /** How long the program may take to answer `initialize`. */
  startTimeoutMs: number;
}

export interface RunningAcpAgent {
  client: ChatroomClient;
  participant: Participant;
  /** The running agent program (replaced after a crash). */
  agent(): AcpAgentProcess | null;
  /** Cancels the running prompt, passes the turn it held (with the reason), stops the program, closes. */
  stop(reason?: string): Promise<void>;
}

const ACP_DEFAULTS = { url: DEFAULT_SERVER_URL, startTimeoutS: 30, maxChars: 8000 } as const;
/** How long a cancelled prompt may take to end before the program is stopped (and restarted next turn). */
const CANCEL_GRACE_MS = 5000;

interface RoomSession {
  sessionId: string;
  lastSeq: number;
}

export async function runAcpAgent(options: AcpAgentOptions): Promise<RunningAcpAgent> {
  const log = options.log ?? (() => undefined);
  const preset = options.preset ? ACP_PRESETS[options.preset] : null;
  const command = options.command.length ? options.command : preset ? [preset.program, ...preset.args] : [];
  if (command.length === 0) throw new StartError('Give the command to run after "--", or a --preset');
  const program = path.basename(command[0]!);
  await checkServer(options.url);
  // Before signing in: a missing program is one line saying what to install.
  requireProgram(command[0]!, { cwd: options.cwd, ...(preset && command[0] === preset.program ? { install: preset.install } : {}) });
  const { base, identity, rooms } = await signInAndJoin({ ...options, log }, options.rooms);
  for (const room of rooms) log(`in room "${room.room_name}" (${room.room_id}) as ${identity.participant.name}`);
  const env = scrubbedEnv(process.env, identity.token);
  const store = new SessionStore(options.stateDir, { url: base, name: identity.participant.name, command: command.join(' ') });

  let mcp: RoomMcpServer | null = null;
  let agent: AcpAgentProcess | null = null;
  /** The turn being worked on, by ACP session id: where its updates go. */
  const active = new Map<string, TurnUpdates>();
  const sessions = new Map<string, RoomSession>();
  let stopping = false;

  const startAgent = async (): Promise<AcpAgentProcess> => {
    const started = await AcpAgentProcess.start({
      command: command[0]!,
      args: command.slice(1),
      env,
      cwd: options.cwd,
      startTimeoutMs: options.startTimeoutMs,
      log,
      handlers: {
        onUpdate: (sessionId, update) => active.get(sessionId)?.apply(update),
        onPermission: (request) => {
          const choice = choosePermission(request, options.allow);
          log(`permission: ${choice.note}`);
          active.get(request.sessionId)?.permission(choice.note);
          return { outcome: choice.outcome };
        },
      },
    });
    sessions.clear(); // sessions live in the program: a new one loads or opens them again
    void started.exited.then((exit) => {
      if (!stopping) log(`${program} ${describeExit(exit)}`);
    });
    return started;
  };

  try {
    mcp = options.mcp ? await writeMcpConfig(base, identity.token) : null;
    // Started before going online: a program that is not an ACP agent is a start error.
    agent = await startAgent();
  } catch (err) {
    if (mcp) await rm(mcp.dir, { recursive: true, force: true });
    throw err;
  }
  const mcpServers: McpServer[] = mcp ? [{ name: 'chatroom', command: mcp.command, args: mcp.args, env: [] }] : [];

  const client = agentClient(base, identity.token, {
    ...(options.marginMs !== undefined ? { marginMs: options.marginMs } : {}),
    turnTimeoutReason: `${program} did not finish before the deadline: its prompt was cancelled`,
    log,
  });
  let participant: Participant;
  try {
    participant = await client.connect();
  } catch (err) {
    await agent.stop();
    throw err;
  }
  const me = { name: participant.name, ...(options.introduce ? { introduce: options.introduce } : {}) };
  const skipPhrases = new Set((participant as { skip_list?: string[] }).skip_list?.map((p) => p.trim().toLowerCase()) ?? []);

  /** The room's session in the running program: loaded (after a restart) or new. */
  const sessionFor = async (live: AcpAgentProcess, roomId: string): Promise<RoomSession & { continuing: boolean }> => {
    const open = sessions.get(roomId);
    if (open) return { ...open, continuing: true };
    const saved = await store.get(roomId);
    if (saved && live.capabilities.loadSession) {
      try {
        await live.loadSession(saved.session_id, options.cwd, mcpServers);
        const loaded = { sessionId: saved.session_id, lastSeq: saved.last_seq };
        sessions.set(roomId, loaded);
        log(`room ${roomId}: loaded ACP session ${saved.session_id}`);
        return { ...loaded, continuing: true };
      } catch (err) {
        if (err instanceof AgentExitedError) throw err;
        log(`room ${roomId}: cannot load session ${saved.session_id} (${(err as Error).message}); opening a new one`);
      }
    }
    const created = { sessionId: await live.newSession(options.cwd, mcpServers), lastSeq: 0 };
    sessions.set(roomId, created);
    await store.set(roomId, { session_id: created.sessionId, last_seq: 0 });
    log(`room ${roomId}: new ACP session ${created.sessionId}`);
    return { ...created, continuing: false };
  };

  /** The prompt's answer; after `signal` aborts: cancelled, and a program that ignores the cancel is stopped. */
  const promptUntil = async (live: AcpAgentProcess, sessionId: string, text: string, signal: AbortSignal) => {
    let grace: NodeJS.Timeout | undefined;
    const onAbort = () => {
      log(`deadline near: session/cancel for ${sessionId}`);
      live.cancel(sessionId);
      grace = setTimeout(() => {
        log(`${program} did not end the cancelled prompt within ${CANCEL_GRACE_MS / 1000} s: stopping it`);
        void live.stop();
      }, CANCEL_GRACE_MS);
    };
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
    try {
      return await live.prompt(sessionId, text);
    } finally {
      signal.removeEventListener('abort', onAbort);
      clearTimeout(grace);
    }
  };

  // One prompt at a time, whatever the number of rooms: turns queue here.
  const queue = new OneAtATime();
  const shutdown = new AbortController();
  /** Rooms whose turn is being worked on, with whether it may be skipped. */
  const working = new Map<string, boolean>();

  const takeTurn = async (turn: TurnInfo): Promise<TurnAnswer> => {
    if (stopping || turn.signal.aborted) return undefined;
    working.set(turn.room_id, turn.can_skip);
    const throttle = new ActivityThrottle((activity, note) => client.setActivity(turn.room_id, activity, note));
    try {
      throttle.set('thinking', `${program} is reading the room`);
      if (!agent?.alive) {
        log(`starting ${program} again`);
        try {
          agent = await startAgent();
        } catch (err) {
          agent = null;
          return giveUp(client, turn, `cannot restart ${program}: ${(err as Error).message}`);
        }
      }
      const live = agent;
      const signal = AbortSignal.any([turn.signal, shutdown.signal]);
      let session: RoomSession & { continuing: boolean };
      try {
        session = await sessionFor(live, turn.room_id);
      } catch (err) {
        if (stopping) return undefined;
        return giveUp(client, turn, err instanceof AgentExitedError ? err.message : `${program} could not open a session: ${(err as Error).message}`);
      }
      const fresh = newMessages(turn, session.lastSeq);
      const text = buildAcpPrompt(me, turn, fresh, { mcp: mcp !== null, continuing: session.continuing, omitted: omittedCount(turn) });
      const updates = new TurnUpdates(throttle, program);
      active.set(session.sessionId, updates);
      log(`turn in ${turn.room_id} (${turn.reason}${turn.can_skip ? '' : ', must answer'}): prompting ${program} with ${fresh.length} new messages`);
      let stopReason: string;
      try {
        stopReason = (await promptUntil(live, session.sessionId, text, signal)).stopReason;
      } catch (err) {
        if (stopping) return undefined;
        if (err instanceof AgentExitedError) return giveUp(client, turn, `${err.message} (during the turn; it is started again for the next one)`);
        if (signal.aborted) return undefined; // the turn was passed already, with the deadline's reason
        return giveUp(client, turn, `${program} answered the prompt with an error: ${(err as Error).message}`);
      } finally {
        active.delete(session.sessionId);
      }
      // The session now holds these messages: the next prompt starts after them.
      const seen = Math.max(session.lastSeq, ...turn.context.messages.map((m) => m.seq));
      sessions.set(turn.room_id, { sessionId: session.sessionId, lastSeq: seen });
      await store.set(turn.room_id, { session_id: session.sessionId, last_seq: seen }).catch((err: Error) => log(`cannot save the session: ${err.message}`));
      if (stopping || signal.aborted || stopReason === 'cancelled') return undefined;
      if (stopReason === 'refusal') return giveUp(client, turn, `${program} refused to answer`);
      if (mcp) {
        // The agent may have posted with send_message itself: then the turn has moved on.
        const now = await client.call<{ your_turn: { round_id: string } | null }>('get_context', { room_id: turn.room_id, limit: 1 }, { signal: turn.signal });
        if (!now.your_turn || now.your_turn.round_id !== turn.round_id) {
          log(`${program} answered through the room's tools`);
          return undefined;
        }
      }
      const answer = updates.text.trim();
      log(`${program} ended its turn (${stopReason}) with ${answer.length} characters`);
      if (!answer) return giveUp(client, turn, `${program} sent no answer`);
      if (skipPhrases.has(answer.toLowerCase())) return turn.can_skip ? { skip: true } : { text: answer };
      return readReply(answer, me, { canSkip: turn.can_skip, maxChars: options.maxChars, language: turn.context.room.language });
    } finally {
      throttle.stop();
      working.delete(turn.room_id);
    }
  };

  client.onTurn((turn) => queue.run(() => takeTurn(turn)));

  return {
    client,
    participant,
    agent: () => agent,
    async stop(reason = 'agent stopped') {
      if (stopping) return;
      stopping = true;
      const held = [...working.entries()];
      shutdown.abort();
      await agent?.stop(); // ends a running prompt with AgentExitedError, and the turn's work with it
      await queue.idle();
      await passHeldTurns(client, held, reason);
      await client.close();
      if (mcp) await rm(mcp.dir, { recursive: true, force: true });
    },
  };
}

const USAGE = `Usage: agent-chatroom acp-agent --room <room_id> (--name <name> | --token <token>) [--preset claude|codex|gemini] [options] [-- <command…>]

Runs an agent that speaks the Agent Client Protocol (ACP) as a room member: one long-lived
program, one ACP session per room, its progress shown as the member's activity.
  --url <url>            chat server (default ${ACP_DEFAULTS.url})
  --room <room_id>       room to join; repeat for several rooms (one session each)
  --name <name>          agent name; registers it (the token is saved and reused) when no token is given
  --token <token>        an existing agent token (better: env CHATROOM_TOKEN; a command line is visible to other users)
  --preset <p>           claude (${ACP_PRESETS.claude.program}), codex (${ACP_PRESETS.codex.program}),
                         gemini (${ACP_PRESETS.gemini.program} ${ACP_PRESETS.gemini.args.join(' ')})
  --allow <kinds>        permission requests to grant, comma-separated tool kinds:
                         ${TOOL_KINDS.join(', ')}, or all (default: refuse every request)
  --mcp                  give the agent the room's tools (an MCP server in each session)
  --introduce <text>     a line about the agent, for registration and the prompt
  --room-password <pw>   password of a protected room
  --cwd <dir>            working directory of the program and its sessions (default: the current one)
  --margin-ms <n>        cancel the prompt this long before the turn's deadline
  --start-timeout <s>    how long the program may take to answer initialize (default ${ACP_DEFAULTS.startTimeoutS})
  -- <command…>          any other ACP agent program and its flags (instead of a preset)

The program never gets the agent's token (not in its environment, not on its command line).`;

export function parseAcpAgentArgs(argv: string[], env: Record<string, string | undefined> = process.env): AcpAgentOptions | 'help' {
  const { own, command } = splitCommand(argv);
  const { history: _history, ...runnerFlags } = RUNNER_FLAGS; // the session keeps the history
  const values = parseFlags(own, {
    ...runnerFlags,
    ...PROGRAM_RUNNER_FLAGS,
    allow: { type: 'string', multiple: true },
    'start-timeout': { type: 'string' },
  });
  if (values.help) return 'help';
  const common = programRunnerOptions(values, command, ACP_PRESETS, { maxChars: ACP_DEFAULTS.maxChars, stateDir: stateDir(env) }, env);
  const allow = new Set<string>();
  for (const kind of (values.allow ?? []).flatMap((v) => v.split(',')).map((k) => k.trim()).filter(Boolean)) {
    if (kind !== 'all' && !(TOOL_KINDS as readonly string[]).includes(kind)) throw new Error(`--allow: "${kind}" is not a tool kind (${TOOL_KINDS.join(', ')}, all)`);
    allow.add(kind);
  }
  const startTimeout = numberFlag('start-timeout', values['start-timeout'], 0.1, 600, 'number of seconds') ?? ACP_DEFAULTS.startTimeoutS;
  return {
    ...common,
    allow,
    cwd: path.resolve(values.cwd ?? '.'),
    startTimeoutMs: Math.round(startTimeout * 1000),
  };
}

/** `agent-chatroom acp-agent …` (src/cli.ts). Runs until SIGINT/SIGTERM. */
export async function acpAgentCommand(argv: string[] = process.argv.slice(3)): Promise<void> {
  const options = parseOrExit(parseAcpAgentArgs, argv, USAGE);
  if (!options) return;
  const log = stderrLog(options.name ?? options.preset ?? 'acp-agent');
  // --token was warned about while parsing (signInOptions), as for every runner.
  await runUntilSignal(
    () => runAcpAgent({ ...options, log }),
    (agent, signal) => agent.stop(`agent stopped (${signal})`),
    log,
  );
}
