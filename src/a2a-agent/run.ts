// `agent-chatroom a2a-agent --room R --name N --card CARD_URL`: a remote A2A agent as a room
// member (SPEC §12). On each turn the runner sends what is new in the room as an A2A message in
// one context per room (so the remote agent keeps the conversation), shows the task's state as
// the member's activity, and posts the completed task's text; a question (input-required) is
// posted as the answer, a failed or rejected task is a skip with its reason, and a task still
// running shortly before the deadline is cancelled and the turn passed with the reason.
import { randomUUID } from 'node:crypto';
import { TaskState, type Task, type TaskStatus } from '@a2a-js/sdk';
import { numberFlag, parseFlags, parseOrExit, requiredRooms, runUntilSignal, SIGN_IN_FLAGS, signInOptions, stderrLog } from '../agent/command.js';
import { agentClient, checkServer, signInAndJoin, stateDir, type SignInOptions } from '../agent/connect.js';
import { readReply } from '../agent/prompt.js';
import { giveUp, passHeldTurnsAndClose } from '../agent/turns.js';
import type { ChatroomClient, TurnAnswer, TurnInfo } from '../client/index.js';
import type { Participant } from '../types.js';
import { ask, textOf, type AskResult } from './ask.js';
import { buildA2aPrompt } from './prompt.js';
import { connectRemote, parseHeader, type RemoteAgent } from './remote.js';

export interface A2aAgentOptions extends Omit<SignInOptions, 'log'> {
  rooms: string[];
  /** The remote agent's card. */
  card: string;
  /** Sent with every request to the remote agent (credentials); never logged. */
  headers: Record<string, string>;
  maxChars: number;
  marginMs?: number;
  log?: (line: string) => void;
}

export interface RunningA2aAgent {
  client: ChatroomClient;
  participant: Participant;
  remote: RemoteAgent;
  /** The A2A context of each room (room id → contextId). */
  contexts: Map<string, string>;
  stop(reason?: string): Promise<void>;
}

/** Cancelling a task at the deadline waits this long for the remote agent at most. */
const CANCEL_TIMEOUT_MS = 5000;
const MAX_CHARS = 8000;

