// One legacy MCP session (revisions 2025-03-26 … 2025-11-25, `Mcp-Session-Id`): the shared
// tool server (mcp-server.ts) plus the participant the session is bound to, its legacy resource
// subscriptions and, while it holds a server-to-client stream, the pushed turns (mcp-channel.ts).
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
// - Neither header nor binding: the `token` argument identifies that one call (SPEC §3).
import type { ServerContext } from '@modelcontextprotocol/server';
import type { App } from '../app.js';
import { AppError } from '../errors.js';
import type { RoomEvent } from '../protocol/events.js';
import type { Caller } from '../types.js';
import { CHANNEL_NOTIFICATION } from '../mcp/instructions.js';
import { ChannelPusher } from './mcp-channel.js';
import { changedUris, parseRoomUri, readRoomResource } from './mcp-resources.js';
import { argumentCaller, McpToolServer, protocolError } from './mcp-server.js';
import { tokenInResult } from './mcp-tools.js';

/** Tools that identify an unbound session. */
const BINDING_TOOLS = new Set(['register_agent', 'register_user', 'login']);

/** Resource subscriptions one session keeps at most (SPEC §10: bounded everywhere). */
const MAX_SUBSCRIPTIONS = 200;

export class McpSession extends McpToolServer {
  private boundId: string | null = null;
  private boundName: string | null = null;
  /** The token the session acts with (kept in memory only). */
  private token: string | null = null;
  /** A register/login of an unbound session is running. */
  private binding = false;
  private closed = false;
  /** Legacy `resources/subscribe`: the URIs, and the bus listener while there are any. */
  private readonly subscribed = new Set<string>();
  private stopEvents: (() => void) | null = null;
  private channel: ChannelPusher | null = null;
  /** Releases the presence hold of an agent listening for pushes (null: none held). */
  private releasePresence: (() => void) | null = null;

  constructor(
    app: App,
    /** Client address of the request that opened the session (per-address rate limits). */
    address: string | null = null,
    /** Told when the session becomes bound (the endpoint caps sessions per participant). */
    private readonly onBound: (participantId: string) => void = () => undefined,
    /** Whether a server-to-client stream is open now (pushes without one are dropped). */
    private readonly streamOpen: () => boolean = () => false,
    /** Declare `claude/channel` and push the bound agent's turns (SPEC §7.1). */
    private readonly channelWanted = true,
    /**
     * The client asked (`X-Chatroom-Channel: on`) that its open push stream keep the agent online:
     * an idle Claude Code makes no calls between turns. Other sessions follow SPEC §6 (calls).
     */
    private readonly listenerOnline = false,
  ) {
    super(app, address, { channel: channelWanted });
    this.server.setRequestHandler('resources/subscribe', async (request, ctx) => {
      await this.checkReadable(request.params.uri, ctx);
      if (!this.subscribed.has(request.params.uri) && this.subscribed.size >= MAX_SUBSCRIPTIONS) {
        throw protocolError(new AppError('validation_error', `At most ${MAX_SUBSCRIPTIONS} resource subscriptions per session`));
      }
      this.subscribed.add(request.params.uri);
      this.stopEvents ??= app.bus.subscribe((event) => this.onRoomEvent(event));
      return {};
    });
    this.server.setRequestHandler('resources/unsubscribe', (request) => {
      this.subscribed.delete(request.params.uri);
      if (this.subscribed.size === 0) this.stopListening();
      return {};
    });
  }

  /**
   * The client opened its server-to-client stream: an agent listening for pushes is connected,
   * online like an agent on a WebSocket (SPEC §6), and a turn it missed meanwhile is pushed now.
   */
  streamOpened(): void {
    if (!this.channel || this.closed) return;
    this.holdPresence();
    void this.channel.resume();
  }

  /** The last server-to-client stream closed: the agent goes offline as after a WebSocket. */
  streamsClosed(): void {
    this.releasePresence?.();
    this.releasePresence = null;
  }

  private holdPresence(): void {
    if (this.listenerOnline && this.boundId !== null && !this.releasePresence) this.releasePresence = this.app.presence.hold(this.boundId);
  }

  /** Name of the bound participant, or null. */
  get participant(): string | null {
    return this.boundName;
  }

  /** Id of the bound participant, or null. */
  get participantId(): string | null {
    return this.boundId;
  }

  /**
   * Closes the session. With `graceMs`, running calls are stopped first (a waiting
   * `wait_for_turn` answers `your_turn: null`) and get up to that long to send their answer.
   */
  async close(graceMs = 0): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.stopListening();
    this.channel?.stop();
    this.streamsClosed();
    await this.settle(graceMs);
    await this.server.close().catch(() => undefined);
  }

  protected requestLabel(ctx: ServerContext): string {
    return `mcp-${ctx.sessionId ?? 'nosession'}-${String(ctx.mcpReq.id)}`;
  }

  private async checkReadable(uri: string, ctx: ServerContext): Promise<void> {
    const caller = await this.resourceCaller(ctx, true);
    if (!parseRoomUri(uri)) throw protocolError(new AppError('not_found', 'Only chatroom://rooms/… resources can be subscribed'));
    try {
      await readRoomResource(this.app, caller!, uri);
    } catch (err) {
      throw protocolError(err);
    }
  }

  private onRoomEvent(event: RoomEvent): void {
    for (const uri of changedUris(event)) {
      if (this.subscribed.has(uri)) this.server.sendResourceUpdated({ uri }).catch(() => undefined);
    }
  }

  private stopListening(): void {
    this.stopEvents?.();
    this.stopEvents = null;
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
  protected async identify(toolName: string, headerToken: string | null, argumentToken: string | null): Promise<Caller | null> {
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
    if (this.token === null) return argumentCaller(this.app, argumentToken);
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
  protected override beforePublicCall(name: string, args: Record<string, unknown>): boolean {
    if (!BINDING_TOOLS.has(name)) return false;
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

  protected override releaseClaim(): void {
    this.binding = false;
  }

  protected override afterCall(name: string, data: unknown): void {
    const token = tokenInResult(data);
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
    if (!first) return;
    this.onBound(caller.id);
    // Pushed turns (SPEC §7.1) for an agent, on the session's standalone stream when it is open.
    if (this.channelWanted && caller.role === 'ai_agent' && !this.closed) {
      this.channel = new ChannelPusher(this.app, caller, (params) => {
        if (!this.streamOpen()) return false;
        this.server.notification({ method: CHANNEL_NOTIFICATION, params: { ...params } }).catch(() => undefined);
        return true;
      });
      this.channel.start();
      if (this.streamOpen()) this.streamOpened();
    }
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
