// A raw WebSocket test client: records every frame, waits for frames matching a predicate,
// and reports how the socket closed. No reconnects, no dedupe: it shows the wire as it is.
import WebSocket from 'ws';
import type { AuthOkFrame, ServerFrame } from '../../src/protocol/frames.js';

export interface Closed {
  code: number;
  reason: string;
}

/** Event frames with loosely typed data, for terse assertions. */
export interface AnyEventFrame {
  type: 'event';
  event: string;
  room_id: string;
  data: any;
}

export function wsUrl(httpUrl: string): string {
  return `${httpUrl.replace(/^http/, 'ws')}/ws`;
}

export class TestSocket {
  readonly frames: ServerFrame[] = [];
  readonly closed: Promise<Closed>;
  private waiters: Array<{ pred: (f: ServerFrame) => boolean; resolve: (f: ServerFrame) => void }> = [];
  private readonly eventListeners: Array<(frame: AnyEventFrame) => void> = [];
  private nextId = 1;

  private constructor(readonly ws: WebSocket) {
    this.closed = new Promise((resolve) => {
      ws.on('close', (code, reason) => resolve({ code, reason: reason.toString('utf8') }));
    });
    ws.on('error', () => undefined);
    ws.on('message', (data) => {
      const frame = JSON.parse(data.toString()) as ServerFrame;
      this.frames.push(frame);
      if (frame.type === 'event') for (const listener of this.eventListeners) listener(frame as AnyEventFrame);
      this.waiters = this.waiters.filter((w) => {
        if (!w.pred(frame)) return true;
        w.resolve(frame);
        return false;
      });
    });
  }

