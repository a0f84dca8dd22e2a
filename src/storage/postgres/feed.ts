// Cross-node room notifications for the PostgreSQL store (SPEC §11: events of a room reach
// every subscriber, on any node, in seq order, without loss or duplicates).
//
// • RoomFeed — one per node. Every room commit (and room creation) is followed by
//   `NOTIFY room_changes, '<room_id>:<version>:<last_seq>'` (or, when they fit, the commit's
//   rows: `commitPayload`) — sent right after it committed, batched (./notifier.ts), or with
//   PgStore's `notify: 'in-commit'` inside its transaction (then delivered in commit order even
//   across nodes). Either way only committed changes are announced. The feed LISTENs on a
//   dedicated connection (not the pool) and hands each `RoomChange` to `onChange`. When that
//   connection drops it reconnects (backoff up to 2 s) and calls `onResync`: notifications sent
//   while it was away are lost, so everything interested must re-read from the tables. Its
//   optional `poll` re-reads the followed rooms' versions every few seconds, for a notification
//   lost with a node that died right after committing (or given up after its retries).
//
//       const feed = new RoomFeed({ connectionString, onChange: (c) => rooms.remoteChange(c.roomId, c.version, …),
//                                   onResync: () => rooms.refreshAll() });
//       await feed.start(); … await feed.stop();
//
// The same connection LISTENs on `token_revocations` (`onTokensRevoked`): the hashes of tokens
// another node revoked, so sockets and sessions holding them close on every node at once
// (SPEC §3/§11); after a reconnect every token is checked in the store again at its next use.
// And on `sockets_closed` (`onSocketsClosed`): a participant's last WebSocket on another node
// closed, so a call it made here before the close does not keep it online past the 15 s grace.
// And on `a2a_task_cancels` (`onA2aTaskCanceled`): an A2A task was cancelled on some node, so
// the node following its round stops (./a2a-tasks.ts).
//
// Notifications may be lost, coalesced, or arrive for commits a node already read: the node
// (RoomRuntime's reload) turns them into an exact stream by reading what committed since its
// copy from the tables, in one snapshot (`PgStore.readChangesSince`), and ignoring versions it
// has seen.
import pg from 'pg';
import type { Message, RoomRecord } from '../../types.js';

export const ROOM_CHANNEL = 'room_changes';
/** Token hashes another node revoked (PgStore.putParticipant announces them with the write): a JSON array. */
export const TOKEN_CHANNEL = 'token_revocations';
/** A participant's last WebSocket on another node closed (`PgStore.announceSocketsClosed`). */
export const SOCKETS_CHANNEL = 'sockets_closed';
/** An A2A task was cancelled on some node (`PgA2aTasks.announceCancel`): the payload is its id. */
export const A2A_CANCEL_CHANNEL = 'a2a_task_cancels';

export interface RoomChange {
  roomId: string;
  version: number;
  lastSeq: number;
  /**
   * What the commit from `version - 1` to `version` wrote, when it fitted in the payload: its
   * message rows in commit order (each exactly the stored record) and, when the commit changed
   * the room's state, the new state (absent: the state is unchanged). A node at `version - 1`
   * takes the change from here without reading the tables; any other node reads as usual.
   */
  carried?: CarriedCommit;
  /**
   * The events the committing node published for this commit (its `ev`: an opaque list the room
   * runtime replays, runtime/event-plan.ts), when they fitted in the payload.
   */
  events?: unknown[];
}

export interface CarriedCommit {
  messages: Message[];
  room?: RoomRecord;
}

/** The longest NOTIFY payload PostgreSQL takes (bytes, default build): it refuses 8000 or more. */
export const MAX_PAYLOAD_BYTES = 7999;

/**
 * The `room_changes` payload of one commit: `<room_id>:<version>:<last_seq>`, or, when the
 * commit's rows (and its new state, if it changed one) fit in MAX_PAYLOAD_BYTES, a JSON object
 * `{"r":room_id,"v":version,"s":last_seq,"m":[records…],"st":state|null}` carrying them
 * (`records` and `state` are the JSON texts the commit stored, so the rows equal the table's).
 * `stateJson` undefined means the commit did not change the state.
 */
