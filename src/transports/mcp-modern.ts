// The stateless MCP revision 2026-07-28 on /mcp (SPEC §7.1): no initialize, no session; every
// request carries its protocol version and its identity (the Authorization header, or the
// `token` argument of a tool call, SPEC §3). The SDK's `createMcpHandler` does the protocol work
// (per-request envelope, `server/discover`, the unsupported-version error, `subscriptions/listen`
// streams); this module gives it one server instance per request and publishes room changes to
// the listen streams. Nothing here is kept between requests, so any node can answer (SPEC §11).
import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import {
  createMcpHandler,
  InMemoryServerEventBus,
  type McpHttpHandler,
  type ServerContext,
} from '@modelcontextprotocol/server';
import type { App } from '../app.js';
import { AppError, toWireError } from '../errors.js';
import type { Caller } from '../types.js';
import { bearerToken } from './http-util.js';
import { changedUris, parseRoomUri, readRoomResource } from './mcp-resources.js';
import { argumentCaller, McpToolServer } from './mcp-server.js';

/** Per-request facts the factory cannot get from the web Request (the client address). */
const requestScope = new AsyncLocalStorage<{ address: string | null }>();

/** One modern request's server: identity from the header, else the `token` argument. */
export class McpRequestServer extends McpToolServer {
  private readonly label = randomUUID().slice(0, 8);

  protected async identify(_toolName: string, headerToken: string | null, argumentToken: string | null): Promise<Caller | null> {
    if (headerToken) {
      const caller = await this.app.participants.authenticateAnywhere(headerToken);
      if (!caller) throw new AppError('unauthorized', 'The token in the Authorization header is unknown or was rotated');
      return caller;
    }
    return argumentCaller(this.app, argumentToken);
  }

  protected requestLabel(ctx: ServerContext): string {
    return `mcp-modern-${this.label}-${String(ctx.mcpReq.id)}`;
  }
}

export interface ModernEndpoint {
  handler: McpHttpHandler;
  /** Serves one modern request with the client's address in scope. */
  serve<T>(address: string | null, run: () => Promise<T>): Promise<T>;
  /**
   * A `subscriptions/listen` may name only rooms the caller can read (the SDK's listen router
   * does not know our members): the refusal as a JSON-RPC error body, or null when allowed.
   */
  checkListen(body: unknown, authorization: string | undefined): Promise<Record<string, unknown> | null>;
  close(): Promise<void>;
}

export function createModernEndpoint(app: App, maxRequestBodySize: number): ModernEndpoint {
  const bus = new InMemoryServerEventBus((err) => app.logger.warn({ err }, 'MCP listen stream failed'));
  const handler = createMcpHandler(() => new McpRequestServer(app, requestScope.getStore()?.address ?? null).server, {
    legacy: 'reject',
    bus,
    maxRequestBodySize,
    onerror: (err) => app.logger.debug({ err: err.message }, 'MCP request rejected'),
  });
  // Room changes to the open listen streams (each stream filters on the URIs it asked for).
  const stop = app.bus.subscribe((event) => {
    if (bus.listenerCount === 0) return;
    for (const uri of changedUris(event)) handler.notify.resourceUpdated(uri);
  });
  return {
    handler,
    serve: (address, run) => requestScope.run({ address }, run),
    async checkListen(body, authorization) {
      const message = body as { id?: unknown; method?: unknown; params?: { notifications?: { resourceSubscriptions?: unknown } } } | null;
      const uris = message?.method === 'subscriptions/listen' ? message.params?.notifications?.resourceSubscriptions : undefined;
      if (!Array.isArray(uris) || uris.length === 0) return null;
      try {
        const token = bearerToken(authorization);
        const caller = token ? await app.participants.authenticateAnywhere(token) : null;
        if (!caller) throw new AppError('unauthorized', 'Following a room needs a token (Authorization: Bearer <token>)');
        for (const uri of uris) {
          if (typeof uri !== 'string' || !parseRoomUri(uri)) throw new AppError('not_found', 'Only chatroom://rooms/… resources can be followed');
          await readRoomResource(app, caller, uri);
        }
        return null;
      } catch (err) {
        const error = toWireError(err);
        return { jsonrpc: '2.0', id: message?.id ?? null, error: { code: -32602, message: error.message, data: error } };
      }
    },
    async close() {
      stop();
      await handler.close();
    },
  };
}
