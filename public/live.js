// @ts-check
// The page's WebSocket to /ws: authenticates, reconnects by itself with backoff, and on every
// (re)connect re-subscribes the rooms being watched from the last seq they saw, so nothing is
// missed. Dedupe is the room view's job (by message_id / seq).

const BASE_DELAY_MS = 500;
const MAX_DELAY_MS = 10_000;
const PING_EVERY_MS = 20_000;
/** No frame at all for this long (our pings get pongs) → the connection is dead. */
const SILENCE_LIMIT_MS = 45_000;

export class LiveConnection {
  /**
   * @param {object} opts
   * @param {string} opts.token
   * @param {(frame: object) => void} opts.onEvent   room events ({type:'event', …})
   * @param {(status: object) => void} opts.onStatus  { state: 'connecting'|'open'|'reconnecting'|'stopped', attempt, retryAt }
   * @param {(authOk: object) => void} opts.onAuth    every successful auth (first and after reconnects)
   * @param {(reason: string) => void} opts.onFatal   the token was refused (4401): sign out
   * @param {(roomId: string) => void} [opts.onUnsubscribed]  the server ended a room's subscription (removed, or left elsewhere)
   */
  constructor({ token, onEvent, onStatus, onAuth, onFatal, onUnsubscribed }) {
    this.token = token;
    this.onEvent = onEvent;
    this.onUnsubscribed = onUnsubscribed;
    this.onStatus = onStatus;
    this.onAuth = onAuth;
    this.onFatal = onFatal;
    this.ws = null;
    this.state = 'stopped';
    this.attempt = 0;
    this.retryTimer = null;
    this.pingTimer = null;
    this.lastFrameAt = 0;
    /** Server clock minus local clock (ms), from auth_ok and pongs; for countdowns. */
    this.clockOffset = 0;
    /** When the last auth or ping frame left (for the clock estimate). */
    this.sentAt = 0;
    /** room_id → () => after_seq (number) or null when the room has no history yet. */
    this.watched = new Map();
    this.everConnected = false;
    this.onOnline = () => this.reconnectNow();
    // The browser knows the network is gone: drop the socket now instead of waiting for the
    // silence limit, so the page stops countdowns and presence at once.
    this.onOffline = () => {
      const ws = this.ws;
      if (!ws || this.state === 'stopped') return;
      this.ws = null;
      ws.onclose = null;
      ws.onmessage = null;
      ws.close();
      clearInterval(this.pingTimer);
      clearTimeout(this.retryTimer);
      this.scheduleRetry();
    };
  }

  start() {
    if (this.state !== 'stopped') return;
    window.addEventListener('online', this.onOnline);
    window.addEventListener('offline', this.onOffline);
    this.connect();
  }

  stop() {
    this.state = 'stopped';
    window.removeEventListener('online', this.onOnline);
    window.removeEventListener('offline', this.onOffline);
    clearTimeout(this.retryTimer);
    clearInterval(this.pingTimer);
    if (this.ws) {
      const ws = this.ws;
      this.ws = null;
      ws.onclose = null;
      ws.close(1000, 'bye');
    }
    this.emitStatus();
  }

  get isOpen() {
    return this.state === 'open';
  }

  /** Server time now (ms since epoch). */
  serverNow() {
    return Date.now() + this.clockOffset;
  }

  /** Keeps a room subscribed across reconnects, resuming after `afterSeq()`. */
  watch(roomId, afterSeq) {
    this.watched.set(roomId, afterSeq);
  }

  unwatch(roomId) {
    this.watched.delete(roomId);
  }

  /** Asks for every message after `afterSeq`, then live events (no-op while disconnected). */
  subscribe(roomId, afterSeq) {
    const frame = { type: 'subscribe', room_id: roomId };
    if (typeof afterSeq === 'number' && afterSeq >= 0) frame.after_seq = afterSeq;
    return this.send(frame);
  }

