// MCP (Streamable HTTP) at /mcp on the same server, both protocol eras on one URL (SPEC §7.1):
// - modern (2026-07-28) requests carry their protocol version and identity and need no session
//   (mcp-modern.ts: the SDK's createMcpHandler with one server instance per request);
// - legacy requests (`initialize`, then `mcp-session-id`) get stateful sessions, one server each
//   (mcp-session.ts), keyed by the `mcp-session-id` header.
// The SDK's own classifier (`isLegacyRequest`) decides which era a request is. DNS-rebinding
// defence: the Host must be in ALLOWED_HOSTS and an Origin, when sent, in ALLOWED_ORIGINS.
import { randomUUID } from 'node:crypto';
import { NodeStreamableHTTPServerTransport, toNodeHandler } from '@modelcontextprotocol/node';
import { isInitializeRequest, isJSONRPCRequest, isLegacyRequest } from '@modelcontextprotocol/server';
import express, { type NextFunction, type Request, type Response } from 'express';
import type { App } from '../app.js';
import { bearerToken, hostAllowed } from './http-util.js';
import { AppError } from '../errors.js';
import { createModernEndpoint, type ModernEndpoint } from './mcp-modern.js';
import { McpSession, overParticipantCap, roomForNewSession, sessionExpired, type SessionLimits } from './mcp-session.js';
import type { Mount, MountFactory } from './mount.js';

export const MCP_PATH = '/mcp';

/**
 * `initialize` with this header set to `off` opens a session without channel pushes; set to `on`
 * (the stdio proxy does) the bound agent also stays online while its push stream is open, as on a
 * WebSocket. Without it a session gets pushes, and presence follows its calls (SPEC §6).
 */
export const CHANNEL_HEADER = 'x-chatroom-channel';

export interface McpMountOptions {
  /** A session with no request and no open stream for this long is closed (default 30 min). */
  idleMs?: number;
  /** At most this many sessions; the least recently used idle unbound one makes room (default 1000). */
  maxSessions?: number;
  /** At most this many unbound sessions (default MCP_MAX_UNBOUND_SESSIONS). */
  maxUnboundSessions?: number;
  /** An unbound session idle this long is closed (default MCP_UNBOUND_IDLE_MS, 60 s). */
  unboundIdleMs?: number;
  /** Sessions one participant keeps at most; binding one more closes its least recently used (default 20). */
  maxSessionsPerParticipant?: number;
}

/** Sessions per participant (as WebSocket's MAX_SOCKETS_PER_TOKEN default): an IDE or two, with room to spare. */
export const MCP_SESSIONS_PER_PARTICIPANT = 20;

interface Entry {
  session: McpSession;
  transport: NodeStreamableHTTPServerTransport;
  lastSeen: number;
  /** POST requests of this session still being answered. */
  open: number;
  /** GET (SSE) streams of this session still open. */
  streams: number;
}

/** On shutdown, running calls are stopped and get this long to send their answers. */
const SHUTDOWN_GRACE_MS = 1000;

const JSONRPC_PARSE_ERROR = -32700;
const JSONRPC_SERVER_ERROR = -32000;
const JSONRPC_SESSION_NOT_FOUND = -32001;

function rpcError(res: Response, status: number, code: number, message: string): void {
  if (res.headersSent) return;
  res.status(status).json({ jsonrpc: '2.0', error: { code, message }, id: null });
}

function originAllowed(app: App, origin: string): boolean {
  const allowed = app.config.allowedOrigins;
  const wanted = origin.replace(/\/$/, '').toLowerCase();
  return allowed.some((a) => a === '*' || a.toLowerCase() === wanted);
}

/** Ids of the JSON-RPC requests in a POST body (one message or a batch). */
function requestIds(body: unknown): Array<string | number> {
  const messages = Array.isArray(body) ? body : [body];
  return messages.filter(isJSONRPCRequest).map((m) => m.id);
}

export class McpEndpoint implements Mount {
  private readonly sessions = new Map<string, Entry>();
  private readonly limits: SessionLimits;
  private readonly perParticipant: number;
  private reaper: NodeJS.Timeout | undefined;
  private closing = false;
  private readonly modern: ModernEndpoint;
  private readonly serveModern: ReturnType<typeof toNodeHandler>;

  constructor(
    private readonly app: App,
    options: McpMountOptions = {},
  ) {
    this.limits = {
      idleMs: options.idleMs ?? 30 * 60_000,
      maxSessions: options.maxSessions ?? 1000,
      maxUnbound: options.maxUnboundSessions ?? app.config.mcpMaxUnboundSessions,
      unboundIdleMs: options.unboundIdleMs ?? app.config.mcpUnboundIdleMs,
    };
    this.perParticipant = options.maxSessionsPerParticipant ?? MCP_SESSIONS_PER_PARTICIPANT;
    this.modern = createModernEndpoint(app, this.bodyLimit);
    this.serveModern = toNodeHandler(this.modern.handler, {
      maxRequestBodySize: this.bodyLimit,
      onerror: (err) => app.logger.error({ err }, 'MCP request failed'),
    });
  }

