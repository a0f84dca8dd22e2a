// MCP test clients: the SDK's own Client over Streamable HTTP against the real server, and over
// stdio against the compiled stdio entry (`agent-chatroom mcp --url …`).
import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { RequestOptions } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { PACKAGE_ROOT } from '../../src/paths.js';
import { TEST_DIST } from '../global-setup.js';

type ToolError = { code: string; message: string; details?: unknown };

/** Tool calls with assertions, over any transport. */
export interface ToolCalls {
  call(name: string, args?: Record<string, unknown>, options?: RequestOptions): Promise<CallToolResult>;
  /** Calls a tool and fails unless it succeeded; returns the structured content. */
  ok<T = any>(name: string, args?: Record<string, unknown>, options?: RequestOptions): Promise<T>;
  /**
   * Calls a tool and fails unless it came back as an error result (`isError: true`) with the same
   * error in the text and in structuredContent; returns the error.
   */
  err(name: string, args?: Record<string, unknown>, options?: RequestOptions): Promise<ToolError>;
}

export interface McpTestClient extends ToolCalls {
  client: Client;
  transport: StreamableHTTPClientTransport;
  /** The token sent as `Authorization: Bearer` from now on (null: no header). */
  setHeaderToken(token: string | null): void;
  close(): Promise<void>;
}

export interface StdioTestClient extends ToolCalls {
  client: Client;
  close(): Promise<void>;
}

function toolCalls(client: Client): ToolCalls {
  const call = async (name: string, args: Record<string, unknown> = {}, options?: RequestOptions) =>
    (await client.callTool({ name, arguments: args }, undefined, options)) as CallToolResult;
  return {
    call,
    async ok(name, args, options) {
      const result = await call(name, args, options);
      if (result.isError) throw new Error(`${name} failed: ${JSON.stringify(result.structuredContent ?? result.content)}`);
      return result.structuredContent as any;
    },
    async err(name, args, options) {
      const result = await call(name, args, options);
      if (!result.isError) throw new Error(`${name} succeeded but an error was expected: ${JSON.stringify(result.structuredContent)}`);
      const structured = result.structuredContent as { ok: false; error: ToolError };
      const text = resultText(result);
      if (!isDeepStrictEqual(JSON.parse(text), structured)) {
        throw new Error(`${name}: the text ${text} is not the structuredContent ${JSON.stringify(structured)}`);
      }
      return structured.error;
    },
  };
}

export async function connectMcp(baseUrl: string, opts: { token?: string | null } = {}): Promise<McpTestClient> {
  let headerToken = opts.token ?? null;
  const fetchWithToken: typeof fetch = (input, init) => {
    const headers = new Headers(init?.headers);
    if (headerToken) headers.set('authorization', `Bearer ${headerToken}`);
    else headers.delete('authorization');
    return fetch(input, { ...init, headers });
  };
  const transport = new StreamableHTTPClientTransport(new URL('/mcp', baseUrl), { fetch: fetchWithToken });
  const client = new Client({ name: 'chatroom-test', version: '0.0.0' });
  await client.connect(transport);
  return {
    ...toolCalls(client),
    client,
    transport,
    setHeaderToken(token) {
      headerToken = token;
    },
    async close() {
      await transport.terminateSession().catch(() => undefined);
      await client.close();
    },
  };
}

/** The package's bin (dist/src/cli.js) as transpiled for the tests by test/global-setup.ts. */
const CLI = path.join(TEST_DIST, 'src', 'cli.js');

/** Starts `node <cli> mcp --url <url> [extraArgs]` — what `npx agent-chatroom mcp --url …` runs — and connects over stdio. */
export async function connectStdioMcp(url: string, extraArgs: string[] = []): Promise<StdioTestClient> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [CLI, 'mcp', '--url', url, ...extraArgs],
    cwd: PACKAGE_ROOT,
    stderr: 'pipe',
  });
  const client = new Client({ name: 'stdio-test', version: '0.0.0' });
  await client.connect(transport);
  return { ...toolCalls(client), client, close: () => client.close() };
}

/** The text of the first content block of a tool result. */
export function resultText(result: CallToolResult): string {
  const first = result.content[0];
  return first && first.type === 'text' ? first.text : '';
}
