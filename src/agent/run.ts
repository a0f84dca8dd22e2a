// A ready-to-run networked agent: `agent-chatroom agent --name Qwen --room <room_id> --model qwen2.5`.
// Checks the chat server and the model server, registers (or uses --token / its saved token),
// joins its rooms, keeps a WebSocket open and answers every turn with an OpenAI-compatible model
// (streamed), or with `echo: <last message>` in --echo mode. Model errors become skip reasons.
import type { ChatroomClient, TurnAnswer, TurnInfo } from '../client/index.js';
import type { Participant } from '../types.js';
import { DEFAULT_SERVER_URL, numberFlag, parseFlags, parseOrExit, runUntilSignal, RUNNER_FLAGS, requiredRooms, signInOptions, stderrLog } from './command.js';
import { agentClient, checkServer, signInAndJoin, StartError, stateDir } from './connect.js';
import { chatCompletion, checkModelServer, LlmError } from './llm.js';
import { buildPrompt, readReply } from './prompt.js';
import { giveUp, turnHistory } from './turns.js';

export interface AgentOptions {
  /** Chat server, http(s)://host:port. */
  url: string;
  /** Agent name: registers it when no token is given (or reuses the token saved for it). */
  name?: string;
  token?: string;
  introduce?: string;
  rooms: string[];
  roomPassword?: string;
  /** `echo: <last message text>` instead of a model. */
  echo: boolean;
  /** OpenAI-compatible API base, e.g. http://127.0.0.1:11434/v1. */
  baseUrl: string;
  model?: string;
  apiKey?: string;
  temperature?: number;
  maxTokens: number;
  /** Messages of history quoted to the model. */
  history: number;
  /** Longest answer posted (characters). */
  maxChars: number;
  /** Time kept before a turn's deadline (default: the client's, 10 % of the turn). */
  marginMs?: number;
  /** Ask the model for a streamed answer (default true). */
  stream?: boolean;
  /** Where a registered token is kept (default: $CHATROOM_STATE_DIR or ~/.config/agent-chatroom). */
  stateDir?: string;
  log?: (line: string) => void;
}

export const AGENT_DEFAULTS = {
  url: DEFAULT_SERVER_URL,
  baseUrl: 'http://127.0.0.1:11434/v1',
  maxTokens: 800,
  history: 30,
  maxChars: 8000,
} as const;

export interface RunningAgent {
  client: ChatroomClient;
  participant: Participant;
  /** Set when the agent registered itself (also saved in the state file and logged). */
  registeredToken: string | null;
  stop(): Promise<void>;
}

/**
 * Starts the agent. Checks come first and fail with one line naming the URL: the chat server,
 * the model server (unless --echo), then the token (flag, saved, or a new registration that is
 * saved and logged at once), then the rooms.
 */
export async function runAgent(options: AgentOptions): Promise<RunningAgent> {
  const log = options.log ?? (() => undefined);
  if (!options.echo && !options.model) throw new StartError('--model is required (or use --echo)');
  await checkServer(options.url);
  if (!options.echo) {
    const { warning } = await checkModelServer({ baseUrl: options.baseUrl, model: options.model!, ...(options.apiKey ? { apiKey: options.apiKey } : {}) });
    if (warning) log(`warning: ${warning}`);
  }
  const { base, identity, rooms } = await signInAndJoin({ ...options, stateDir: options.stateDir ?? stateDir(), log }, options.rooms);
  for (const room of rooms) log(`in room "${room.room_name}" (${room.room_id})`);
  const client = agentClient(base, identity.token, {
    ...(options.marginMs !== undefined ? { marginMs: options.marginMs } : {}),
    turnTimeoutReason: options.echo ? 'no answer in time' : `the model (${options.model}) did not answer before the deadline`,
    log,
  });
  const participant = await client.connect();
  const me = { name: participant.name, ...(options.introduce ? { introduce: options.introduce } : {}) };

  client.onTurn(async (turn): Promise<TurnAnswer> => {
    const started = Date.now();
    log(`turn in ${turn.room_id} (${turn.reason}${turn.can_skip ? '' : ', must answer'}), deadline ${turn.deadline}`);
    const answer = options.echo ? echoAnswer(turn, participant) : await modelAnswer(client, options, me, turn, log);
    log(
      answer === undefined
        ? `no answer (${Date.now() - started} ms)`
        : 'skip' in answer
          ? `skipped${answer.reason ? `: ${answer.reason}` : ''} (${Date.now() - started} ms)`
          : `answered ${[...answer.text].length} chars (${Date.now() - started} ms)`,
    );
    return answer;
  });
  return {
    client,
    participant,
    registeredToken: identity.source === 'registered' ? identity.token : null,
    stop: () => client.close(),
  };
}

function echoAnswer(turn: TurnInfo, me: Participant): { text: string } {
  const others = turn.context.messages.filter((m) => m.sender_id !== me.id);
  const last = others.at(-1);
  return { text: `echo: ${last ? last.text_content : '(nothing new)'}` };
}