export async function runA2aAgent(options: A2aAgentOptions): Promise<RunningA2aAgent> {
  const log = options.log ?? (() => undefined);
  // The card first: an unreachable card, or one without an interface we speak, stops the start.
  const remote = await connectRemote(options.card, options.headers);
  const agentName = remote.card.name || 'the remote agent';
  const headerNames = Object.keys(options.headers);
  log(`remote agent "${agentName}" over ${remote.binding}${remote.streaming ? ' (streaming)' : ''}${headerNames.length ? `, sending headers ${headerNames.join(', ')}` : ''}`);

  await checkServer(options.url);
  const { base, identity, rooms } = await signInAndJoin({ ...options, log }, options.rooms);
  for (const room of rooms) log(`in room "${room.room_name}" (${room.room_id}) as ${identity.participant.name}`);
  const client = agentClient(base, identity.token, {
    ...(options.marginMs !== undefined ? { marginMs: options.marginMs } : {}),
    turnTimeoutReason: `${agentName} did not finish before the deadline; its task was cancelled`,
    log,
  });
  const participant = await client.connect();
  const me = { name: participant.name, ...(options.introduce ? { introduce: options.introduce } : {}) };
  const contexts = new Map<string, string>();
  /** A task that asked for input (room → task id): the next turn's message answers it. */
  const waitingForInput = new Map<string, string>();
  /** The task each room's turn is waiting on, to cancel at the deadline or on stop. */
  const running = new Map<string, string>();
  const working = new Map<string, boolean>();
  let stopping = false;

  const cancel = (roomId: string, why: string) => {
    const taskId = running.get(roomId);
    if (!taskId) return;
    running.delete(roomId);
    log(`cancelling task ${taskId} in ${roomId} (${why})`);
    remote.client
      .cancelTask({ tenant: '', id: taskId, metadata: {} }, { signal: AbortSignal.timeout(CANCEL_TIMEOUT_MS) })
      .catch((err: unknown) => log(`cancel of task ${taskId} failed: ${(err as Error).message}`));
  };

  const showStatus = (roomId: string, status: TaskStatus) => {
    const note = textOf(status.message?.parts).slice(0, 100);
    if (status.state === TaskState.TASK_STATE_WORKING) void client.setActivity(roomId, 'working', note || `${agentName} is working`);
    else if (status.state === TaskState.TASK_STATE_SUBMITTED) void client.setActivity(roomId, 'thinking', `asking ${agentName}`.slice(0, 100));
  };

  const takeTurn = async (turn: TurnInfo): Promise<TurnAnswer> => {
    if (stopping || turn.signal.aborted) return undefined;
    const roomId = turn.room_id;
    working.set(roomId, turn.can_skip);
    const onAbort = () => cancel(roomId, 'deadline near');
    turn.signal.addEventListener('abort', onAbort, { once: true });
    try {
      void client.setActivity(roomId, 'thinking', `asking ${agentName}`.slice(0, 100));
      let contextId = contexts.get(roomId);
      if (!contextId) contexts.set(roomId, (contextId = randomUUID()));
      const taskId = waitingForInput.get(roomId);
      waitingForInput.delete(roomId);
      log(`turn in ${roomId} (${turn.reason}${turn.can_skip ? '' : ', must answer'}): asking ${agentName}`);
      const result = await ask({
        client: remote.client,
        streaming: remote.streaming,
        text: buildA2aPrompt(me, turn),
        contextId,
        ...(taskId ? { taskId } : {}),
        signal: turn.signal,
        onTask: (id, ctx) => {
          running.set(roomId, id);
          // The remote agent may name the context itself: keep using its name.
          if (ctx && ctx !== contexts.get(roomId)) contexts.set(roomId, ctx);
        },
        onStatus: (status) => showStatus(roomId, status),
      });
      running.delete(roomId);
      if (stopping) return undefined;
      return answerFrom(result, turn, me);
    } finally {
      turn.signal.removeEventListener('abort', onAbort);
      working.delete(roomId);
    }
  };

  const answerFrom = (result: AskResult, turn: TurnInfo, who: { name: string }): TurnAnswer => {
    const reply = (text: string): TurnAnswer => {
      if (!text.trim()) return giveUp(client, turn, `${agentName} sent no text`);
      return readReply(text, who, { canSkip: turn.can_skip, maxChars: options.maxChars, language: turn.context.room.language });
    };
    if (result.kind === 'message') return reply(textOf(result.message.parts));
    const task: Task = result.task;
    const state = task.status?.state;
    const said = textOf(task.status?.message?.parts);
    switch (state) {
      case TaskState.TASK_STATE_COMPLETED: {
        const artifacts = task.artifacts.map((a) => textOf(a.parts)).filter((t) => t !== '');
        log(`task ${task.id} completed`);
        return reply(artifacts.length ? artifacts.join('\n\n') : said);
      }
      case TaskState.TASK_STATE_INPUT_REQUIRED:
        // The question goes to the room; the next turn's message answers this task.
        waitingForInput.set(turn.room_id, task.id);
        log(`task ${task.id} asks for input`);
        return reply(said || task.artifacts.map((a) => textOf(a.parts)).join('\n\n'));
      case TaskState.TASK_STATE_FAILED:
      case TaskState.TASK_STATE_REJECTED: {
        const how = state === TaskState.TASK_STATE_FAILED ? 'failed' : 'rejected';
        log(`task ${task.id} ${how}`);
        return giveUp(client, turn, `${agentName} ${how} the task${said ? `: ${said}` : ''}`);
      }
      case TaskState.TASK_STATE_AUTH_REQUIRED:
        return giveUp(client, turn, `${agentName} asks for authentication (give it with --header or --bearer-env)`);
      case TaskState.TASK_STATE_CANCELED:
        return giveUp(client, turn, `${agentName} cancelled the task${said ? `: ${said}` : ''}`);
      default:
        return giveUp(client, turn, `${agentName} left the task unfinished`);
    }
  };

  client.onTurn((turn) => takeTurn(turn));

  return {
    client,
    participant,
    remote,
    contexts,
    async stop(reason = 'agent stopped') {
      if (stopping) return;
      stopping = true;
      for (const roomId of [...running.keys()]) cancel(roomId, reason);
      await passHeldTurnsAndClose(client, [...working.entries()], reason);
    },
  };
}

