// MCP test clients: the SDK's own Client over Streamable HTTP against the real server.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { RequestOptions } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';

export interface McpTestClient {
  client: Client;
  transport: StreamableHTTPClientTransport;
  /** The token sent as `Authorization: Bearer` from now on (null: no header). */
  setHeaderToken(token: string | null): void;
  call(name: string, args?: Record<string, unknown>, options?: RequestOptions): Promise<CallToolResult>;
  /** Calls a tool and fails unless it succeeded; returns the structured content. */
  ok<T = any>(name: string, args?: Record<string, unknown>, options?: RequestOptions): Promise<T>;
  /** Calls a tool and fails unless it came back as an error result; returns the error. */
  err(name: string, args?: Record<string, unknown>, options?: RequestOptions): Promise<{ code: string; message: string; details?: unknown }>;
  close(): Promise<void>;
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

  const call = async (name: string, args: Record<string, unknown> = {}, options?: RequestOptions) =>
    (await client.callTool({ name, arguments: args }, undefined, options)) as CallToolResult;

  return {
    client,
    transport,
    setHeaderToken(token) {
      headerToken = token;
    },
    call,
    async ok(name, args, options) {
      const result = await call(name, args, options);
      if (result.isError) throw new Error(`${name} failed: ${JSON.stringify(result.structuredContent ?? result.content)}`);
      return result.structuredContent as any;
    },
    async err(name, args, options) {
      const result = await call(name, args, options);
      if (!result.isError) throw new Error(`${name} succeeded but an error was expected: ${JSON.stringify(result.structuredContent)}`);
      const structured = result.structuredContent as { ok: false; error: { code: string; message: string; details?: unknown } };
      return structured.error;
    },
    async close() {
      await transport.terminateSession().catch(() => undefined);
      await client.close();
    },
  };
}

/** The text of the first content block of a tool result. */
export function resultText(result: CallToolResult): string {
  const first = result.content[0];
  return first && first.type === 'text' ? first.text : '';
}
