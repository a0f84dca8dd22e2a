// A ready-to-run networked agent: `agent-chatroom agent --name Qwen --room <room_id> --model qwen2.5`.
// Checks the chat server and the model server, registers (or uses --token / its saved token),
// joins its rooms, keeps a WebSocket open and answers every turn with an OpenAI-compatible model
// (streamed), or with `echo: <last message>` in --echo mode. Model errors become skip reasons.
import { parseOrExit } from './command.js';
import { parseArgs } from 'node:util';
import { ChatroomClient, type TurnAnswer, type TurnInfo } from '../client/index.js';
import type { Message, Participant } from '../types.js';
import { checkServer, joinRoom, obtainIdentity, serverBase, StartError, stateDir } from './connect.js';
import { chatCompletion, checkModelServer, LlmError } from './llm.js';
import { buildPrompt, readReply } from './prompt.js';

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
  url: 'http://127.0.0.1:3000',
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
  const base = serverBase(options.url);
  const identity = await obtainIdentity({
    url: base,
    stateDir: options.stateDir ?? stateDir(),
    log,
    ...(options.name ? { name: options.name } : {}),
    ...(options.token ? { token: options.token } : {}),
    ...(options.introduce ? { introduce: options.introduce } : {}),
  });
  for (const roomId of options.rooms) {
    const room = await joinRoom(base, identity.token, roomId, options.roomPassword);
    log(`in room "${room.room_name}" (${roomId})`);
  }
  const client = new ChatroomClient({
    url: base,
    token: identity.token,
    ...(options.marginMs !== undefined ? { turnMarginMs: options.marginMs } : {}),
    turnTimeoutReason: options.echo ? 'no answer in time' : `the model (${options.model}) did not answer before the deadline`,
    logger: (level, message, details) => {
      if (level !== 'debug') log(`${level}: ${message}${details ? ` ${JSON.stringify(details)}` : ''}`);
    },
  });
  client.onStatus((status, error) => log(`connection ${status}${error ? ` (${error.message})` : ''}`));
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
  const page = await client.call<{ messages: Message[] }>(
    'get_messages',
    { room_id: turn.room_id, limit: Math.min(200, Math.max(1, options.history)) },
    { signal: turn.signal },
  );
  const history = page.messages.filter((m) => m.visible && !m.deleted);
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
    if (turn.can_skip) return { skip: true, reason };
    // A turn that must be answered cannot be skipped: the reason shows as the agent's note.
    void client.setActivity(turn.room_id, 'idle', reason);
    return undefined;
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
  const { values } = parseArgs({
    args: argv,
    strict: true,
    options: {
      url: { type: 'string' },
      name: { type: 'string' },
      token: { type: 'string' },
      introduce: { type: 'string' },
      room: { type: 'string', multiple: true },
      'room-password': { type: 'string' },
      echo: { type: 'boolean' },
      'base-url': { type: 'string' },
      model: { type: 'string' },
      'api-key-env': { type: 'string' },
      temperature: { type: 'string' },
      'max-tokens': { type: 'string' },
      history: { type: 'string' },
      'margin-ms': { type: 'string' },
      'no-stream': { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) return 'help';
  const number = (flag: string, raw: string | undefined, min: number, max: number): number | undefined => {
    if (raw === undefined) return undefined;
    const n = Number(raw);
    if (!Number.isFinite(n) || n < min || n > max) throw new Error(`--${flag} must be a number between ${min} and ${max}`);
    return n;
  };
  const rooms = values.room ?? [];
  if (rooms.length === 0) throw new Error('--room <room_id> is required');
  const token = values.token ?? env.CHATROOM_TOKEN;
  if (!token && !values.name) throw new Error('--name (to register) or --token is required');
  if (!values.echo && !values.model) throw new Error('--model is required (or use --echo)');
  let apiKey: string | undefined;
  if (values['api-key-env']) {
    apiKey = env[values['api-key-env']];
    if (!apiKey) throw new Error(`environment variable ${values['api-key-env']} (from --api-key-env) is not set`);
  }
  const temperature = number('temperature', values.temperature, 0, 2);
  const marginMs = number('margin-ms', values['margin-ms'], 0, 600_000);
  return {
    url: values.url ?? env.CHATROOM_URL ?? AGENT_DEFAULTS.url,
    rooms,
    stream: !values['no-stream'],
    echo: values.echo ?? false,
    baseUrl: values['base-url'] ?? AGENT_DEFAULTS.baseUrl,
    maxTokens: number('max-tokens', values['max-tokens'], 1, 1_000_000) ?? AGENT_DEFAULTS.maxTokens,
    history: number('history', values.history, 1, 200) ?? AGENT_DEFAULTS.history,
    maxChars: AGENT_DEFAULTS.maxChars,
    ...(values.name ? { name: values.name } : {}),
    ...(token ? { token } : {}),
    ...(values.introduce ? { introduce: values.introduce } : {}),
    ...(values['room-password'] ? { roomPassword: values['room-password'] } : {}),
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
  const tag = options.name ?? 'agent';
  const log = (line: string) => process.stderr.write(`${new Date().toISOString()} [${tag}] ${line}\n`);
  let agent: RunningAgent;
  try {
    agent = await runAgent({ ...options, log });
  } catch (err) {
    process.stderr.write(`Cannot start the agent: ${(err as Error).message}\n`);
    process.exit(1);
  }
  log('ready: waiting for turns (Ctrl-C leaves)');
  const stop = (signal: string) => {
    log(`${signal}: leaving`);
    void Promise.all(agent.client.rooms().map((roomId) => agent.client.setActivity(roomId, 'idle')))
      .then(() => agent.stop())
      .then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once('SIGINT', () => stop('SIGINT'));
  process.once('SIGTERM', () => stop('SIGTERM'));
  agent.client.onStatus((status, error) => {
    if (status === 'closed' && error) {
      log(`stopped: ${error.message}`);
      process.exit(1);
    }
  });
}