  /**
   * `autoPong: false` leaves server pings unanswered (a peer that went silent);
   * `perMessageDeflate` is what the client offers (ws offers it by default).
   */
  static open(url: string, options: { origin?: string; autoPong?: boolean; perMessageDeflate?: boolean } = {}): Promise<TestSocket> {
    const ws = new WebSocket(url, {
      headers: options.origin ? { origin: options.origin } : {},
      autoPong: options.autoPong ?? true,
      perMessageDeflate: options.perMessageDeflate ?? true,
    });
    return new Promise((resolve, reject) => {
      ws.once('open', () => resolve(new TestSocket(ws)));
      ws.once('unexpected-response', (_req, res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => reject(Object.assign(new Error(`HTTP ${res.statusCode}: ${body}`), { status: res.statusCode, body })));
      });
      ws.once('error', reject);
    });
  }

  /** Opens and authenticates; resolves with auth_ok. */
  static async connect(url: string, token: string, options: { autoPong?: boolean } = {}): Promise<TestSocket> {
    const socket = await TestSocket.open(url, options);
    await socket.auth(token);
    return socket;
  }

  send(frame: unknown): void {
    this.ws.send(typeof frame === 'string' ? frame : JSON.stringify(frame));
  }

  async auth(token: string): Promise<AuthOkFrame> {
    this.send({ type: 'auth', token });
    return (await this.waitFor((f) => f.type === 'auth_ok')) as AuthOkFrame;
  }

  /** The first frame (already received or still to come) matching `pred`. */
  waitFor<F = ServerFrame>(pred: (f: ServerFrame) => boolean, timeoutMs = 5000, label = 'frame'): Promise<F> {
    const found = this.frames.find(pred);
    if (found) return Promise.resolve(found as F);
    return new Promise((resolve, reject) => {
      const waiter = { pred, resolve: (f: ServerFrame) => (clearTimeout(timer), resolve(f as F)) };
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== waiter);
        reject(new Error(`timed out waiting for ${label}; got ${this.frames.map(describe).join(', ')}`));
      }, timeoutMs);
      this.waiters.push(waiter);
    });
  }

  waitForEvent(event: string, pred: (data: any, roomId: string) => boolean = () => true, timeoutMs = 5000) {
    return this.waitFor<AnyEventFrame>(
      (f) => f.type === 'event' && f.event === event && pred(f.data, f.room_id),
      timeoutMs,
      `event ${event}`,
    );
  }

  /** The nth (1-based) event named `event` that matches `pred`, received or still to come. */
  async nthEvent(event: string, n: number, pred: (data: any, roomId: string) => boolean = () => true, timeoutMs = 5000): Promise<AnyEventFrame> {
    const matching = () => this.events().filter((f) => f.event === event && pred(f.data, f.room_id));
    await this.waitFor(() => matching().length >= n, timeoutMs, `event ${event} #${n}`);
    return matching()[n - 1]!;
  }

  /** Like waitForEvent, but only among frames received from index `from` on (see `mark`). */
  waitForEventFrom(from: number, event: string, pred: (data: any, roomId: string) => boolean = () => true, timeoutMs = 5000) {
    return this.waitFor<AnyEventFrame>(
      (f) => f.type === 'event' && f.event === event && pred(f.data, f.room_id) && this.frames.indexOf(f) >= from,
      timeoutMs,
      `event ${event} after frame ${from}`,
    );
  }

  /** The index the next frame will get: a mark for waitForEventFrom and `since`. */
  mark(): number {
    return this.frames.length;
  }

  /** Frames received from index `from` on. */
  since(from: number): ServerFrame[] {
    return this.frames.slice(from);
  }

  /**
   * Sends a ping and waits for its pong: every frame the server wrote to this socket before it
   * read the ping has arrived by then (one ordered connection), so "nothing more came" can be
   * checked without sleeping.
   */
  async barrier(): Promise<void> {
    const from = this.mark();
    this.send({ type: 'ping' });
    await this.waitFor((f) => f.type === 'pong' && this.frames.indexOf(f) >= from, 5000, 'pong');
  }

  /** Calls `listener` with each event frame as it arrives (an agent that acts on its turns). */
  onEvent(listener: (frame: AnyEventFrame) => void): void {
    this.eventListeners.push(listener);
  }

  /** Sends a call frame and resolves with its result frame (a long wait_for_turn: a longer `timeoutMs`). */
  async call(tool: string, args: unknown = {}, timeoutMs = 10_000): Promise<Extract<ServerFrame, { type: 'result' }>> {
    const id = `t${this.nextId++}`;
    this.send({ type: 'call', id, tool, args });
    return this.waitFor((f) => f.type === 'result' && f.id === id, timeoutMs, `result of ${tool}`);
  }

  /** Calls a tool and resolves with its data; a refusal rejects with an error carrying `code`. */
  async ok<T = any>(tool: string, args: unknown = {}): Promise<T> {
    const result = (await this.call(tool, args)) as { ok: boolean; data?: T; error?: { code: string; message: string } };
    if (result.ok) return result.data as T;
    throw Object.assign(new Error(`${tool}: ${result.error!.code}: ${result.error!.message}`), { code: result.error!.code });
  }

  events(roomId?: string): AnyEventFrame[] {
    return this.frames.filter((f) => f.type === 'event' && (!roomId || f.room_id === roomId)) as AnyEventFrame[];
  }

  messageSeqs(roomId: string): number[] {
    return this.events(roomId)
      .filter((f) => f.event === 'message_new')
      .map((f) => (f.data as { message: { seq: number } }).message.seq);
  }

  /** How the socket closed, once the server closes it; fails if it is still open after `timeoutMs`. */
  closedWithin(timeoutMs: number): Promise<Closed> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the socket is still open after ${timeoutMs} ms`)), timeoutMs);
      void this.closed.then((closed) => {
        clearTimeout(timer);
        resolve(closed);
      });
    });
  }

  close(): Promise<Closed> {
    if (this.ws.readyState === WebSocket.OPEN || this.ws.readyState === WebSocket.CONNECTING) this.ws.close();
    return this.closed;
  }

  terminate(): void {
    this.ws.terminate();
  }
}

function describe(f: ServerFrame): string {
  return f.type === 'event' ? `event:${f.event}` : f.type;
}

/**
 * Resolves when `check` returns true, polling; for outcomes that have no frame or event of their
 * own (a page's DOM, a metric, a file). A check that throws counts as not yet; after `timeoutMs`
 * it fails naming `label` and the last error. The one polling helper of the tests (besides
 * vitest's `expect.poll`).
 */
export async function eventually(check: () => boolean | Promise<boolean>, timeoutMs = 5000, label = 'condition'): Promise<void> {
  const end = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < end) {
    try {
      if (await check()) return;
    } catch (err) {
      last = err;
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`timed out waiting for ${label}${last ? `: ${String(last)}` : ''}`);
}

/**
 * Checks `check` over and over until the wall clock reaches `until` (ms since the epoch), failing
 * at the first check that does not hold: "stays so for this long", the counterpart of
 * `eventually` for a state that must last (presence inside its window, …).
 */
export async function holdsUntil(check: () => boolean | Promise<boolean>, until: number, label = 'condition'): Promise<void> {
  do {
    if (!(await check())) throw new Error(`${label} stopped holding ${until - Date.now()} ms early`);
    await new Promise((r) => setTimeout(r, 100));
  } while (Date.now() < until);
}
