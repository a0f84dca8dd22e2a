// One ACP agent program as a child process: started in its own process group with an
// environment that holds no chatroom token (SPEC §10), connected over stdio with the official
// SDK (ndjson JSON-RPC, ACP v1), and checked to be an ACP agent before anything else: a
// program that prints something other than JSON, exits, or does not answer `initialize` within
// the start timeout is a StartError naming the command. When it exits, its whole group goes.
import { spawn, type ChildProcess } from 'node:child_process';
import { Readable, Writable } from 'node:stream';
import {
  client as acpClient,
  methods,
  ndJsonStream,
  PROTOCOL_VERSION,
  type AgentCapabilities,
  type ClientConnection,
  type McpServer,
  type PromptResponse,
  type RequestPermissionRequest,
  type RequestPermissionResponse,
  type SessionUpdate,
} from '@agentclientprotocol/sdk';
import { StartError } from '../agent/connect.js';
import { killGroup, lastLine } from '../cli-agent/child.js';

export interface AcpHandlers {
  /** A `session/update` notification. */
  onUpdate(sessionId: string, update: SessionUpdate): void;
  /** A `session/request_permission` request, answered at once. */
  onPermission(request: RequestPermissionRequest): RequestPermissionResponse;
}

export interface AcpStartOptions {
  command: string;
  args: string[];
  env: NodeJS.ProcessEnv;
  cwd: string;
  /** How long the program may take to answer `initialize`. */
  startTimeoutMs: number;
  handlers: AcpHandlers;
  log: (line: string) => void;
}

export interface AcpExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** The last line it wrote on stderr, for a skip reason. */
  lastError: string;
}

/** The program ended while a request was waiting for it. */
export class AgentExitedError extends Error {
  override name = 'AgentExitedError';
  constructor(
    readonly program: string,
    readonly exit: AcpExit,
  ) {
    super(`${program} ${describeExit(exit)}`);
  }
}

export function describeExit(exit: AcpExit): string {
  const how = exit.signal ? `was killed by ${exit.signal}` : `exited with code ${exit.code}`;
  return `${how}${exit.lastError ? `: ${exit.lastError}` : ''}`;
}

/**
 * The child's environment: the parent's without the agent's token. CHATROOM_TOKEN goes, and so
 * does any variable that holds the token in its value (an alias the user exported).
 */
export function scrubbedEnv(env: NodeJS.ProcessEnv, token: string): NodeJS.ProcessEnv {
  const clean: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(env)) {
    if (key === 'CHATROOM_TOKEN' || value === undefined) continue;
    if (token && value.includes(token)) continue;
    clean[key] = value;
  }
  return clean;
}

/**
 * When a request failed because the connection closed (the program's stdout ended), how it
 * exited: the exit comes a moment after the pipe closes. Null for any other failure.
 */
async function exitBehind(connection: ClientConnection, exited: Promise<AcpExit>): Promise<AcpExit | null> {
  if (!connection.signal.aborted) return null;
  let timer: NodeJS.Timeout | undefined;
  const exit = await Promise.race([exited, new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), EXIT_WAIT_MS)))]);
  clearTimeout(timer);
  return exit;
}

/** How long a closed connection waits for the program's exit status. */
const EXIT_WAIT_MS = 2000;
/** Bytes of stderr kept for error lines. */
const STDERR_TAIL = 8192;
/** Time between SIGTERM and SIGKILL when the program is stopped. */
const KILL_GRACE_MS = 1000;

export class AcpAgentProcess {
  private exitInfo: AcpExit | null = null;
  private stopping = false;