  send(frame) {
    if (!this.ws || this.ws.readyState !== WebSocket.OPEN || this.state !== 'open') return false;
    this.ws.send(JSON.stringify(frame));
    return true;
  }

  /** Skips the remaining backoff wait. */
  reconnectNow() {
    if (this.state !== 'reconnecting') return;
    clearTimeout(this.retryTimer);
    this.connect();
  }

  // ── internals ──

  connect() {
    clearTimeout(this.retryTimer);
    this.state = this.everConnected ? 'reconnecting' : 'connecting';
    this.emitStatus();
    const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
    let ws;
    try {
      ws = new WebSocket(`${scheme}//${location.host}/ws`);
    } catch {
      this.scheduleRetry();
      return;
    }
    this.ws = ws;
    ws.onopen = () => {
      this.lastFrameAt = Date.now();
      this.sentAt = Date.now();
      ws.send(JSON.stringify({ type: 'auth', token: this.token }));
    };
    ws.onmessage = (e) => {
      if (ws !== this.ws) return;
      this.lastFrameAt = Date.now();
      let frame;
      try {
        frame = JSON.parse(e.data);
      } catch {
        return;
      }
      this.handleFrame(frame);
    };
    ws.onerror = () => {
      // onclose follows and schedules the retry
    };
    ws.onclose = (e) => {
      if (ws !== this.ws) return;
      this.ws = null;
      clearInterval(this.pingTimer);
      if (this.state === 'stopped') return;
      if (e.code === 4401) {
        this.state = 'stopped';
        this.emitStatus();
        this.onFatal?.('unauthorized');
        return;
      }
      this.scheduleRetry();
    };
  }

  handleFrame(frame) {
    switch (frame.type) {
      case 'auth_ok': {
        this.state = 'open';
        this.attempt = 0;
        this.everConnected = true;
        this.syncClock(frame.server_time);
        this.startPings();
        // Already subscribed to every room live; resume watched rooms from their last seq.
        for (const [roomId, afterSeq] of this.watched) {
          const seq = afterSeq();
          if (typeof seq === 'number') this.subscribe(roomId, seq);
        }
        this.emitStatus();
        this.onAuth?.(frame);
        break;
      }
      case 'event':
        this.onEvent?.(frame);
        break;
      case 'pong':
        this.syncClock(frame.server_time);
        break;
      case 'unsubscribed':
        this.onUnsubscribed?.(frame.room_id);
        break;
      default:
        // subscribed / result / error: nothing to do for the page
        break;
    }
  }

  /** Server clock minus ours, taking the server's time as read halfway through the round trip. */
  syncClock(serverTime) {
    const t = Date.parse(serverTime || '');
    if (Number.isNaN(t)) return;
    const now = Date.now();
    const sent = this.sentAt && now - this.sentAt < 10_000 ? this.sentAt : now;
    this.clockOffset = t - (sent + now) / 2;
  }

  startPings() {
    clearInterval(this.pingTimer);
    this.pingTimer = setInterval(() => {
      if (!this.ws) return;
      if (Date.now() - this.lastFrameAt > SILENCE_LIMIT_MS) {
        // Half-open connection: drop it and reconnect.
        const ws = this.ws;
        this.ws = null;
        ws.onclose = null;
        ws.close();
        clearInterval(this.pingTimer);
        this.scheduleRetry();
        return;
      }
      if (this.send({ type: 'ping' })) this.sentAt = Date.now();
    }, PING_EVERY_MS);
  }

  scheduleRetry() {
    const exp = Math.min(MAX_DELAY_MS, BASE_DELAY_MS * 2 ** this.attempt);
    const delay = Math.round(exp * (0.75 + Math.random() * 0.5));
    this.attempt += 1;
    this.state = 'reconnecting';
    this.retryAt = Date.now() + delay;
    this.emitStatus();
    this.retryTimer = setTimeout(() => this.connect(), delay);
  }

  emitStatus() {
    this.onStatus?.({ state: this.state, attempt: this.attempt, retryAt: this.retryAt, everConnected: this.everConnected });
  }
}
