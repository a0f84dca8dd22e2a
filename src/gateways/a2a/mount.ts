// The rooms' A2A interface on the server's HTTP port (SPEC §12, docs/a2a.md):
//   GET  /a2a/rooms/{room_id}/.well-known/agent-card.json   the room's public card, no token
//   POST /a2a/rooms/{room_id}                               JSON-RPC (the SDK's handler)
// A JSON-RPC call needs `Authorization: Bearer <participant token>` of a member of the room:
// no or an unknown token is 401, a non-member 403 (the A2A authentication and authorization
// errors), before the request body is read. The Host is checked like REST's.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { jsonRpcHandler } from '@a2a-js/sdk/server/express';
import express, { type NextFunction, type Request, type Response } from 'express';
import type { App } from '../../app.js';
import { AppError, isAppError } from '../../errors.js';
import { PACKAGE_ROOT } from '../../paths.js';
import { ROOM_ID } from '../../rooms/rules.js';
import { bearerToken, bodyLimit, hostAllowed } from '../../transports/http-util.js';
import type { Mount, MountFactory } from '../../transports/mount.js';
import type { Caller } from '../../types.js';
import { cardJson, roomCard, type AgentProfile } from './card.js';
import { refusalBody } from './errors.js';
import { RoomMember } from './member.js';
import { RoomAgents } from './room-agent.js';

export const A2A_ROOMS_PATH = '/a2a/rooms';

export interface A2aMountOptions {
  /** Tasks kept, in memory or in the shared table (default 1000; docs/a2a.md). */
  maxTasks?: number;
}

function packageVersion(): string {
  try {
    return (JSON.parse(readFileSync(path.join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version: string }).version;
  } catch {
    return '0.0.0';
  }
}

/** scheme://host[:port] the client used (the Host was checked against ALLOWED_HOSTS). */
function baseOf(req: Request): string {
  return `${req.protocol}://${req.get('host') ?? 'localhost'}`;
}

class A2aGateway implements Mount {
  private readonly agents: RoomAgents;
  /** The member each authenticated request is for, read by the SDK's user builder. */
  private readonly members = new WeakMap<Request, RoomMember>();
  private readonly version = packageVersion();

  constructor(
    private readonly app: App,
    options: A2aMountOptions,
  ) {
    this.agents = new RoomAgents({
      bus: app.bus,
      registry: app.registry,
      roomNow: (roomId) => app.rooms.currentRoom(roomId),
      // STORE=postgres: the tasks the nodes share, so GetTask and CancelTask answer on any node.
      ...(app.a2aTasks ? { shared: app.a2aTasks } : {}),
      timers: app.timers,
      onError: (err, what) => app.logger.warn({ err }, what),
      ...(options.maxTasks !== undefined ? { maxTasks: options.maxTasks } : {}),
    });
  }

  routes(http: express.Express): void {
    const router = express.Router({ mergeParams: true });
    router.use(this.hostCheck);
    router.get('/.well-known/agent-card.json', (req, res, next) => {
      this.card(req, res).catch(next);
    });
    const rpc = jsonRpcHandler({
      requestHandler: this.agents,
      userBuilder: async (req) => {
        const member = this.members.get(req);
        if (!member) throw new AppError('unauthorized', 'not authenticated');
        return member;
      },
    });
    router.post('/', (req, res, next) => {
      this.authenticate(req, res).then((ok) => (ok ? next() : undefined), next);
    });
    // Our own parser first, with the server's body limit (the SDK's would stop at 100 kB).
    router.post('/', express.json({ limit: bodyLimit(this.app) }), rpc);
    router.use((err: unknown, req: Request, res: Response, _next: NextFunction) => this.failed(err, req, res));
    http.use(`${A2A_ROOMS_PATH}/:room_id`, router);
  }

  close(): Promise<void> {
    return this.agents.close();
  }

  private readonly hostCheck = (req: Request, res: Response, next: NextFunction) => {
    if (hostAllowed(this.app, req.get('host'))) return next();
    res.status(403).json({ ok: false, error: { code: 'forbidden', message: 'Host not allowed (ALLOWED_HOSTS)' } });
  };

  private roomId(req: Request): string {
    return String((req.params as { room_id?: string }).room_id ?? '');
  }

  private async card(req: Request, res: Response): Promise<void> {
    const roomId = this.roomId(req);
    const room = ROOM_ID.test(roomId) ? await this.app.rooms.currentRoom(roomId) : undefined;
    if (!room) {
      res.status(404).json({ ok: false, error: { code: 'room_not_found', message: 'No room with this id' } });
      return;
    }
    const agents: AgentProfile[] = [];
    for (const member of room.members) {
      if (member.role !== 'ai_agent') continue;
      const found = await this.app.participants.get({ id: member.participant_id });
      const capabilities = found?.kind === 'agent' ? (found.record.capabilities ?? []) : [];
      agents.push({ name: member.name, introduce: member.introduce, capabilities });
    }
    res.setHeader('Cache-Control', 'no-cache');
    res.json(cardJson(roomCard(room, agents, baseOf(req), this.version)));
  }

  /** A member of the room, by its bearer token; anyone else gets 401/403/404 and no more. */
  private async authenticate(req: Request, res: Response): Promise<boolean> {
    const roomId = this.roomId(req);
    const token = bearerToken(req.get('authorization'));
    try {
      await this.app.registry.call('get_room', { room_id: roomId }, { token, transport: 'a2a', address: req.socket.remoteAddress ?? null });
    } catch (err) {
      if (!isAppError(err)) throw err;
      // unauthorized 401, not_a_member 403, room_not_found 404, rate_limited 429.
      if (err.status === 401) res.setHeader('WWW-Authenticate', 'Bearer');
      res.status(err.status).json(refusalBody(err.status, err.code, err.status === 401 ? 'A member token is needed (Authorization: Bearer <token>)' : err.message));
      return false;
    }
    const caller = this.app.registry.resolveCaller({ token }) as Caller;
    this.members.set(req, new RoomMember(caller, roomId, token!, req.socket.remoteAddress ?? null));
    return true;
  }

  /** Body-parser errors (and anything else) as JSON-RPC errors: never an HTML page or a bare 500. */
  private failed(err: unknown, req: Request, res: Response): void {
    if (res.headersSent) return;
    const type = (err as { type?: string }).type;
    if (type === 'entity.too.large') {
      res.status(413).json(refusalBody(413, 'payload_too_large', 'Request body is too large'));
      return;
    }
    if (type === 'entity.parse.failed' || err instanceof SyntaxError) {
      res.status(200).json({ jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Invalid JSON payload.' } });
      return;
    }
    const status = (err as { status?: number }).status;
    if (status !== undefined && status >= 400 && status < 500) {
      res.status(200).json({ jsonrpc: '2.0', id: null, error: { code: -32600, message: 'Invalid request' } });
      return;
    }
    this.app.logger.error({ err, requestId: res.locals.requestId, path: req.path }, 'a2a request failed');
    res.status(500).json({ jsonrpc: '2.0', id: null, error: { code: -32603, message: 'Internal server error' } });
  }
}

export function createA2aMount(options: A2aMountOptions = {}): MountFactory {
  return (app) => new A2aGateway(app, options);
}
