// `agent-chatroom mcp [--url URL] [--token TOKEN] [--no-channel]`: an MCP server on stdio that
// forwards tools and resources to a running chatroom server's /mcp (Streamable HTTP). It never
// runs a server of its own. Progress notifications and cancellation are forwarded both ways.
// Both eras on stdio (SPEC §7.1): the SDK's serveStdio answers a 2026-07-28 opening and the legacy
// initialize alike, from one server factory. Upstream it keeps a legacy session with its
// server-to-client stream open: the server pushes the bound agent's turns there
// (`notifications/claude/channel`, SPEC §7.1) and the proxy passes them on to its client.
//
// Identity: with --token every upstream request carries `Authorization: Bearer <token>`. Without
// it the agent calls register_agent or login; the proxy remembers the token those return (and
// the one rotate_token returns), so when the upstream session is lost (server restart) it opens a
// new one as the same participant and retries the call once.
import { readFileSync } from 'node:fs';
import { Transform } from 'node:stream';
import { parseArgs } from 'node:util';
import { Client, SdkHttpError, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { ProtocolError, ProtocolErrorCode, Server, type CallToolResult } from '@modelcontextprotocol/server';
import { serveStdio, StdioServerTransport } from '@modelcontextprotocol/server/stdio';
import { CHANNEL_NOTIFICATION, MCP_SERVER_NAME, MCP_SERVER_VERSION, mcpServerOptions } from './instructions.js';
import { warnTokenOnCommandLine } from '../agent/secrets.js';

export const DEFAULT_SERVER_URL = 'http://127.0.0.1:3000';

/** Upper bound for one forwarded call (wait_for_turn blocks at most 50 s). */
const CALL_TIMEOUT_MS = 120_000;

const USAGE = `Usage: agent-chatroom mcp [--url ${DEFAULT_SERVER_URL}] [--token <token>] [--no-channel]
  Serves MCP on stdin/stdout and forwards every call to a running chatroom server's /mcp.
  --url         the server (default ${DEFAULT_SERVER_URL}; "/mcp" is added when the URL has no path)
  --token       an agent token, sent as "Authorization: Bearer" (default: env CHATROOM_TOKEN);
                without one, call register_agent or login
  --config      a JSON file {url, token} (as "agent-chatroom hook claude-init" writes it)
  --no-channel  do not declare the Claude Code channel (claude/channel) nor push turns
`;

export interface StdioOptions {
  url: string;
  token: string | null;
  /** Declare `claude/channel` and pass pushed turns on (SPEC §7.1); off with --no-channel. */
  channel: boolean;
}

export function parseStdioArgs(argv: string[], env: Record<string, string | undefined> = process.env): StdioOptions | 'help' {
  const { values } = parseArgs({
    args: argv,
    options: {
      url: { type: 'string' },
      token: { type: 'string' },
      config: { type: 'string' },
      'no-channel': { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  });
  if (values.help) return 'help';
  warnTokenOnCommandLine(values.token);
  const channel = values['no-channel'] !== true;
  if (values.config) {
    let file: { url?: unknown; token?: unknown };
    try {
      file = JSON.parse(readFileSync(values.config, 'utf8')) as typeof file;
    } catch (err) {
      throw new Error(`--config: cannot read ${values.config}: ${(err as Error).message}`);
    }
    const url = values.url ?? (typeof file.url === 'string' ? file.url : DEFAULT_SERVER_URL);
    const token = values.token?.trim() || (typeof file.token === 'string' ? file.token.trim() : '') || null;
    return { url: mcpEndpoint(url), token, channel };
  }
  // The token may come from the environment so it never shows in the process list.
  return { url: mcpEndpoint(values.url ?? DEFAULT_SERVER_URL), token: values.token?.trim() || env.CHATROOM_TOKEN?.trim() || null, channel };
}

/** The /mcp endpoint of a server URL: `http://host:port` → `http://host:port/mcp`. */
export function mcpEndpoint(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new Error(`--url: "${url}" is not a URL like ${DEFAULT_SERVER_URL}`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new Error(`--url: "${url}" must be http(s)`);
  if (parsed.pathname === '' || parsed.pathname === '/') parsed.pathname = '/mcp';
  return parsed.toString();
}

function tokenOf(result: CallToolResult): string | null {
  const structured = result.structuredContent as { token?: unknown } | undefined;
  return !result.isError && structured && typeof structured.token === 'string' ? structured.token : null;
}

function sessionLost(err: unknown): boolean {
  return err instanceof SdkHttpError && err.status === 404;
}

function unreachable(err: unknown): boolean {
  if (err instanceof SdkHttpError) return false;
  const text = `${(err as Error)?.message ?? ''} ${String((err as { cause?: unknown })?.cause ?? '')}`;
  return /fetch failed|ECONNREFUSED|ECONNRESET|ENOTFOUND|EHOSTUNREACH|socket hang up|other side closed/i.test(text);
}

/** One upstream Streamable HTTP session, reopened when lost. */
export class Upstream {
  private client: Client | null = null;
  private connecting: Promise<Client> | null = null;

  constructor(
    readonly url: string,
    public token: string | null,
    /** Told of every notification the server pushes on the session's stream (channel, resources). */
    private readonly onNotification: (method: string, params: Record<string, unknown>) => void = () => undefined,
    /** Whether the server should push turns on this session (--no-channel: false). */
    private readonly channel = true,
  ) {}

  async get(): Promise<Client> {
    if (this.client) return this.client;
    this.connecting ??= this.connect().finally(() => {
      this.connecting = null;
    });
    return this.connecting;
  }

  /** Runs a request; when the upstream session was lost (404) it reconnects and, if allowed, retries once. */
  async run<T>(request: (client: Client) => Promise<T>): Promise<T> {
    const client = await this.get();
    try {
      return await request(client);
    } catch (err) {
      if (sessionLost(err)) {
        await this.reset(client);
        return request(await this.get());
      }
      if (unreachable(err)) await this.reset(client);
      throw err;
    }
  }

  async close(): Promise<void> {
    const client = this.client;
    this.client = null;
    if (!client) return;
    const transport = client.transport as StreamableHTTPClientTransport | undefined;
    await transport?.terminateSession().catch(() => undefined);
    await client.close().catch(() => undefined);
  }

  private async reset(client: Client): Promise<void> {
    if (this.client === client) this.client = null;
    await client.close().catch(() => undefined);
  }

  private async connect(): Promise<Client> {
    const withToken: typeof fetch = (input, init) => {
      const headers = new Headers(init?.headers);
      if (this.token) headers.set('authorization', `Bearer ${this.token}`);
      // --no-channel: the server opens the session without pushes; with the channel on, the open
      // push stream keeps the idle agent online (src/transports/mcp.ts CHANNEL_HEADER).
      headers.set('x-chatroom-channel', this.channel ? 'on' : 'off');
      return fetch(input, { ...init, headers });
    };
    const transport = new StreamableHTTPClientTransport(new URL(this.url), { fetch: withToken });
    const client = new Client({ name: `${MCP_SERVER_NAME}-stdio`, version: MCP_SERVER_VERSION });
    client.fallbackNotificationHandler = async (notification) => {
      this.onNotification(notification.method, (notification.params ?? {}) as Record<string, unknown>);
    };
    client.setNotificationHandler('notifications/resources/updated', (notification) => {
      this.onNotification(notification.method, notification.params);
    });
    client.onclose = () => {
      if (this.client === client) this.client = null;
    };
    await client.connect(transport);
    this.client = client;
    return client;
  }
}

function describeFailure(url: string, err: unknown): string {
  if (unreachable(err)) {
    return `Cannot reach the chatroom server at ${url}. Start it (agent-chatroom start) or pass --url to "agent-chatroom mcp".`;
  }
  if (err instanceof SdkHttpError && err.status === 403) {
    return `The chatroom server at ${url} refused the request: ${err.message} (check ALLOWED_HOSTS / ALLOWED_ORIGINS on the server).`;
  }
  return `The chatroom server at ${url} failed: ${(err as Error)?.message ?? String(err)}`;
}

/** An upstream failure as the JSON-RPC error the stdio client sees. */
function forwardedError(upstream: Upstream, err: unknown): never {
  if (err instanceof ProtocolError) throw err;
  throw new ProtocolError(ProtocolErrorCode.InternalError, describeFailure(upstream.url, err));
}

/**
 * The stdio-side servers forward to `upstream`. One server instance per stdio connection era
 * (serveStdio may build a throwaway one for a `server/discover` probe); `live` is the newest,
 * the one pushes go to.
 */
export class StdioProxy {
  private live: Server | null = null;

  constructor(
    private readonly upstream: Upstream,
    private readonly channel: boolean,
  ) {}

  /** A pushed notification from upstream: passed on while a client is initialized. */
  push(method: string, params: Record<string, unknown>): void {
    if (method === CHANNEL_NOTIFICATION && !this.channel) return;
    if (method !== CHANNEL_NOTIFICATION && method !== 'notifications/resources/updated') return;
    this.live?.notification({ method, params }).catch(() => undefined);
  }

  /** The factory serveStdio calls: the same surface for both eras. */
  build(): Server {
    const upstream = this.upstream;
    const server = new Server({ name: MCP_SERVER_NAME, version: MCP_SERVER_VERSION }, mcpServerOptions(this.channel));
    // The newest instance serves the connection (a discarded discover probe comes before it):
    // pushes go there, even to a client that never sends `notifications/initialized`.
    this.live = server;
    server.onclose = () => {
      if (this.live === server) this.live = null;
    };
    server.setRequestHandler('tools/list', (request, ctx) =>
      upstream.run((client) => client.listTools(request.params, { signal: ctx.mcpReq.signal })).catch((err) => forwardedError(upstream, err)),
    );
    server.setRequestHandler('resources/list', (request, ctx) =>
      upstream.run((client) => client.listResources(request.params, { signal: ctx.mcpReq.signal })).catch((err) => forwardedError(upstream, err)),
    );
    server.setRequestHandler('resources/templates/list', (request, ctx) =>
      upstream.run((client) => client.listResourceTemplates(request.params, { signal: ctx.mcpReq.signal })).catch((err) => forwardedError(upstream, err)),
    );
    server.setRequestHandler('resources/read', (request, ctx) =>
      upstream.run((client) => client.readResource(request.params, { signal: ctx.mcpReq.signal })).catch((err) => forwardedError(upstream, err)),
    );
    server.setRequestHandler('resources/subscribe', async (request, ctx) => {
      await upstream.run((client) => client.subscribeResource(request.params, { signal: ctx.mcpReq.signal })).catch((err) => forwardedError(upstream, err));
      return {};
    });
    server.setRequestHandler('resources/unsubscribe', async (request, ctx) => {
      await upstream.run((client) => client.unsubscribeResource(request.params, { signal: ctx.mcpReq.signal })).catch((err) => forwardedError(upstream, err));
      return {};
    });
    server.setRequestHandler('tools/call', async (request, ctx) => {
      const progressToken = ctx.mcpReq._meta?.progressToken;
      try {
        const result = (await upstream.run((client) =>
          client.callTool({ name: request.params.name, arguments: request.params.arguments ?? {} }, {
            signal: ctx.mcpReq.signal,
            timeout: CALL_TIMEOUT_MS,
            resetTimeoutOnProgress: true,
            ...(progressToken !== undefined
              ? {
                  onprogress: (progress) => {
                    ctx.mcpReq.notify({ method: 'notifications/progress', params: { ...progress, progressToken } }).catch(() => undefined);
                  },
                }
              : {}),
          }),
        )) as CallToolResult;
        const token = tokenOf(result);
        if (token && ['register_agent', 'register_user', 'login', 'rotate_token'].includes(request.params.name)) {
          upstream.token = token;
        }
        return result;
      } catch (err) {
        if (ctx.mcpReq.signal.aborted) throw err;
        if (err instanceof ProtocolError) throw err;
        const error = { code: 'internal_error', message: describeFailure(upstream.url, err) };
        return {
          isError: true,
          content: [{ type: 'text', text: JSON.stringify({ ok: false, error }) }],
          structuredContent: { ok: false, error },
        };
      }
    });
    return server;
  }
}

/**
 * stdin with every line that is not JSON taken out, each reported on stderr (the SDK skips such
 * a line silently, and a client that wrote it would never learn why nothing answered).
 */
export function jsonLinesOnly(report: (line: string) => void): Transform {
  let pending = '';
  const check = (line: string): string | null => {
    const text = line.replace(/\r$/, '');
    if (text.trim() === '') return null;
    try {
      JSON.parse(text);
      return `${line}\n`;
    } catch {
      report(text);
      return null;
    }
  };
  return new Transform({
    transform(chunk: Buffer, _encoding, done) {
      pending += chunk.toString('utf8');
      let out = '';
      let index: number;
      while ((index = pending.indexOf('\n')) !== -1) {
        out += check(pending.slice(0, index)) ?? '';
        pending = pending.slice(index + 1);
      }
      done(null, out);
    },
    flush(done) {
      done(null, pending ? (check(pending) ?? '') : '');
    },
  });
}

/** The `mcp` subcommand. */
export async function runMcpStdio(argv: string[] = process.argv.slice(3)): Promise<void> {
  let options: StdioOptions | 'help';
  try {
    options = parseStdioArgs(argv);
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n${USAGE}`);
    process.exit(2);
  }
  if (options === 'help') {
    process.stderr.write(USAGE);
    return;
  }
  let proxy: StdioProxy | null = null;
  const upstream = new Upstream(options.url, options.token, (method, params) => proxy?.push(method, params), options.channel);
  proxy = new StdioProxy(upstream, options.channel);
  const input = process.stdin.pipe(
    jsonLinesOnly((line) => process.stderr.write(`agent-chatroom mcp: ignored a line that is not JSON: ${JSON.stringify(line.slice(0, 200))}\n`)),
  );
  const transport = new StdioServerTransport(input, process.stdout);

  let stopping = false;
  let handle: { close(): Promise<void> } | null = null;
  const stop = (code: number) => {
    if (stopping) return;
    stopping = true;
    const timer = setTimeout(() => process.exit(code), 2000);
    timer.unref();
    void Promise.allSettled([upstream.close(), handle?.close()]).then(() => process.exit(code));
  };
  transport.onclose = () => stop(0);
  input.on('end', () => stop(0));
  process.stdin.on('close', () => stop(0));
  process.on('SIGINT', () => stop(0));
  process.on('SIGTERM', () => stop(0));

  const factory = proxy.build.bind(proxy);
  handle = serveStdio(factory, {
    transport,
    onerror: (err) => process.stderr.write(`agent-chatroom mcp: ${err.message}\n`),
  });
  process.stderr.write(
    `agent-chatroom mcp: stdio → ${options.url}${options.token ? ' (with token)' : ''}${options.channel ? '' : ' (no channel)'}\n`,
  );
  // Connect early so a wrong URL shows up in the client's log at once, and so the server's
  // stream for pushed turns is open before the first turn; calls retry on their own.
  upstream.get().catch((err: unknown) => process.stderr.write(`agent-chatroom mcp: ${describeFailure(options.url, err)}\n`));
}