export function commitPayload(roomId: string, version: number, lastSeq: number, records: readonly string[], stateJson?: string, eventsJson?: string): string {
  const plain = `${roomId}:${version}:${lastSeq}`;
  const head = `{"r":${JSON.stringify(roomId)},"v":${version},"s":${lastSeq}`;
  const ev = eventsJson === undefined ? '' : `,"ev":${eventsJson}`;
  // Exact events matter more than saved reads: rows, state and events; else events alone (the
  // rows are read from the tables); else rows and state; else the plain form.
  let rowsChars = 0;
  for (const r of records) rowsChars += r.length + 1;
  const rows = (): string => `,"m":[${records.join(',')}],"st":${stateJson ?? 'null'}`;
  const candidates: Array<[number, () => string]> = [
    [rowsChars + (stateJson?.length ?? 4) + ev.length, () => `${head}${rows()}${ev}}`],
    ...(ev ? [[ev.length, () => `${head}${ev}}`] as [number, () => string]] : []),
    ...(ev ? [[rowsChars + (stateJson?.length ?? 4), () => `${head}${rows()}}`] as [number, () => string]] : []),
  ];
  for (const [chars, build] of candidates) {
    // Quick bound first: the text has at least as many bytes as UTF-16 units.
    if (head.length + chars > MAX_PAYLOAD_BYTES) continue;
    const text = build();
    if (text.length * 3 <= MAX_PAYLOAD_BYTES || Buffer.byteLength(text) <= MAX_PAYLOAD_BYTES) return text;
  }
  return plain;
}

/** Parses a `token_revocations` payload: a JSON array of hex hashes (anything else: none). */
export function parseTokenHashes(payload: string): string[] {
  try {
    const parsed: unknown = JSON.parse(payload);
    return Array.isArray(parsed) ? parsed.filter((h): h is string => typeof h === 'string' && /^[0-9a-f]{64}$/.test(h)) : [];
  } catch {
    return [];
  }
}

/** Parses a `sockets_closed` payload (anything else: undefined). */
export function parseSocketsClosed(payload: string): { participantId: string; at: number } | undefined {
  try {
    const parsed = JSON.parse(payload) as { p?: unknown; at?: unknown };
    return typeof parsed.p === 'string' && typeof parsed.at === 'number' && Number.isFinite(parsed.at) ? { participantId: parsed.p, at: parsed.at } : undefined;
  } catch {
    return undefined;
  }
}

/** Parses a `room_changes` payload; room ids may contain ':', the two numbers never do. */
export function parseRoomChange(payload: string): RoomChange | undefined {
  if (payload.startsWith('{"r":')) {
    try {
      const p = JSON.parse(payload) as { r: string; v: number; s: number; m?: Message[]; st?: RoomRecord | null; ev?: unknown };
      const change: RoomChange = { roomId: p.r, version: p.v, lastSeq: p.s };
      if (Array.isArray(p.m)) change.carried = p.st ? { messages: p.m, room: p.st } : { messages: p.m };
      if (Array.isArray(p.ev)) change.events = p.ev;
      return change;
    } catch {
      // not JSON after all: a room id that starts like one
    }
  }
  const match = /^(.*):(\d+):(\d+)$/s.exec(payload);
  if (!match) return undefined;
  return { roomId: match[1]!, version: Number(match[2]), lastSeq: Number(match[3]) };
}

export interface RoomFeedOptions {
  connectionString: string;
  onChange: (change: RoomChange) => void;
  /** After a reconnect: notifications may have been missed; re-read from the tables. */
  onResync?: () => void;
  /** Token hashes another node revoked (the `token_revocations` channel; listened to only when set). */
  onTokensRevoked?: (tokenHashes: string[]) => void;
  /** A participant's last WebSocket on another node closed (`sockets_closed`; listened to only when set). */
  onSocketsClosed?: (participantId: string, at: number) => void;
  /** An A2A task was cancelled on a node (`a2a_task_cancels`; listened to only when set). */
  onA2aTaskCanceled?: (taskId: string) => void;
  /** Told about connection errors the feed recovers from by reconnecting. */
  onError?: (err: Error) => void;
  /**
   * Safety net for notifications that never came (a node died between its commit and its
   * after-commit NOTIFY): every `everyMs`, reads the versions of `rooms()` and reports them
   * through onChange like notifications (followers ignore versions they have seen).
   */
  poll?: { pool: pg.Pool; everyMs: number; rooms: () => Iterable<string> };
  /** First reconnect delay (doubles up to maxReconnectDelayMs). */
  reconnectDelayMs?: number;
  maxReconnectDelayMs?: number;
}

export class RoomFeed {
  private client: pg.Client | undefined;
  private stopped = false;
  private timer: NodeJS.Timeout | undefined;
  private pollTimer: NodeJS.Timeout | undefined;
  private delay: number;
  private connects = 0;

