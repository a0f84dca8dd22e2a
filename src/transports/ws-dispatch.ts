// Frames and dispatch of the WebSocket hub (SPEC §8): each client frame parsed and validated,
// `auth` handed to the hub, `subscribe`/`unsubscribe` to the subscriptions, `call` served from
// the same tool registry as REST, `ping` answered; frames that came behind an `auth` still
// being answered wait for `auth_ok`.
import type { RawData } from 'ws';
import type { App } from '../app.js';
import { AppError, toWireError } from '../errors.js';
import type { CallFrame } from '../protocol/frames.js';
import { CLOSE } from '../protocol/frames.js';
import type { Caller } from '../types.js';
import { parseClientFrame } from './ws-frames.js';
import type { Session } from './ws-session.js';
import { MAX_RATE_LIMIT_STRIKES, type WsSubscriptions } from './ws-subscriptions.js';
import { rawText } from './ws-wire.js';

/** Frames a client may send behind its `auth` before `auth_ok` (kept until then). */
const MAX_EARLY_FRAMES = 64;

export class WsDispatch {
  constructor(
    private readonly app: App,
    private readonly subscriptions: WsSubscriptions,
    /** The token checked out: the hub opens the session (subscriptions, `auth_ok`). */
    private readonly authenticate: (session: Session, caller: Caller) => void,
  ) {}

  onFrame(session: Session, data: RawData, isBinary: boolean): void {
    session.alive = true;
    if (session.early) {
      // Behind an `auth` still being answered: handled right after auth_ok, in order.
      if (session.early.length >= MAX_EARLY_FRAMES) return session.close(CLOSE.POLICY_VIOLATION, `at most ${MAX_EARLY_FRAMES} frames before auth_ok`);
      session.early.push({ data, isBinary });
      return;
    }
    const text = isBinary ? '' : rawText(data);
    const parsed = parseClientFrame(text);
    if (session.state === 'awaiting_auth') {
      if (!parsed.ok || parsed.frame.type !== 'auth') return session.closeUnauthorized('first frame must be {"type":"auth","token":…}');
      session.early = [];
      const token = parsed.frame.token;
      if (!this.app.participants.isShared) {
        const caller = this.app.participants.authenticate(token);
        if (!caller) return session.closeUnauthorized('unknown or revoked token');
        return this.authenticate(session, caller);
      }
      // A shared store (several nodes): the token may come from another node, checked there first.
      this.settle(session, this.app.participants.prime(token).then(() => {
        const caller = this.app.participants.authenticate(token);
        if (!caller) return session.closeUnauthorized('unknown or revoked token');
        if (session.state === 'awaiting_auth') this.authenticate(session, caller);
      }), () => session.closeUnauthorized('could not check the token'));
      return;
    }
    if (session.state !== 'open') return;
    if (!parsed.ok) {
      const error = toWireError(parsed.error);
      if (parsed.callId !== undefined) session.send({ type: 'result', id: parsed.callId, ok: false, error });
      else session.send({ type: 'error', error });
      return;
    }
    const frame = parsed.frame;
    switch (frame.type) {
      case 'auth':
        session.send({ type: 'error', error: { code: 'validation_error', message: 'Already authenticated' } });
        return;
      case 'subscribe':
        this.settle(session, this.subscriptions.checkedSubscribe(session, frame.room_id, frame.after_seq), (error) => {
          // The subscription is in an unknown state (maybe mid-replay): drop it, so the client
          // sees an error for the room and can subscribe again instead of waiting forever.
          this.subscriptions.removeSub(session, frame.room_id);
          session.send({ type: 'error', error, room_id: frame.room_id });
        });
        return;
      case 'unsubscribe':
        this.subscriptions.unsubscribe(session, frame.room_id);
        return;
      case 'call':
        this.settle(session, this.call(session, frame), (error) => session.send({ type: 'result', id: frame.id, ok: false, error }));
        return;
      case 'ping':
        session.send({ type: 'pong', server_time: new Date(this.app.now()).toISOString() });
        return;
      default: {
        const never: never = frame;
        throw new Error(`unhandled frame ${JSON.stringify(never)}`);
      }
    }
  }

  /**
   * Runs an async frame handler to the end: a failure it did not answer itself (a store read
   * that threw, say) is logged and answered through `answer`, never left as an unhandled
   * rejection that would take the process down.
   */
  settle(session: Session, work: Promise<void>, answer: (error: ReturnType<typeof toWireError>) => void): void {
    work.catch((err: unknown) => {
      this.app.logger.error({ err, session: session.id }, 'websocket frame handler failed');
      try {
        answer(toWireError(err));
      } catch (sendErr) {
        this.app.logger.error({ err: sendErr, session: session.id }, 'websocket error answer failed');
      }
    });
  }

  // ── calls ──

  private async call(session: Session, frame: CallFrame): Promise<void> {
    // Only a blocking call needs a signal; every call is counted (a revoked socket closes once
    // its calls are answered).
    const controller = this.app.registry.waits(frame.tool) ? new AbortController() : { abort: () => undefined };
    session.calls.add(controller);
    const requestId = `ws-${session.id}-${String(frame.id)}`;
    try {
      // Several nodes: a revocation whose announcement never reached this node is caught here
      // (checked in the store at most every few seconds); the socket then closes like any revoked one.
      const participants = this.app.participants;
      const tokenHash = session.caller?.tokenHash;
      if (participants.isShared && tokenHash && !(await participants.stillValid(tokenHash))) throw new AppError('unauthorized', 'Unknown or revoked token');
      const data = await this.app.registry.call(frame.tool, frame.args ?? {}, {
        caller: session.caller,
        transport: 'ws',
        address: session.address,
        acceptLanguage: session.acceptLanguage,
        requestId,
        ...(controller instanceof AbortController ? { signal: controller.signal } : {}),
      });
      session.rateLimitStrikes = 0;
      session.send({ type: 'result', id: frame.id, ok: true, data: data ?? null });
    } catch (err) {
      const error = toWireError(err);
      if (error.code === 'rate_limited' && ++session.rateLimitStrikes >= MAX_RATE_LIMIT_STRIKES) {
        session.send({ type: 'result', id: frame.id, ok: false, error });
        return session.close(CLOSE.POLICY_VIOLATION, 'calls kept coming after rate_limited');
      }
      if (error.code === 'internal_error') this.app.logger.error({ err, requestId, tool: frame.tool }, 'websocket call failed');
      session.send({ type: 'result', id: frame.id, ok: false, error });
    } finally {
      session.calls.delete(controller);
      if (session.state === 'revoked' && session.calls.size === 0) session.closeUnauthorized('token revoked');
    }
  }
}
