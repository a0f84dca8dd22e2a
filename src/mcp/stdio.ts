// `agent-chatroom mcp [--url URL] [--token TOKEN]`: an MCP server on stdio that forwards
// tools/list and tools/call to a running chatroom server's /mcp (Streamable HTTP). It never runs
// a server of its own. Progress notifications and cancellation are forwarded both ways.
//
// Identity: with --token every upstream request carries `Authorization: Bearer <token>`. Without
// it the agent calls register_agent or login; the proxy remembers the token those return (and
// the one rotate_token returns), so when the upstream session is lost (server restart) it opens a
// new one as the same participant and retries the call once.
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
  type CallToolResult,
} from '@modelcontextprotocol/sdk/types.js';
import { warnTokenOnCommandLine } from '../agent/secrets.js';
import { MCP_INSTRUCTIONS, MCP_SERVER_NAME, MCP_SERVER_VERSION } from './instructions.js';

export const DEFAULT_SERVER_URL = 'http://127.0.0.1:3000';

/** Upper bound for one forwarded call (wait_for_turn blocks at most 50 s). */
const CALL_TIMEOUT_MS = 120_000;

const USAGE = `Usage: agent-chatroom mcp [--url ${DEFAULT_SERVER_URL}] [--token <token>]
  Serves MCP on stdin/stdout and forwards every call to a running chatroom server's /mcp.
  --url     the server (default ${DEFAULT_SERVER_URL}; "/mcp" is added when the URL has no path)
  --token   an agent token, sent as "Authorization: Bearer" (default: env CHATROOM_TOKEN);
            without one, call register_agent or login
  --config  a JSON file {url, token} (as "agent-chatroom hook claude-init" writes it)
`;

export interface StdioOptions {
  url: string;
  token: string | null;
}

export function parseStdioArgs(argv: string[], env: Record<string, string | undefined> = process.env): StdioOptions | 'help' {
  const { values } = parseArgs({
    args: argv,
    options: {
      url: { type: 'string' },
      token: { type: 'string' },
      config: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  });
  if (values.help) return 'help';
  warnTokenOnCommandLine(values.token);
  if (values.config) {
    let file: { url?: unknown; token?: unknown };
    try {
      file = JSON.parse(readFileSync(values.config, 'utf8')) as typeof file;
    } catch (err) {
      throw new Error(`--config: cannot read ${values.config}: ${(err as Error).message}`);
    }
    const url = values.url ?? (typeof file.url === 'string' ? file.url : DEFAULT_SERVER_URL);
    const token = values.token?.trim() || (typeof file.token === 'string' ? file.token.trim() : '') || null;
    return { url: mcpEndpoint(url), token };
  }
  // The token may come from the environment so it never shows in the process list.
  return { url: mcpEndpoint(values.url ?? DEFAULT_SERVER_URL), token: values.token?.trim() || env.CHATROOM_TOKEN?.trim() || null };
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
  const structured = result.structuredContent;
  return !result.isError && structured && typeof structured.token === 'string' ? structured.token : null;
}

function sessionLost(err: unknown): boolean {
  return err instanceof StreamableHTTPError && err.code === 404;
}

function unreachable(err: unknown): boolean {
  if (err instanceof StreamableHTTPError) return false;
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
      return fetch(input, { ...init, headers });
    };
    const transport = new StreamableHTTPClientTransport(new URL(this.url), { fetch: withToken });
    const client = new Client({ name: `${MCP_SERVER_NAME}-stdio`, version: MCP_SERVER_VERSION });
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
  if (err instanceof StreamableHTTPError && err.code === 403) {
    return `The chatroom server at ${url} refused the request: ${err.message} (check ALLOWED_HOSTS / ALLOWED_ORIGINS on the server).`;
  }
  return `The chatroom server at ${url} failed: ${(err as Error)?.message ?? String(err)}`;
}

/** Builds the stdio-side server that forwards to `upstream`. */
export function createStdioProxy(upstream: Upstream): McpServer {
  const server = new McpServer(
    { name: MCP_SERVER_NAME, version: MCP_SERVER_VERSION },
    { capabilities: { tools: { listChanged: false } }, instructions: MCP_INSTRUCTIONS },
  );
  server.server.setRequestHandler(ListToolsRequestSchema, async (request, extra) => {
    try {
      return await upstream.run((client) => client.listTools(request.params, { signal: extra.signal }));
    } catch (err) {
      if (err instanceof McpError) throw err;
      throw new McpError(ErrorCode.InternalError, describeFailure(upstream.url, err));
    }
  });
  server.server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const progressToken = extra._meta?.progressToken;
    try {
      const result = (await upstream.run((client) =>
        client.callTool({ name: request.params.name, arguments: request.params.arguments ?? {} }, undefined, {
          signal: extra.signal,
          timeout: CALL_TIMEOUT_MS,
          resetTimeoutOnProgress: true,
          ...(progressToken !== undefined
            ? {
                onprogress: (progress) => {
                  extra
                    .sendNotification({ method: 'notifications/progress', params: { ...progress, progressToken } })
                    .catch(() => undefined);
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
      if (extra.signal.aborted) throw err;
      if (err instanceof McpError) throw err;
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
  const upstream = new Upstream(options.url, options.token);
  const server = createStdioProxy(upstream);
  const transport = new StdioServerTransport();

  let stopping = false;
  const stop = (code: number) => {
    if (stopping) return;
    stopping = true;
    const timer = setTimeout(() => process.exit(code), 2000);
    timer.unref();
    void Promise.allSettled([upstream.close(), server.close()]).then(() => process.exit(code));
  };
  transport.onclose = () => stop(0);
  process.stdin.on('end', () => stop(0));
  process.stdin.on('close', () => stop(0));
  process.on('SIGINT', () => stop(0));
  process.on('SIGTERM', () => stop(0));

  await server.connect(transport);
  process.stderr.write(`agent-chatroom mcp: stdio → ${options.url}${options.token ? ' (with token)' : ''}\n`);
  // Connect early so a wrong URL shows up in the client's log at once; calls retry on their own.
  upstream.get().catch((err: unknown) => process.stderr.write(`agent-chatroom mcp: ${describeFailure(options.url, err)}\n`));
}
