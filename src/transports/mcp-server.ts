// One MCP server instance over the tool registry, the same for both protocol eras (SPEC §7.1):
// tools/list and tools/call forward to the registry, resources show the caller's rooms. What
// differs per era is only who the caller is: a legacy session (mcp-session.ts) binds one
// participant for its lifetime, a modern request (mcp-modern.ts) carries its identity itself
// (the header, or the `token` argument). Subclasses say how in `identify`.
import { ProtocolError, Server, type CallToolResult, type DiscoverResult, type ServerContext } from '@modelcontextprotocol/server';
import type { App } from '../app.js';
import { AppError, toWireError } from '../errors.js';
import { MCP_SERVER_NAME, MCP_SERVER_VERSION, mcpServerOptions, SUPPORTED_PROTOCOL_VERSIONS } from '../mcp/instructions.js';
import type { Caller } from '../types.js';
import { bearerToken } from './http-util.js';
import { listRoomResources, readRoomResource, ROOM_RESOURCE_TEMPLATES } from './mcp-resources.js';
import { errorResult, mcpTools, successResult, takeTokenArgument } from './mcp-tools.js';

export type RequestId = ServerContext['mcpReq']['id'];

/** A header of the HTTP request that carried this MCP request (undefined on stdio). */
export function requestHeader(ctx: ServerContext, name: string): string | undefined {
  return ctx.http?.req?.headers.get(name) ?? undefined;
}

/** An error of ours as a JSON-RPC error (resources): our code travels in `data.code`. */
export function protocolError(err: unknown): ProtocolError {
  const wire = toWireError(err);
  const notFound = wire.code.endsWith('not_found') || wire.code === 'not_a_member';
  return new ProtocolError(notFound ? -32602 : -32000, wire.message, wire);
}

/** The caller named by a `token` argument (SPEC §3); an unknown one is `unauthorized` (never echoed). */
export async function argumentCaller(app: App, argumentToken: string | null): Promise<Caller | null> {
  if (!argumentToken) return null;
  const caller = await app.participants.authenticateAnywhere(argumentToken);
  if (!caller) throw new AppError('unauthorized', 'The token argument is unknown or was rotated');
  return caller;
}

export interface McpServerOptions {
  /** Declare `experimental['claude/channel']` (legacy sessions that may hold a stream). */
  channel?: boolean;
}

export abstract class McpToolServer {
  readonly server: Server;
  /** Requests being handled, to abort them when their HTTP response goes away. */
  protected readonly inflight = new Map<RequestId, AbortController>();
  /** Tool calls still running (to answer them before the session closes). */
  protected readonly running = new Set<Promise<CallToolResult>>();

  constructor(
    protected readonly app: App,
    /** Client address (per-address rate limits). */
    protected readonly address: string | null,
    options: McpServerOptions = {},
  ) {
    this.server = new Server({ name: MCP_SERVER_NAME, version: MCP_SERVER_VERSION }, mcpServerOptions(options.channel === true, app.config.defaultLanguage));
    const server = this.server;
    // SPEC §7.1: server/discover names every version we speak, the legacy handshake ones too
    // (the SDK lists only the modern ones; negotiating clients pick the newest they share).
    // The serving entry (re)installs its own discover handler, which calls this method: it is
    // the one seam (an SDK internal, checked by test/integration/mcp-eras.test.ts).
    const internals = server as unknown as { _ondiscover(): DiscoverResult };
    const discover = internals._ondiscover.bind(server);
    internals._ondiscover = () => ({ ...discover(), supportedVersions: SUPPORTED_PROTOCOL_VERSIONS });
    server.setRequestHandler('tools/list', () => ({ tools: mcpTools(app.registry) }));
    server.setRequestHandler('tools/call', (request, ctx) => {
      const call = this.callTool(request.params.name, request.params.arguments ?? {}, ctx);
      this.running.add(call);
      void call.finally(() => this.running.delete(call));
      return call;
    });
    server.setRequestHandler('resources/templates/list', () => ({ resourceTemplates: ROOM_RESOURCE_TEMPLATES }));
    server.setRequestHandler('resources/list', async (_request, ctx) => {
      const caller = await this.resourceCaller(ctx, false);
      return { resources: caller ? await listRoomResources(app, caller) : [] };
    });
    server.setRequestHandler('resources/read', async (request, ctx) => {
      const caller = await this.resourceCaller(ctx, true);
      try {
        return { contents: [await readRoomResource(app, caller!, request.params.uri)] };
      } catch (err) {
        throw protocolError(err);
      }
    });
  }

  /**
   * The caller of a tool call: `headerToken` from `Authorization`, `argumentToken` from the
   * `token` argument (SPEC §3). Null when the call carries no identity.
   */
  protected abstract identify(toolName: string, headerToken: string | null, argumentToken: string | null): Promise<Caller | null>;

