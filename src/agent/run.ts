// A ready-to-run networked agent: `npm run agent -- --name Qwen --room <room_id> --model qwen2.5`.
// Registers (or uses --token), joins its rooms, keeps a WebSocket open and answers every turn
// with an OpenAI-compatible model, or with `echo: <last message>` in --echo mode.
import { parseArgs } from 'node:util';
import { ChatroomClient, ChatroomError, type TurnAnswer, type TurnInfo } from '../client/index.js';
import type { Message, Participant } from '../types.js';
import { chatCompletion } from './llm.js';
import { buildPrompt, readReply } from './prompt.js';

export interface AgentOptions {
  /** Chat server, http(s)://host:port. */
  url: string;
  /** Agent name: registers it when no token is given. */
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
  /** Set when the agent registered itself (show it once: it is the only copy). */
  registeredToken: string | null;
  stop(): Promise<void>;
}

export async function runAgent(options: AgentOptions): Promise<RunningAgent> {
  const log = options.log ?? (() => undefined);
  if (!options.echo && !options.model) throw new Error('--model is required (or use --echo)');
  let token = options.token ?? null;
  let registeredToken: string | null = null;
  if (!token) {
    if (!options.name) throw new Error('--name is required when no --token is given');
    try {
      const registered = await ChatroomClient.register(options.url, options.name, options.introduce ? { introduce: options.introduce } : {});
      token = registeredToken = registered.token;
    } catch (err) {
      if (err instanceof ChatroomError && err.code === 'name_taken') {
        throw new Error(`The name "${options.name}" is taken. Pass its --token (or CHATROOM_TOKEN), or pick another --name.`);
      }
      throw err;
    }
  }
  const client = new ChatroomClient({
    url: options.url,
    token,
    ...(options.marginMs !== undefined ? { turnMarginMs: options.marginMs } : {}),
    logger: (level, message, details) => {
      if (level !== 'debug') log(`${level}: ${message}${details ? ` ${JSON.stringify(details)}` : ''}`);
    },
  });
  client.onStatus((status, error) => log(`connection ${status}${error ? ` (${error.message})` : ''}`));
  const participant = await client.connect();
  const me = { name: participant.name, ...(options.introduce ? { introduce: options.introduce } : {}) };
  for (const roomId of options.rooms) {
    const { room } = await client.call<{ room: { room_name: string } }>('join_room', {
      room_id: roomId,
      ...(options.roomPassword ? { password: options.roomPassword } : {}),
    });
    log(`in room "${room.room_name}" (${roomId})`);
  }

  client.onTurn(async (turn): Promise<TurnAnswer> => {
    const started = Date.now();
    log(`turn in ${turn.room_id} (${turn.reason}${turn.can_skip ? '' : ', must answer'}), deadline ${turn.deadline}`);
    const answer = options.echo ? echoAnswer(turn, participant) : await modelAnswer(client, options, me, turn);
    log('skip' in answer ? `skipped (${Date.now() - started} ms)` : `answered ${[...answer.text].length} chars (${Date.now() - started} ms)`);
    return answer;
  });
  return {
    client,
    participant,
    registeredToken,
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
): Promise<{ text: string } | { skip: true }> {
  const page = await client.call<{ messages: Message[] }>(
    'get_messages',
    { room_id: turn.room_id, limit: Math.min(200, Math.max(1, options.history)) },
    { signal: turn.signal },
  );
  const history = page.messages.filter((m) => m.visible && !m.deleted);
  const reply = await chatCompletion(buildPrompt(me, turn, history), {
    baseUrl: options.baseUrl,
    model: options.model!,
    maxTokens: options.maxTokens,
    signal: turn.signal,
    ...(options.apiKey ? { apiKey: options.apiKey } : {}),
    ...(options.temperature !== undefined ? { temperature: options.temperature } : {}),
  });
  return readReply(reply, me, { canSkip: turn.can_skip, maxChars: options.maxChars, language: turn.context.room.language });
}

const USAGE = `Usage: npm run agent -- --room <room_id> (--name <name> | --token <token>) (--model <model> | --echo) [options]

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
  --margin-ms <n>        stop working this long before a turn's deadline`;

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
    url: values.url ?? AGENT_DEFAULTS.url,
    rooms,
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
  let options: AgentOptions | 'help';
  try {
    options = parseAgentArgs(argv);
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n\n${USAGE}\n`);
    process.exit(2);
  }
  if (options === 'help') {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const tag = options.name ?? 'agent';
  const log = (line: string) => process.stderr.write(`${new Date().toISOString()} [${tag}] ${line}\n`);
  let agent: RunningAgent;
  try {
    agent = await runAgent({ ...options, log });
  } catch (err) {
    process.stderr.write(`Cannot start the agent: ${(err as Error).message}\n`);
    process.exit(1);
  }
  if (agent.registeredToken) {
    log(`registered "${agent.participant.name}". Its token is shown only now; run again with --token ${agent.registeredToken}`);
  }
  const stop = (signal: string) => {
    log(`${signal}: leaving`);
    agent.stop().then(
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