  private constructor(
    readonly program: string,
    private readonly child: ChildProcess,
    private readonly connection: ClientConnection,
    readonly capabilities: AgentCapabilities,
    /** Resolves when the program has exited (its group is killed then). */
    readonly exited: Promise<AcpExit>,
  ) {
    void exited.then((exit) => (this.exitInfo = exit));
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** Whether the program still runs. */
  get alive(): boolean {
    return this.exitInfo === null;
  }

  /** Starts the program and completes `initialize`; a StartError names the command on failure. */
  static async start(options: AcpStartOptions): Promise<AcpAgentProcess> {
    const program = options.command;
    const shown = [options.command, ...options.args].join(' ');
    const child = spawn(options.command, options.args, {
      cwd: options.cwd,
      env: options.env,
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: true, // its own process group: the tools it starts go with it
    });
    let stderr = '';
    child.stderr!.setEncoding('utf8');
    child.stderr!.on('data', (chunk: string) => {
      stderr = (stderr + chunk).slice(-STDERR_TAIL);
    });
    child.stdin!.on('error', () => undefined); // EPIPE after an exit: reported by 'exit'
    const exited = new Promise<AcpExit>((resolve) => {
      let spawnError = '';
      child.once('error', (err) => {
        spawnError = err.message;
        if (child.pid === undefined) resolve({ code: null, signal: null, lastError: spawnError });
      });
      // The status is reported once stderr has been read to its end ('close'), so the last
      // line is there; a pipe held open by something outside the group waits 1 s at most.
      const report = (code: number | null, signal: NodeJS.Signals | null) => resolve({ code, signal, lastError: spawnError || lastLine(stderr) });
      child.once('exit', (code, signal) => {
        if (child.pid !== undefined) killGroup(child.pid, 'SIGKILL'); // whatever it left behind
        setTimeout(() => report(code, signal), 1000).unref();
      });
      child.once('close', report);
    });

    // Before `initialize` is answered, anything on stdout that is not JSON means this is not an
    // ACP agent (a usage text, a banner, an interactive UI): fail at once, quoting it.
    let notAcp: (line: string) => void = () => undefined;
    const garbage = new Promise<string>((resolve) => (notAcp = resolve));
    let pending = '';
    let watching = true;
    const decoder = new TextDecoder();
    const watchStdout = (chunk: Uint8Array) => {
      pending += decoder.decode(chunk, { stream: true });
      const lines = pending.split('\n');
      pending = lines.pop() ?? '';
      for (const line of lines) {
        const text = line.trim();
        if (!text) continue;
        try {
          JSON.parse(text);
        } catch {
          notAcp(text);
        }
      }
      if (pending.length > 65536) notAcp(pending.slice(0, 200));
    };
    const stdout = (Readable.toWeb(child.stdout!) as unknown as ReadableStream<Uint8Array>).pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          if (watching) watchStdout(chunk);
          controller.enqueue(chunk);
        },
      }),
    );

    const app = acpClient({ name: 'agent-chatroom' })
      .onNotification(methods.client.session.update, ({ params }) => options.handlers.onUpdate(params.sessionId, params.update))
      .onRequest(methods.client.session.requestPermission, ({ params }) => options.handlers.onPermission(params));
    const stream = ndJsonStream(Writable.toWeb(child.stdin!) as WritableStream<Uint8Array>, stdout);
    const connection = app.connect(stream);
    const fail = (why: string): never => {
      if (child.pid !== undefined) killGroup(child.pid, 'SIGKILL');
      connection.close();
      throw new StartError(`"${shown}" is not an ACP agent: ${why}`);
    };
    let timer: NodeJS.Timeout | undefined;
    const outcome = await Promise.race([
      connection.agent
        .request(methods.agent.initialize, {
          protocolVersion: PROTOCOL_VERSION,
          clientCapabilities: {},
          clientInfo: { name: 'agent-chatroom', version: '1' },
        })
        .then(
          (init) => ({ kind: 'ok' as const, init }),
          async (err: unknown) => {
            const exit = await exitBehind(connection, exited);
            return { kind: 'error' as const, why: exit ? `it ${describeExit(exit)} before answering initialize` : `initialize failed: ${(err as Error).message}` };
          },
        ),
      garbage.then((line) => ({ kind: 'error' as const, why: `it printed ${JSON.stringify(line.length > 120 ? `${line.slice(0, 119)}…` : line)}` })),
      exited.then((exit) => ({ kind: 'error' as const, why: `it ${exit.lastError && exit.code === null && !exit.signal ? `could not start (${exit.lastError})` : describeExit(exit)} before answering initialize` })),
      new Promise<{ kind: 'error'; why: string }>((resolve) => {
        timer = setTimeout(() => resolve({ kind: 'error', why: `no answer to initialize within ${Math.round(options.startTimeoutMs / 100) / 10} s` }), options.startTimeoutMs);
      }),
    ]);
    clearTimeout(timer);
    if (outcome.kind === 'error') return fail(outcome.why);
    watching = false;
    if (outcome.init.protocolVersion !== PROTOCOL_VERSION) {
      return fail(`it speaks ACP version ${outcome.init.protocolVersion}, this runner speaks version ${PROTOCOL_VERSION}`);
    }
    const name = outcome.init.agentInfo ? ` (${outcome.init.agentInfo.name} ${outcome.init.agentInfo.version ?? ''})`.replace(' )', ')') : '';
    options.log(`${shown}${name} speaks ACP ${outcome.init.protocolVersion}${outcome.init.agentCapabilities?.loadSession ? ', can load sessions' : ''}`);
    return new AcpAgentProcess(program, child, connection, outcome.init.agentCapabilities ?? {}, exited);
  }

  /** A request that fails with AgentExitedError when the program ends before answering. */
  private async whileAlive<T>(request: Promise<T>): Promise<T> {
    if (this.exitInfo) throw new AgentExitedError(this.program, this.exitInfo);
    const exit = this.exited.then((info) => {
      throw new AgentExitedError(this.program, info);
    });
    try {
      return await Promise.race([request, exit]);
    } catch (err) {
      if (err instanceof AgentExitedError) throw err;
      const behind = await exitBehind(this.connection, this.exited);
      throw behind ? new AgentExitedError(this.program, behind) : err;
    }
  }

  async newSession(cwd: string, mcpServers: McpServer[]): Promise<string> {
    const created = await this.whileAlive(this.connection.agent.request(methods.agent.session.new, { cwd, mcpServers }));
    return created.sessionId;
  }

  async loadSession(sessionId: string, cwd: string, mcpServers: McpServer[]): Promise<void> {
    await this.whileAlive(this.connection.agent.request(methods.agent.session.load, { sessionId, cwd, mcpServers }));
  }

  prompt(sessionId: string, text: string): Promise<PromptResponse> {
    return this.whileAlive(this.connection.agent.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text }] }));
  }

  /** `session/cancel`: the agent stops and answers the prompt with stopReason `cancelled`. */
  cancel(sessionId: string): void {
    if (!this.alive) return;
    void this.connection.agent.notify(methods.agent.session.cancel, { sessionId }).catch(() => undefined);
  }

  /** Stops the program and its process group (SIGTERM, then SIGKILL after a grace). */
  async stop(): Promise<void> {
    if (this.stopping) return void (await this.exited);
    this.stopping = true;
    this.connection.close();
    const pid = this.child.pid;
    if (pid !== undefined && this.alive) {
      killGroup(pid, 'SIGTERM');
      const grace = setTimeout(() => killGroup(pid, 'SIGKILL'), KILL_GRACE_MS);
      await this.exited;
      clearTimeout(grace);
    }
  }
}
