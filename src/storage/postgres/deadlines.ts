// Turn deadlines stored in PostgreSQL, fired once, on some live node (SPEC §11).
//
// The `deadlines` table (migrations/001_initial.sql) holds one row per room whose running turn has a
// timer. PgStore keeps it in step with the room state inside each commit (from
// `turnDeadlineOf(room)`), so there is nothing to call when a turn starts, is extended or ends.
//
// Firing: every node runs a DeadlineWatcher (src/app.ts). It polls (every 500 ms) for rows due by
// more than a grace (1 s: the node holding the room fires it by its own timer first, so the
// watcher only picks up deadlines no live node holds: the node that held the room died, and the
// notification that would have made another node load it was lost) and claims them with a
// short lease (`claimDueDeadlines`: UPDATE … FOR UPDATE SKIP LOCKED … RETURNING), so each due
// deadline goes to one node at a time. The node then loads the room (`Rooms.fireDue`), whose
// runtime arms its timer from the stored state and fires the ordinary `timeout` command (which
// does nothing if the turn moved on); that commit replaces or deletes the row. If the node dies
// after claiming, the lease runs out (2 s there) and another node claims it. A claim is no lock
// on the room: the firing commit still goes through `expectedVersion`, so a racing commit from
// elsewhere makes it stale, never double. `completeDeadline` removes a row by its key, for a
// caller that finds firing it a no-op.
//
// The database's clock (now()) decides which rows are due for the poll; the node that loads the
// room fires the timeout by its own timer.
//
//   const watcher = new DeadlineWatcher(store.connectionPool, nodeId, (due) => rooms.fireDue(due.roomId),
//     { graceMs: 1000, leaseMs: 2000 });
//   watcher.start(); … await watcher.stop();
import type pg from 'pg';
import type { RoomRecord } from '../../types.js';

export interface TurnDeadline {
  /** ISO 8601 UTC. */
  deadline: string;
  /** Names this deadline instance: round, queue position, agent, deadline. */
  turnKey: string;
}

/** The running turn's deadline, or null when no timer runs (no round, ended, paused, no turn). */
export function turnDeadlineOf(room: RoomRecord): TurnDeadline | null {
  const round = room.current_round;
  if (!round || round.completed || !round.turn?.deadline) return null;
  const at = new Date(round.turn.deadline);
  if (Number.isNaN(at.getTime())) return null;
  const deadline = at.toISOString();
  return { deadline, turnKey: `${round.round_id}/${round.current_agent_index}/${round.turn.agent}/${deadline}`.replaceAll('\0', '') };
}

export interface DueDeadline {
  roomId: string;
  deadline: Date;
  turnKey: string;
}

export interface ClaimOptions {
  /** How long the claim keeps other nodes away (default 3,000 ms). */
  leaseMs?: number;
  /** At most this many per call (default 100). */
  limit?: number;
  /**
   * Only deadlines passed for at least this long (default 0): the node holding the room fires
   * it by its own timer at the deadline, so a watcher that waits a little only picks up the
   * deadlines no live node holds.
   */
  graceMs?: number;
}

/** Claims up to `limit` due (by `graceMs`), unclaimed (or lease-expired) deadlines for `nodeId`, oldest first. */
export async function claimDueDeadlines(pool: pg.Pool, nodeId: string, options: ClaimOptions = {}): Promise<DueDeadline[]> {
  // The due/lease conditions stand in the outer WHERE too: a node whose subquery picked a row
  // just before another node claimed it re-checks them on the claimed row and skips it.
  const { rows } = await pool.query<{ room_id: string; deadline: Date; turn_key: string }>(
    `UPDATE deadlines SET claimed_by = $1, lease_until = now() + $2 * interval '1 millisecond'
     WHERE room_id IN (
       SELECT room_id FROM deadlines
       WHERE deadline <= now() - $4 * interval '1 millisecond' AND (lease_until IS NULL OR lease_until <= now())
       ORDER BY deadline LIMIT $3
       FOR UPDATE SKIP LOCKED
     )
     AND deadline <= now() - $4 * interval '1 millisecond' AND (lease_until IS NULL OR lease_until <= now())
     RETURNING room_id, deadline, turn_key`,
    [nodeId, options.leaseMs ?? 3_000, options.limit ?? 100, options.graceMs ?? 0],
  );
  return rows
    .map((r) => ({ roomId: r.room_id, deadline: r.deadline, turnKey: r.turn_key }))
    .sort((a, b) => a.deadline.getTime() - b.deadline.getTime());
}

/** Removes a room's deadline if it still has this turn key (a fire that changed nothing). */
export async function completeDeadline(pool: pg.Pool, roomId: string, turnKey: string): Promise<boolean> {
  const { rowCount } = await pool.query('DELETE FROM deadlines WHERE room_id = $1 AND turn_key = $2', [roomId, turnKey]);
  return (rowCount ?? 0) > 0;
}

/** The room's stored deadline (tests, admin views). */
export async function storedDeadline(pool: pg.Pool, roomId: string): Promise<{ deadline: Date; turnKey: string } | undefined> {
  const { rows } = await pool.query<{ deadline: Date; turn_key: string }>('SELECT deadline, turn_key FROM deadlines WHERE room_id = $1', [roomId]);
  return rows[0] && { deadline: rows[0].deadline, turnKey: rows[0].turn_key };
}

export interface DeadlineWatcherOptions extends ClaimOptions {
  /** How often to look for due deadlines (default 500 ms). */
  pollMs?: number;
  /** Told when polling or a handler fails; polling goes on. */
  onError?: (err: Error) => void;
}

export class DeadlineWatcher {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = true;

  constructor(
    private readonly pool: pg.Pool,
    private readonly nodeId: string,
    private readonly onDue: (due: DueDeadline) => Promise<void>,
    private readonly options: DeadlineWatcherOptions = {},
  ) {}

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.schedule(0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }

  /** Polls now (e.g. after this node set a deadline that is already due). */
  poke(): void {
    if (!this.stopped && !this.running) this.schedule(0);
  }

  private schedule(ms: number): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.running = this.poll().finally(() => {
        this.running = undefined;
        if (!this.stopped) this.schedule(this.options.pollMs ?? 500);
      });
    }, ms);
  }

  private async poll(): Promise<void> {
    let due: DueDeadline[];
    try {
      due = await claimDueDeadlines(this.pool, this.nodeId, this.options);
    } catch (err) {
      this.options.onError?.(err as Error);
      return;
    }
    // Different rooms fire independently; one slow room does not hold up the others.
    await Promise.all(
      due.map((d) =>
        this.onDue(d).catch((err: unknown) => {
          this.options.onError?.(err as Error);
        }),
      ),
    );
  }
}