  constructor(private readonly options: RoomFeedOptions) {
    this.delay = options.reconnectDelayMs ?? 100;
  }

  /** Resolves once LISTEN is in place (the first time); later drops reconnect by themselves. */
  async start(): Promise<void> {
    this.stopped = false;
    await this.connect();
    if (this.options.poll) this.schedulePoll();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    clearTimeout(this.pollTimer);
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => undefined);
  }

  /** The server process of the LISTEN connection (tests cut it with pg_terminate_backend). */
  get backendPid(): number | null {
    return (this.client as unknown as { processID?: number | null } | undefined)?.processID ?? null;
  }

  /** How many times LISTEN was set up (1 + reconnects). */
  get connectCount(): number {
    return this.connects;
  }

  private async connect(): Promise<void> {
    const client = new pg.Client({ connectionString: this.options.connectionString, application_name: 'agent-chatroom-feed' });
    client.on('notification', (msg) => {
      try {
        this.dispatch(msg);
      } catch (err) {
        // A listener's bug must not take the node down (this runs in the client's event handler).
        this.options.onError?.(err as Error);
      }
    });
    let lost = false;
    const onLost = (err?: Error): void => {
      if (lost) return;
      lost = true;
      if (err) this.options.onError?.(err);
      if (this.client === client) this.client = undefined;
      client.end().catch(() => undefined);
      this.scheduleReconnect();
    };
    client.on('error', onLost);
    client.on('end', () => onLost());
    try {
      await client.connect();
      await client.query(`LISTEN ${ROOM_CHANNEL}`);
      if (this.options.onTokensRevoked) await client.query(`LISTEN ${TOKEN_CHANNEL}`);
      if (this.options.onSocketsClosed) await client.query(`LISTEN ${SOCKETS_CHANNEL}`);
      if (this.options.onA2aTaskCanceled) await client.query(`LISTEN ${A2A_CANCEL_CHANNEL}`);
    } catch (err) {
      lost = true;
      client.end().catch(() => undefined);
      if (this.connects === 0) throw err; // the first start reports; later attempts retry
      this.options.onError?.(err as Error);
      this.scheduleReconnect();
      return;
    }
    if (this.stopped) {
      await client.end().catch(() => undefined);
      return;
    }
    this.client = client;
    this.connects++;
    this.delay = this.options.reconnectDelayMs ?? 100;
    if (this.connects > 1) this.options.onResync?.();
  }

  /** Hands one notification to the listener its channel names. */
  private dispatch(msg: pg.Notification): void {
    if (msg.payload === undefined) return;
    if (msg.channel === TOKEN_CHANNEL) {
      const hashes = parseTokenHashes(msg.payload);
      if (hashes.length > 0) this.options.onTokensRevoked?.(hashes);
      return;
    }
    if (msg.channel === SOCKETS_CHANNEL) {
      const closed = parseSocketsClosed(msg.payload);
      if (closed) this.options.onSocketsClosed?.(closed.participantId, closed.at);
      return;
    }
    if (msg.channel === A2A_CANCEL_CHANNEL) {
      if (msg.payload.length > 0 && msg.payload.length <= 200) this.options.onA2aTaskCanceled?.(msg.payload);
      return;
    }
    if (msg.channel !== ROOM_CHANNEL) return;
    const change = parseRoomChange(msg.payload);
    if (change) this.options.onChange(change);
  }

  private schedulePoll(): void {
    const poll = this.options.poll!;
    this.pollTimer = setTimeout(async () => {
      const rooms = [...poll.rooms()];
      if (rooms.length > 0) {
        try {
          const { rows } = await poll.pool.query<{ room_id: string; version: string; last_seq: string }>(
            'SELECT room_id, version, last_seq FROM rooms WHERE room_id = ANY($1::text[])',
            [rooms],
          );
          for (const r of rows) {
            if (!this.stopped) this.options.onChange({ roomId: r.room_id, version: Number(r.version), lastSeq: Number(r.last_seq) });
          }
        } catch (err) {
          this.options.onError?.(err as Error);
        }
      }
      if (!this.stopped) this.schedulePoll();
    }, poll.everyMs);
    this.pollTimer.unref?.();
  }

  private scheduleReconnect(): void {
    if (this.stopped) return;
    clearTimeout(this.timer);
    const delay = this.delay;
    this.delay = Math.min(this.delay * 2, this.options.maxReconnectDelayMs ?? 2_000);
    this.timer = setTimeout(() => void this.connect(), delay);
  }
}