const USAGE = `Usage: agent-chatroom a2a-agent --room <room_id> (--name <name> | --token <token>) --card <agent-card-url> [options]

Makes a remote A2A agent a member of the room: on each turn it sends what is new in the room as an
A2A message (one A2A context per room), shows the task's state as activity and posts the task's
answer; a task still running shortly before the deadline is cancelled and the turn passed.
  --url <url>            chat server (default http://127.0.0.1:3000, or env CHATROOM_URL)
  --room <room_id>       room to join; repeat for several rooms
  --name <name>          agent name; registers it (the token is saved and reused) when no token is given
  --token <token>        an existing agent token (or env CHATROOM_TOKEN)
  --card <url>           the remote agent's card, e.g. https://agent.example/.well-known/agent-card.json
  --header 'Name: value' a header sent with every request to the remote agent (repeatable)
  --bearer-env <VAR>     send "Authorization: Bearer $VAR" to the remote agent
  --introduce <text>     a line about the agent, for registration and the prompt
  --room-password <pw>   password of a protected room
  --margin-ms <n>        cancel the task this long before the turn's deadline
Credentials given with --header or --bearer-env are never written to the log.`;

export function parseA2aAgentArgs(argv: string[], env: Record<string, string | undefined> = process.env): A2aAgentOptions | 'help' {
  const values = parseFlags(argv, {
    ...SIGN_IN_FLAGS,
    room: { type: 'string', multiple: true },
    card: { type: 'string' },
    header: { type: 'string', multiple: true },
    'bearer-env': { type: 'string' },
    'margin-ms': { type: 'string' },
    help: { type: 'boolean', short: 'h' },
  });
  if (values.help) return 'help';
  const rooms = requiredRooms(values.room);
  const signIn = signInOptions(values, env);
  if (!values.card) throw new Error('--card <agent-card-url> is required');
  const headers: Record<string, string> = {};
  for (const raw of values.header ?? []) {
    const [name, value] = parseHeader(raw);
    headers[name] = value;
  }
  const bearerVar = values['bearer-env'];
  if (bearerVar !== undefined) {
    const secret = env[bearerVar];
    if (!secret) throw new Error(`--bearer-env: the environment variable ${bearerVar} is not set`);
    headers.Authorization = `Bearer ${secret}`;
  }
  const marginMs = numberFlag('margin-ms', values['margin-ms'], 0, 600_000, 'whole number');
  return {
    ...signIn,
    rooms,
    card: values.card,
    headers,
    maxChars: MAX_CHARS,
    stateDir: stateDir(env),
    ...(marginMs !== undefined ? { marginMs } : {}),
  };
}

/** `agent-chatroom a2a-agent …` (src/cli.ts). Runs until SIGINT/SIGTERM. */
export async function a2aAgentCommand(argv: string[] = process.argv.slice(3)): Promise<void> {
  const options = parseOrExit(parseA2aAgentArgs, argv, USAGE);
  if (!options) return;
  const log = stderrLog(options.name ?? 'a2a-agent');
  await runUntilSignal(
    () => runA2aAgent({ ...options, log }),
    (agent, signal) => agent.stop(`agent stopped (${signal})`),
    log,
  );
}