  /** Largest request body: a whole message at its size limit, as JSON, with room to spare. */
  private get bodyLimit(): number {
    return Math.max(this.app.config.maxFrameBytes, this.app.config.maxMessageChars * 4 + 64 * 1024);
  }

  /** Open sessions (for tests and health). */
  get sessionCount(): number {
    return this.sessions.size;
  }

  routes(http: express.Express): void {
    const app = this.app;
    const router = express.Router();
    router.use((req, res, next) => this.guard(req, res, next));
    router.use(
      express.json({ limit: this.bodyLimit, strict: false }),
    );
    router.all('/', (req, res) => {
      this.handle(req, res).catch((err: unknown) => {
        app.logger.error({ err, requestId: res.locals.requestId }, 'MCP request failed');
        rpcError(res, 500, JSONRPC_SERVER_ERROR, 'Internal server error');
      });
    });
    router.use((err: unknown, _req: Request, res: Response, _next: NextFunction) => {
      const { status, type } = err as { status?: number; type?: string };
      if (type === 'entity.too.large' || status === 413) return rpcError(res, 413, JSONRPC_SERVER_ERROR, 'Request body is too large');
      if (type === 'entity.parse.failed' || (status !== undefined && status >= 400 && status < 500)) {
        return rpcError(res, 400, JSONRPC_PARSE_ERROR, 'Parse error: malformed JSON body');
      }
      app.logger.error({ err, requestId: res.locals.requestId }, 'MCP request failed');
      return rpcError(res, 500, JSONRPC_SERVER_ERROR, 'Internal server error');
    });
    http.use(MCP_PATH, router);
  }

  attach(): void {
    const { idleMs, unboundIdleMs } = this.limits;
    this.reaper = setInterval(() => this.reapIdle(), Math.max(50, Math.min(60_000, idleMs, unboundIdleMs / 4)));
    this.reaper.unref();
  }

  async close(): Promise<void> {
    this.closing = true;
    if (this.reaper) clearInterval(this.reaper);
    await Promise.all([...this.sessions.keys()].map((id) => this.drop(id, SHUTDOWN_GRACE_MS)));
    await this.modern.close();
  }

  /** DNS-rebinding defence and CORS for allowed browser origins. */
  private guard(req: Request, res: Response, next: NextFunction): void {
    const app = this.app;
    const host = req.get('host');
    /** A refused Host or Origin, with the setting that would accept it. */
    const refuse = (what: string, value: string, setting: string, now: string[]): void =>
      rpcError(res, 403, JSONRPC_SERVER_ERROR, `${what} "${value}" is not allowed on ${MCP_PATH}. Add it to ${setting} (now: ${now.join(',')}) to accept it.`);
    if (!hostAllowed(app, host)) return refuse('Host', host ?? '', 'ALLOWED_HOSTS', app.config.allowedHosts);
    const origin = req.get('origin');
    if (origin !== undefined) {
      if (!originAllowed(app, origin)) return refuse('Origin', origin, 'ALLOWED_ORIGINS', app.config.allowedOrigins);
      res.setHeader('Access-Control-Allow-Origin', origin);
      res.setHeader('Vary', 'Origin');
      res.setHeader('Access-Control-Expose-Headers', 'mcp-session-id, mcp-protocol-version');
      if (req.method === 'OPTIONS') {
        res.setHeader('Access-Control-Allow-Methods', 'GET, POST, DELETE, OPTIONS');
        res.setHeader(
          'Access-Control-Allow-Headers',
          // mcp-method / mcp-name: the 2026-07-28 revision's per-request headers.
          `authorization, content-type, accept, mcp-session-id, mcp-protocol-version, mcp-method, mcp-name, last-event-id, ${CHANNEL_HEADER}`,
        );
        res.setHeader('Access-Control-Max-Age', '600');
        res.status(204).end();
        return;
      }
    }
    next();
  }

