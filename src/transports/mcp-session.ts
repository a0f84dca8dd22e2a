// One MCP session: its own McpServer serving the tool registry, and the participant the session
// is bound to. The registry is the one source of truth: tools/list converts each tool's zod
// schema to JSON Schema, tools/call hands the raw arguments to `registry.call`, which parses them
// with the same schema, so a bad argument is our `validation_error` (as an error result) and the
// session lives on.
//
// Binding rules (docs/mcp.md):
// - A valid `Authorization: Bearer` token on any request binds an unbound session to its owner.
// - An unbound session may call `register_agent`, `register_user` or `login`; the session is then
//   bound to that participant (the server keeps the token in memory for the session's lifetime).
// - A bound session always acts as the bound participant. A header token of another participant
//   is refused with `forbidden`, as are `register_*` and a `login` as somebody else. A header token
//   that is unknown (or was rotated) is `unauthorized` — it is never silently replaced.
// - The binding is checked on every call: if the token the session was bound with is rotated
//   elsewhere, calls fail with `unauthorized` until the session logs in again as the same
//   participant. `rotate_token` inside the session keeps the session bound (to the new token).
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import {
  CallToolRequestSchema,
  ListToolsRequestSchema,
  type CallToolResult,
  type ServerNotification,
  type ServerRequest,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { App } from '../app.js';
import { AppError, toWireError } from '../errors.js';
import { mcpInstructions, MCP_SERVER_NAME, MCP_SERVER_VERSION } from '../mcp/instructions.js';
import type { RegisteredTool, ToolRegistry } from '../tools/registry.js';
import type { Caller } from '../types.js';
import { bearerToken } from './http-util.js';

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;
type RequestId = Extra['requestId'];


/** Tools that identify an unbound session. */
const BINDING_TOOLS = new Set(['register_agent', 'register_user', 'login']);

const toolCache = new WeakMap<ToolRegistry, Tool[]>();

/** The registry as MCP tools: same names, descriptions and (JSON Schema) arguments. */
export function mcpTools(registry: ToolRegistry): Tool[] {
  let tools = toolCache.get(registry);
  if (!tools) {
    tools = registry.list().map(toMcpTool);
    toolCache.set(registry, tools);
  }
  return tools;
}

function toMcpTool(tool: RegisteredTool): Tool {
  const schema = z.toJSONSchema(tool.input, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
  delete schema.$schema;
  return {
    name: tool.name,
    description: tool.description,
    inputSchema: { ...schema, type: 'object' } as Tool['inputSchema'],
  };
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A success: the data as JSON text and as structured content. */
export function successResult(data: unknown): CallToolResult {
  const structured = isPlainObject(data) ? data : { result: data ?? null };
  return { content: [{ type: 'text', text: JSON.stringify(data ?? null) }], structuredContent: structured };
}

/** An error of the registry as a tool result (`isError: true`), code in the text and the structure. */
export function errorResult(err: unknown): CallToolResult {
  const error = toWireError(err);
  const body = { ok: false, error };
  return { isError: true, content: [{ type: 'text', text: JSON.stringify(body) }], structuredContent: body };
}

function headerValue(extra: Extra, name: string): string | undefined {
  const value = extra.requestInfo?.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

export class McpSession {
  readonly server: McpServer;
  /** Requests being handled, to abort them when their HTTP response goes away. */
  private readonly inflight = new Map<RequestId, AbortController>();
  /** Tool calls still running (to answer them before the session closes). */
  private readonly running = new Set<Promise<CallToolResult>>();
  private boundId: string | null = null;
  private boundName: string | null = null;
  /** The token the session acts with (kept in memory only). */
  private token: string | null = null;
  /** A register/login of an unbound session is running. */
  private binding = false;
  private closed = false;

  constructor(
    private readonly app: App,
    /** Client address of the request that opened the session (per-address rate limits). */
    private readonly address: string | null = null,
    /** Told when the session becomes bound (the endpoint caps sessions per participant). */
    private readonly onBound: (participantId: string) => void = () => undefined,
  ) {
    this.server = new McpServer(
      { name: MCP_SERVER_NAME, version: MCP_SERVER_VERSION },
      { capabilities: { tools: { listChanged: false } }, instructions: mcpInstructions(app.config.defaultLanguage) },
    );
    this.server.server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: mcpTools(app.registry) }));
    this.server.server.setRequestHandler(CallToolRequestSchema, (request, extra) => {
      const call = this.callTool(request.params.name, request.params.arguments ?? {}, extra);
      this.running.add(call);
      void call.finally(() => this.running.delete(call));
      return call;
    });
  }

  /** Name of the bound participant, or null. */
  get participant(): string | null {
    return this.boundName;
  }

  /** Id of the bound participant, or null. */
  get participantId(): string | null {
    return this.boundId;
  }

  /** The HTTP response that carried this request closed before the answer: stop waiting. */
  abortRequest(id: RequestId): void {
    this.inflight.get(id)?.abort();
  }

  /**
   * Closes the session. With `graceMs`, running calls are stopped first (a waiting
   * `wait_for_turn` answers `your_turn: null`) and get up to that long to send their answer.
   */
  async close(graceMs = 0): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const controller of this.inflight.values()) controller.abort();
    if (graceMs > 0 && this.running.size > 0) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.allSettled([...this.running]),
        new Promise((resolve) => (timer = setTimeout(resolve, graceMs))),
      ]);
      clearTimeout(timer);
      // Let the transport write the answers before it closes the streams.
      await new Promise((resolve) => setImmediate(resolve));
    }
    this.inflight.clear();
    await this.server.close().catch(() => undefined);
  }

  private async callTool(name: string, args: Record<string, unknown>, extra: Extra): Promise<CallToolResult> {
    const abort = new AbortController();
    const onAbort = () => abort.abort();
    extra.signal.addEventListener('abort', onAbort, { once: true });
    if (extra.signal.aborted) abort.abort();
    this.inflight.set(extra.requestId, abort);
    // JSON-RPC ids repeat across sessions (every client counts from 0): qualify them for the logs.
    const requestId = `mcp-${extra.sessionId ?? 'nosession'}-${String(extra.requestId)}`;
    let claimed = false;
    try {
      // The address pays first, as in the registry: an unknown header token is looked up in a
      // shared store (identify), and a client over its limit must not cost that lookup.
      await this.app.registry.chargeAddress(this.address);
      const tool = this.app.registry.get(name);
      const caller = await this.identify(name, bearerToken(headerValue(extra, 'authorization')));
      if (tool?.public && BINDING_TOOLS.has(name)) claimed = this.checkIdentification(name, args);
      if (tool && !tool.public && !caller) {
        throw new AppError(
          'unauthorized',
          'This MCP session has no identity yet: call register_agent (new agent) or login {token} first, or configure the header "Authorization: Bearer <token>".',
        );
      }
      const progressToken = extra._meta?.progressToken;
      const onProgress = (elapsedMs: number, totalMs: number) => {
        if (progressToken === undefined || abort.signal.aborted) return;
        extra
          .sendNotification({
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
      if (claimed) this.binding = false;
      extra.signal.removeEventListener('abort', onAbort);
      this.inflight.delete(extra.requestId);
    }
  }

  /**
   * `initialize` carrying a valid Bearer token binds the new session at once, not only at its
   * first tool call: a client configured with the header is bound from the start, so it never
   * counts as unbound (SPEC §10: unbound sessions expire after 60 s and make room for others;
   * a bound session is never evicted for one). An unknown token leaves it unbound (the first
   * tool call then answers `unauthorized`).
   */
  async bindFromHeader(headerToken: string): Promise<void> {
    if (this.boundId !== null || this.binding) return;
    const found = await this.app.participants.authenticateAnywhere(headerToken).catch(() => null);
    if (found && this.boundId === null && !this.binding) this.bind(found, headerToken);
  }

  /**
   * The caller of this call, binding the session to a valid header token. Tokens are looked up
   * in a shared store when this node does not know them (issued on another node, SPEC §11).
   */
  private async identify(toolName: string, headerToken: string | null): Promise<Caller | null> {
    const participants = this.app.participants;
    if (headerToken) {
      const fromHeader = await participants.authenticateAnywhere(headerToken);
      if (!fromHeader) throw new AppError('unauthorized', 'The token in the Authorization header is unknown or was rotated');
      if (this.boundId !== null && fromHeader.id !== this.boundId) {
        throw new AppError(
          'forbidden',
          `This MCP session is bound to "${this.boundName}" and cannot act as "${fromHeader.name}"; open a new session for another participant.`,
        );
      }
      if (this.boundId === null && this.binding) {
        throw new AppError('conflict', 'This MCP session is being identified by another call; try again.');
      }
      this.bind(fromHeader, headerToken);
      return fromHeader;
    }
    if (this.token === null) return null;
    const bound = await participants.authenticateAnywhere(this.token);
    if (bound) return bound;
    // The session's token was rotated or revoked elsewhere: only a login as the same participant helps.
    if (toolName === 'login') return null;
    throw new AppError(
      'unauthorized',
      `The token this session was bound with (as "${this.boundName}") was rotated or revoked; call login with the current token, or open a new session.`,
    );
  }

  /** register_* / login: allowed once on an unbound session, and login as the same participant. */
  private checkIdentification(name: string, args: Record<string, unknown>): boolean {
    if (this.boundId !== null) {
      if (name !== 'login') {
        throw new AppError(
          'forbidden',
          `This MCP session is already bound to "${this.boundName}"; open a new session to ${name === 'register_agent' ? 'register another agent' : 'register someone else'}.`,
        );
      }
      const target =
        typeof args.token === 'string'
          ? this.app.participants.authenticate(args.token)
          : typeof args.name === 'string'
            ? this.app.participants.byName(args.name)
            : undefined;
      if (target && target.id !== this.boundId) {
        throw new AppError(
          'forbidden',
          `This MCP session is bound to "${this.boundName}" and cannot log in as "${target.name}"; open a new session for another participant.`,
        );
      }
      return false;
    }
    if (this.binding) throw new AppError('conflict', 'This MCP session is being identified by another call; try again.');
    this.binding = true;
    return true;
  }

  private afterCall(name: string, data: unknown): void {
    const token = isPlainObject(data) && typeof data.token === 'string' ? data.token : null;
    if (!token) return;
    if (BINDING_TOOLS.has(name) || name === 'rotate_token') {
      const caller = this.app.participants.authenticate(token);
      if (caller && (this.boundId === null || caller.id === this.boundId)) this.bind(caller, token);
    }
  }

  private bind(caller: Caller, token: string): void {
    const first = this.boundId === null;
    this.boundId = caller.id;
    this.boundName = caller.name;
    this.token = token;
    if (first) this.onBound(caller.id);
  }
}

/** What the session table knows of one session (mcp.ts keeps one per session id). */
export interface SessionSlot {
  session: McpSession;
  /** POST requests of this session still being answered. */
  open: number;
  /** Standalone GET (SSE) streams of this session still open. */
  streams: number;
  /** Last request (an unbound session: last POST; a stream alone never keeps it, SPEC §10). */
  lastSeen: number;
}

export interface SessionLimits {
  /** All sessions. */
  maxSessions: number;
  /** Sessions not bound to a participant (anyone can open one with `initialize`). */
  maxUnbound: number;
  /** A bound session idle this long is closed. */
  idleMs: number;
  /** An unbound session idle this long is closed (SPEC §10: 60 s). */
  unboundIdleMs: number;
}

/**
 * Room for a new session (which starts unbound), SPEC §10: when the unbound sessions are at
 * their cap, or all sessions are, the least recently used *unbound* session with no POST being
 * answered makes room (an open GET stream does not protect it: 100 anonymous streams held open
 * must not lock every new client out). A bound session is never evicted for an unbound one: a
 * flood of anonymous `initialize` can only push out other anonymous sessions. `evict` is the id
 * to close; `ok: false` means refuse.
 */
export function roomForNewSession(sessions: ReadonlyMap<string, SessionSlot>, limits: SessionLimits): { ok: boolean; evict?: string } {
  let unbound = 0;
  let oldest: [string, SessionSlot] | undefined;
  for (const pair of sessions) {
    if (pair[1].session.participant !== null) continue;
    unbound += 1;
    if (pair[1].open > 0) continue;
    if (!oldest || pair[1].lastSeen < oldest[1].lastSeen) oldest = pair;
  }
  if (unbound < limits.maxUnbound && sessions.size < limits.maxSessions) return { ok: true };
  return oldest ? { ok: true, evict: oldest[0] } : { ok: false };
}

/**
 * Whether an idle session has outlived its idle time: an unbound one 60 s after its last POST
 * (an open GET stream does not keep it), a bound one after its idle time with no request and no
 * stream open.
 */
export function sessionExpired(slot: SessionSlot, now: number, limits: SessionLimits): boolean {
  if (slot.open > 0) return false;
  const unbound = slot.session.participant === null;
  if (!unbound && slot.streams > 0) return false;
  return now - slot.lastSeen >= (unbound ? limits.unboundIdleMs : limits.idleMs);
}

/**
 * The sessions to close so that `participantId` keeps at most `max` (SPEC §10: one registration
 * must not take every session of the server): its least recently used ones other than `keep`.
 */
export function overParticipantCap(sessions: ReadonlyMap<string, SessionSlot>, participantId: string, keep: McpSession, max: number): string[] {
  const own = [...sessions].filter(([, slot]) => slot.session.participantId === participantId && slot.session !== keep);
  const excess = own.length + 1 - max;
  if (excess <= 0) return [];
  return own
    .sort((a, b) => a[1].lastSeen - b[1].lastSeen)
    .slice(0, excess)
    .map(([id]) => id);
}