  /** After a successful call (legacy sessions bind on register/login). */
  protected afterCall(_name: string, _data: unknown): void {}

  /** Before a public binding tool runs (legacy sessions refuse a second identity); true: claimed. */
  protected beforePublicCall(_name: string, _args: Record<string, unknown>): boolean {
    return false;
  }

  /** Releases what `beforePublicCall` claimed. */
  protected releaseClaim(): void {}

  /** The caller of a resource request (header, or the bound session); `required` makes none `unauthorized`. */
  protected async resourceCaller(ctx: ServerContext, required: boolean): Promise<Caller | null> {
    let caller: Caller | null;
    try {
      caller = await this.identify('resources', bearerToken(requestHeader(ctx, 'authorization')), null);
    } catch (err) {
      throw protocolError(err);
    }
    if (!caller && required) throw protocolError(new AppError('unauthorized', 'Reading a room needs a token (Authorization: Bearer <token>)'));
    return caller;
  }

  /** The HTTP response that carried this request closed before the answer: stop waiting. */
  abortRequest(id: RequestId): void {
    this.inflight.get(id)?.abort();
  }

  /** Stops running calls and gives them up to `graceMs` to answer (a waiting `wait_for_turn` answers `your_turn: null`). */
  protected async settle(graceMs: number): Promise<void> {
    for (const controller of this.inflight.values()) controller.abort();
    if (graceMs > 0 && this.running.size > 0) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([Promise.allSettled([...this.running]), new Promise((resolve) => (timer = setTimeout(resolve, graceMs)))]);
      clearTimeout(timer);
      // Let the transport write the answers before it closes the streams.
      await new Promise((resolve) => setImmediate(resolve));
    }
    this.inflight.clear();
  }

  /** A label for the logs; JSON-RPC ids repeat across clients, so it is qualified. */
  protected abstract requestLabel(ctx: ServerContext): string;

  private async callTool(name: string, rawArgs: Record<string, unknown>, ctx: ServerContext): Promise<CallToolResult> {
    const abort = new AbortController();
    const signal = ctx.mcpReq.signal;
    const onAbort = () => abort.abort();
    signal.addEventListener('abort', onAbort, { once: true });
    if (signal.aborted) abort.abort();
    const requestKey = ctx.mcpReq.id;
    this.inflight.set(requestKey, abort);
    const requestId = this.requestLabel(ctx);
    let claimed = false;
    try {
      // The address pays first, as in the registry: an unknown header token is looked up in a
      // shared store (identify), and a client over its limit must not cost that lookup.
      await this.app.registry.chargeAddress(this.address);
      const tool = this.app.registry.get(name);
      const { args, token: argumentToken } = takeTokenArgument(tool, rawArgs);
      // Argument names only: values may hold a token (login, the token argument) or private text.
      this.app.logger.debug({ requestId, tool: name, args: Object.keys(rawArgs) }, 'MCP tool call');
      const caller = await this.identify(name, bearerToken(requestHeader(ctx, 'authorization')), argumentToken);
      if (tool?.public) claimed = this.beforePublicCall(name, args);
      if (tool && !tool.public && !caller) {
        throw new AppError(
          'unauthorized',
          'No identity: send the header "Authorization: Bearer <token>", pass your token as the "token" argument, or (with an MCP session) call register_agent or login {token} first.',
        );
      }
      const progressToken = ctx.mcpReq._meta?.progressToken;
      const onProgress = (elapsedMs: number, totalMs: number) => {
        if (progressToken === undefined || abort.signal.aborted) return;
        ctx.mcpReq
          .notify({
            method: 'notifications/progress',
            params: {
              progressToken,
              progress: Math.round(elapsedMs / 100) / 10,
              total: Math.round(totalMs / 100) / 10,
              message: `waiting for your turn (${Math.round(elapsedMs / 1000)} s of ${Math.round(totalMs / 1000)} s)`,
            },
          })
          .catch(() => undefined);
      };
      const data = await this.app.registry.call(name, args, {
        caller,
        token: null,
        transport: 'mcp',
        address: this.address,
        addressCharged: true,
        acceptLanguage: requestHeader(ctx, 'accept-language') ?? null,
        requestId,
        signal: abort.signal,
        onProgress,
      });
      this.afterCall(name, data);
      return successResult(data);
    } catch (err) {
      if (toWireError(err).code === 'internal_error') this.app.logger.error({ err, requestId, tool: name }, 'MCP tool call failed');
      return errorResult(err);
    } finally {
      if (claimed) this.releaseClaim();
      signal.removeEventListener('abort', onAbort);
      this.inflight.delete(requestKey);
    }
  }
}