async function modelAnswer(
  client: ChatroomClient,
  options: AgentOptions,
  me: { name: string; introduce?: string },
  turn: TurnInfo,
  log: (line: string) => void,
): Promise<TurnAnswer> {
  void client.setActivity(turn.room_id, 'thinking', `asking ${options.model}`);
  const history = await turnHistory(client, turn, options.history);
  // While the answer streams in, the room sees it being written (at most every 2 s).
  let shown = 0;
  const onProgress = (text: string) => {
    if (Date.now() - shown < 2000) return;
    shown = Date.now();
    void client.setActivity(turn.room_id, 'working', `writing (${[...text].length} characters)`);
  };
  let reply: string;
  try {
    reply = await chatCompletion(buildPrompt(me, turn, history), {
      baseUrl: options.baseUrl,
      model: options.model!,
      maxTokens: options.maxTokens,
      signal: turn.signal,
      stream: options.stream ?? true,
      onProgress,
      ...(options.apiKey ? { apiKey: options.apiKey } : {}),
      ...(options.temperature !== undefined ? { temperature: options.temperature } : {}),
    });
  } catch (err) {
    if (!(err instanceof LlmError)) throw err; // an abort (deadline) or a bug: the runner handles it
    const reason = `model error: ${err.message}`;
    log(reason);
    return giveUp(client, turn, reason);
  }
  return readReply(reply, me, { canSkip: turn.can_skip, maxChars: options.maxChars, language: turn.context.room.language });
}

const USAGE = `Usage: agent-chatroom agent --room <room_id> (--name <name> | --token <token>) (--model <model> | --echo) [options]

  --url <url>            chat server (default ${AGENT_DEFAULTS.url})
  --name <name>          agent name; registers it when no token is given
  --token <token>        an existing agent token (or env CHATROOM_TOKEN)
  --introduce <text>     a line about the agent, for registration and the prompt
  --room <room_id>       room to join; repeat for several rooms
  --room-password <pw>   password of a protected room
  --echo                 answer "echo: <last message>" (no model needed)
  --base-url <url>       OpenAI-compatible API base (default ${AGENT_DEFAULTS.baseUrl})
  --model <model>        model name, e.g. qwen2.5
  --api-key-env <VAR>    environment variable that holds the API key (e.g. OPENAI_API_KEY)
  --temperature <n>      sampling temperature
  --max-tokens <n>       longest model answer in tokens (default ${AGENT_DEFAULTS.maxTokens})
  --history <n>          messages quoted to the model (default ${AGENT_DEFAULTS.history})
  --margin-ms <n>        stop working this long before a turn's deadline
  --no-stream            ask the model for one JSON answer instead of a stream

A token the agent registers is printed and saved (~/.config/agent-chatroom/agents.json, or
$CHATROOM_STATE_DIR): a restart with the same --url and --name reuses it.`;

/** argv (after `agent`) → options; throws with a one-line message on bad input. */
export function parseAgentArgs(argv: string[], env: Record<string, string | undefined> = process.env): AgentOptions | 'help' {
  const values = parseFlags(argv, {
    ...RUNNER_FLAGS,
    echo: { type: 'boolean' },
    'base-url': { type: 'string' },
    model: { type: 'string' },
    'api-key-env': { type: 'string' },
    temperature: { type: 'string' },
    'max-tokens': { type: 'string' },
    'no-stream': { type: 'boolean' },
  });
  if (values.help) return 'help';
  const rooms = requiredRooms(values.room);
  const signIn = signInOptions(values, env);
  if (!values.echo && !values.model) throw new Error('--model is required (or use --echo)');
  let apiKey: string | undefined;
  if (values['api-key-env']) {
    apiKey = env[values['api-key-env']];
    if (!apiKey) throw new Error(`environment variable ${values['api-key-env']} (from --api-key-env) is not set`);
  }
  const temperature = numberFlag('temperature', values.temperature, 0, 2);
  const marginMs = numberFlag('margin-ms', values['margin-ms'], 0, 600_000);
  return {
    ...signIn,
    rooms,
    stream: !values['no-stream'],
    echo: values.echo ?? false,
    baseUrl: values['base-url'] ?? AGENT_DEFAULTS.baseUrl,
    maxTokens: numberFlag('max-tokens', values['max-tokens'], 1, 1_000_000) ?? AGENT_DEFAULTS.maxTokens,
    history: numberFlag('history', values.history, 1, 200) ?? AGENT_DEFAULTS.history,
    maxChars: AGENT_DEFAULTS.maxChars,
    ...(values.model ? { model: values.model } : {}),
    ...(apiKey ? { apiKey } : {}),
    ...(temperature !== undefined ? { temperature } : {}),
    ...(marginMs !== undefined ? { marginMs } : {}),
  };
}

/** `agent-chatroom agent …` (src/cli.ts). Runs until SIGINT/SIGTERM. */
export async function agentCommand(argv: string[] = process.argv.slice(3)): Promise<void> {
  const options = parseOrExit(parseAgentArgs, argv, USAGE);
  if (!options) return;
  const log = stderrLog(options.name ?? 'agent');
  await runUntilSignal(
    () => runAgent({ ...options, log }),
    async (agent) => {
      await Promise.all(agent.client.rooms().map((roomId) => agent.client.setActivity(roomId, 'idle')));
      await agent.stop();
    },
    log,
  );
}
