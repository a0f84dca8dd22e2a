// The official MCP client 2.x (@modelcontextprotocol/client) against the real server, in the
// three ways a client can meet it: pinned to the stateless revision 2026-07-28, auto-negotiating,
// or legacy (the 2025 initialize handshake). Every HTTP answer's headers are kept so a test can
// check what the server sent (no Mcp-Session-Id in the modern era).
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

export type Era = 'pinned' | 'auto' | 'legacy';

export const MODERN_REVISION = '2026-07-28';

export interface Mcp2Client {
  client: Client;
  /** Headers of every HTTP answer so far, in order. */
  answers: Headers[];
  /** Requests sent so far: method and headers (to see what the client put on the wire). */
  requests: Array<{ url: string; headers: Headers }>;
  /** Structured content of a successful tool call (throws on an error result). */
  ok<T = any>(name: string, args?: Record<string, unknown>): Promise<T>;
  /** The error of a tool call that must fail. */
  err(name: string, args?: Record<string, unknown>): Promise<{ code: string; message: string }>;
  close(): Promise<void>;
}

export interface Mcp2Options {
  /** Sent as `Authorization: Bearer` on every request. */
  token?: string;
  /** Base URLs to spread requests over round-robin (a cluster); default: the one given. */
  spread?: string[];
}

export async function connectMcp2(baseUrl: string, era: Era, options: Mcp2Options = {}): Promise<Mcp2Client> {
  const answers: Headers[] = [];
  const requests: Mcp2Client['requests'] = [];
  const nodes = options.spread ?? [baseUrl];
  let next = 0;
  const recordingFetch: typeof fetch = async (input, init) => {
    const headers = new Headers(init?.headers);
    if (options.token) headers.set('authorization', `Bearer ${options.token}`);
    let url = new URL(input instanceof Request ? input.url : String(input));
    const node = new URL(nodes[next++ % nodes.length]!);
    url = new URL(url.pathname + url.search, node);
    requests.push({ url: url.toString(), headers });
    const res = await fetch(url, { ...init, headers });
    answers.push(res.headers);
    return res;
  };
  const transport = new StreamableHTTPClientTransport(new URL('/mcp', baseUrl), { fetch: recordingFetch });
  const mode = era === 'pinned' ? { pin: MODERN_REVISION } : era;
  const client = new Client({ name: 'chatroom-test-v2', version: '0.0.0' }, { versionNegotiation: { mode } });
  await client.connect(transport);
  const call = (name: string, args: Record<string, unknown> = {}) => client.callTool({ name, arguments: args });
  return {
    client,
    answers,
    requests,
    async ok(name, args) {
      const result = await call(name, args);
      if (result.isError) throw new Error(`${name} failed: ${JSON.stringify(result.structuredContent ?? result.content)}`);
      return result.structuredContent as any;
    },
    async err(name, args) {
      const result = await call(name, args);
      if (!result.isError) throw new Error(`${name} succeeded but an error was expected: ${JSON.stringify(result.structuredContent)}`);
      return (result.structuredContent as { error: { code: string; message: string } }).error;
    },
    close: () => client.close(),
  };
}