  private async handle(req: Request, res: Response): Promise<void> {
    if (this.closing) return rpcError(res, 503, JSONRPC_SERVER_ERROR, 'Server is shutting down');
    const sessionId = req.get('mcp-session-id');
    if (!sessionId && !(await isLegacyRequest(classifiable(req), req.body))) return this.handleModern(req, res);
    let entry: Entry | undefined;
    if (sessionId) {
      entry = this.sessions.get(sessionId);
      if (!entry) {
        return rpcError(res, 404, JSONRPC_SESSION_NOT_FOUND, 'Session not found (expired or closed): start a new session with initialize');
      }
    } else if (req.method === 'POST' && isInitializeRequest(req.body)) {
      try {
        await this.app.limits.consumeMcpInitialize(req.socket.remoteAddress ?? null);
      } catch (err) {
        if (err instanceof AppError) return rpcError(res, err.status, JSONRPC_SERVER_ERROR, err.message);
        throw err;
      }
      if (!this.makeRoom()) return rpcError(res, 503, JSONRPC_SERVER_ERROR, 'Too many MCP sessions; try again later');
      // The stdio proxy started with --no-channel asks for no pushes (docs/mcp.md).
      const channelHeader = req.get(CHANNEL_HEADER);
      entry = await this.createSession(req.socket.remoteAddress ?? null, channelHeader !== 'off', channelHeader === 'on');
      const headerToken = bearerToken(req.get('authorization'));
      if (headerToken) await entry.session.bindFromHeader(headerToken);
    } else {
      return rpcError(
        res,
        400,
        JSONRPC_SERVER_ERROR,
        'Bad Request: send initialize first (POST without mcp-session-id), then the mcp-session-id header on every request',
      );
    }

    const current = entry;
    // A GET is the standalone SSE stream: it keeps a bound session alive, never an unbound one
    // (SPEC §10: unbound sessions expire after 60 s; a held stream must not make them permanent).
    const stream = req.method === 'GET';
    const seen = (): void => {
      if (!stream || current.session.participant !== null) current.lastSeen = Date.now();
    };
    seen();
    if (stream) current.streams += 1;
    else current.open += 1;
    const ids = req.method === 'POST' ? requestIds(req.body) : [];
    res.on('close', () => {
      if (stream) current.streams -= 1;
      else current.open -= 1;
      if (stream && current.streams === 0) current.session.streamsClosed();
      seen();
      // The client went away before the answer (e.g. gave up on a long wait_for_turn): stop it.
      if (!res.writableFinished) for (const id of ids) current.session.abortRequest(id);
    });
    if (stream) setImmediate(() => current.session.streamOpened());
    await current.transport.handleRequest(req, res, req.body);
    // An initialize that failed leaves a transport without a session: nothing to keep.
    if (!sessionId && !current.transport.sessionId) await current.session.close();
  }

  /** A stateless 2026-07-28 request: no session, identity per request (mcp-modern.ts). */
  private async handleModern(req: Request, res: Response): Promise<void> {
    const refused = await this.modern.checkListen(req.body, req.get('authorization'));
    if (refused) {
      res.status(200).json(refused);
      return;
    }
    await this.modern.serve(req.socket.remoteAddress ?? null, () => this.serveModern(req, res, req.body));
  }

  private async createSession(address: string | null, channel: boolean, listenerOnline: boolean): Promise<Entry> {
    const session = new McpSession(
      this.app,
      address,
      (participantId) => {
        for (const id of overParticipantCap(this.sessions, participantId, session, this.perParticipant)) void this.drop(id);
      },
      () => entry.streams > 0,
      channel,
      listenerOnline,
    );
    const transport: NodeStreamableHTTPServerTransport = new NodeStreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        this.sessions.set(id, entry);
      },
      // DELETE /mcp: running calls (a wait_for_turn) are stopped and still answered before the
      // transport closes (the SDK awaits this, then closes the transport and answers the DELETE).
      onsessionclosed: (id) => this.drop(id, SHUTDOWN_GRACE_MS),
    });
    const entry: Entry = { session, transport, lastSeen: Date.now(), open: 0, streams: 0 };
    transport.onclose = () => {
      if (transport.sessionId) void this.drop(transport.sessionId);
    };
    await session.server.connect(transport);
    return entry;
  }

  private async drop(id: string, graceMs = 0): Promise<void> {
    const entry = this.sessions.get(id);
    if (!entry) return;
    this.sessions.delete(id);
    await entry.session.close(graceMs);
  }

  private reapIdle(): void {
    const now = Date.now();
    for (const [id, entry] of this.sessions) if (sessionExpired(entry, now, this.limits)) void this.drop(id);
  }

  /** Keeps the number of sessions bounded without ever evicting a bound session (mcp-session.ts). */
  private makeRoom(): boolean {
    const room = roomForNewSession(this.sessions, this.limits);
    if (room.evict !== undefined) void this.drop(room.evict);
    return room.ok;
  }
}

/** A web Request with the method and headers of `req`, for the SDK's era classifier (the body is passed parsed). */
function classifiable(req: Request): globalThis.Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (typeof value === 'string') headers.set(name, value);
    else if (Array.isArray(value)) for (const v of value) headers.append(name, v);
  }
  return new globalThis.Request(`http://${req.get('host') ?? 'localhost'}${req.originalUrl}`, { method: req.method, headers });
}

export function createMcpMount(options: McpMountOptions = {}): MountFactory {
  return (app) => new McpEndpoint(app, options);
}

export const mcpMount: MountFactory = createMcpMount();
