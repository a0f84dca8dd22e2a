// Node heartbeats and the presence each node serves (SPEC §11: presence from heartbeats stored
// per node; a dead node's sockets go offline after their grace period).
//
// Each node knows the presence of its own clients (src/identity/presence.ts). This keeps, in
// the tables `chatroom_nodes` and `chatroom_node_presence` (migrations/001_initial.sql):
// - the node's row, whose `heartbeat_at` the node refreshes every `heartbeatMs` (DB clock);
// - one row per participant the node counts as online (`setOnline`).
//
// `setOnline` records the change in the node's own set at once (that set is the truth) and marks
// the participant for writing. One writer at a time brings the marked participants' rows in line
// with the set, in one statement, so each participant's row ends as its last change left it
// whatever the order of quick connect/disconnect changes. A write that fails is not dropped: its
// participants stay marked and the writer tries again after a pause (100 ms doubling to 2 s),
// until it succeeds or the node stops.
//
// Another node's rows tell two things:
// - `onlineElsewhere(id)`: a live node (fresh heartbeat) still serves the participant, so an
//   offline change on this node must not be stored (the client moved to another node). It first
//   waits until this node's own row for the participant is written (two nodes losing the same
//   participant at once: the later check sees the other's row gone), and when the query fails it
//   asks again after a pause instead of failing: the offline change waiting on it is never lost.
// - `sweep()`: nodes whose heartbeat is older than `deadAfterMs` (the socket grace period) are
//   dead. The first live node to delete such a node's row (one atomic DELETE … RETURNING, so
//   exactly one node does it) gets back the participants that node served and no live node
//   serves, and takes them offline. A node killed with its sockets open thus has its
//   participants offline about `deadAfterMs` + `heartbeatMs` after its last heartbeat.
//
// A node that stops (even cleanly) simply stops beating: its clients' sockets closed with it,
// so they too go offline through the sweep after the grace period. A node that was declared
// dead while alive (a pause longer than deadAfterMs) finds its row gone at the next beat and
// writes it and its participants again.
import type pg from 'pg';
import { Pause, retryDelayMs } from './pause.js';

export interface NodePresenceOptions {
  pool: pg.Pool;
  nodeId: string;
  /** How often the node refreshes its heartbeat and sweeps for dead nodes (default 2,000 ms). */
  heartbeatMs?: number;
  /** A heartbeat older than this means the node is dead (default: the 15 s socket grace). */
  deadAfterMs: number;
  onError?: (err: Error) => void;
}

export class NodePresence {
  /** The participants this node counts as online: the truth its rows follow. */
  private readonly online = new Set<string>();
  /** Participants whose row may differ from `online` (changed since, or their write failed). */
  private readonly unwritten = new Set<string>();
  /** Those in the write running now. */
  private writing = new Set<string>();
  private writer: Promise<void> | undefined;
  /** Told when a write ends (those waiting for their participant's row). */
  private readonly written = new Set<() => void>();
  private readonly pause = new Pause();
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private orphaned: (participantIds: string[]) => void = () => undefined;

  constructor(private readonly options: NodePresenceOptions) {}

  get nodeId(): string {
    return this.options.nodeId;
  }

  /** Participants a dead node served that no live node serves: take them offline. */
  onOrphaned(handler: (participantIds: string[]) => void): void {
    this.orphaned = handler;
  }

  /** Registers the node (its row) and starts beating and sweeping. */
  async start(): Promise<void> {
    await this.options.pool.query('INSERT INTO chatroom_nodes (node_id) VALUES ($1) ON CONFLICT (node_id) DO UPDATE SET heartbeat_at = now()', [
      this.options.nodeId,
    ]);
    this.schedule();
  }

  /** Stops beating and retrying (the rows stay: other nodes take this node's participants offline). */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.pause.wake();
    await this.writer;
    this.tellWritten();
  }

  /** This node's presence of a participant changed. */
  setOnline(participantId: string, online: boolean): void {
    if (online) this.online.add(participantId);
    else this.online.delete(participantId);
    this.unwritten.add(participantId);
    this.writer ??= this.writeRows().finally(() => {
      this.writer = undefined;
    });
  }

  /**
   * Whether a live node other than this one counts the participant as online. Asked after this
   * node's own row for the participant is written; a failed query is asked again after a pause.
   * Resolves false once the node is stopped (it stores nothing more).
   */
  async onlineElsewhere(participantId: string): Promise<boolean> {
    for (let failures = 0; ; ) {
      while (!this.stopped && (this.unwritten.has(participantId) || this.writing.has(participantId))) {
        await new Promise<void>((resolve) => this.written.add(resolve));
      }
      if (this.stopped) return false;
      try {
        const { rowCount } = await this.options.pool.query(
          `SELECT 1 FROM chatroom_node_presence p JOIN chatroom_nodes n USING (node_id)
           WHERE p.participant_id = $1 AND p.node_id <> $2 AND n.heartbeat_at > now() - $3 * interval '1 millisecond'
           LIMIT 1`,
          [participantId, this.options.nodeId, this.options.deadAfterMs],
        );
        return (rowCount ?? 0) > 0;
      } catch (err) {
        this.options.onError?.(err as Error);
        await this.pause.wait(retryDelayMs(++failures));
      }
    }
  }

  /**
   * Refreshes the heartbeat (re-registering if another node declared this one dead), then
   * claims dead nodes and reports their orphaned participants. Resolves when done.
   */
  async beat(): Promise<void> {
    const { pool, nodeId, deadAfterMs } = this.options;
    const { rowCount } = await pool.query('UPDATE chatroom_nodes SET heartbeat_at = now() WHERE node_id = $1', [nodeId]);
    if (rowCount === 0) {
      // Declared dead during a pause: come back with everything this node serves.
      await pool.query('INSERT INTO chatroom_nodes (node_id) VALUES ($1) ON CONFLICT (node_id) DO UPDATE SET heartbeat_at = now()', [nodeId]);
      await pool.query(
        `INSERT INTO chatroom_node_presence (node_id, participant_id) SELECT $1, unnest($2::text[]) ON CONFLICT DO NOTHING`,
        [nodeId, [...this.online]],
      );
    }
    // One statement: the dead nodes' rows are deleted by exactly one sweeping node, and the
    // participants it gets back exclude those another live node serves (the snapshot still
    // shows the dead nodes' rows, which the heartbeat condition leaves out).
    const { rows } = await pool.query<{ participant_id: string }>(
      `WITH dead AS (
         DELETE FROM chatroom_nodes
         WHERE node_id <> $1 AND heartbeat_at <= now() - $2 * interval '1 millisecond'
         RETURNING node_id
       ), gone AS (
         DELETE FROM chatroom_node_presence p USING dead WHERE p.node_id = dead.node_id RETURNING p.participant_id
       )
       SELECT DISTINCT g.participant_id FROM gone g
       WHERE NOT EXISTS (
         SELECT 1 FROM chatroom_node_presence q JOIN chatroom_nodes n USING (node_id)
         WHERE q.participant_id = g.participant_id AND n.heartbeat_at > now() - $2 * interval '1 millisecond'
       )`,
      [nodeId, deadAfterMs],
    );
    if (rows.length > 0) this.orphaned(rows.map((r) => r.participant_id));
  }

  /** Writes the unwritten participants' rows as `online` has them now, until none is left. */
  private async writeRows(): Promise<void> {
    for (let failures = 0; this.unwritten.size > 0 && !this.stopped; ) {
      this.writing = new Set(this.unwritten);
      this.unwritten.clear();
      const ids = [...this.writing];
      try {
        // One statement: the rows of those online now inserted, of the others deleted.
        await this.options.pool.query(
          `WITH gone AS (DELETE FROM chatroom_node_presence WHERE node_id = $1 AND participant_id = ANY($3::text[]))
           INSERT INTO chatroom_node_presence (node_id, participant_id) SELECT $1, unnest($2::text[]) ON CONFLICT DO NOTHING`,
          [this.options.nodeId, ids.filter((id) => this.online.has(id)), ids.filter((id) => !this.online.has(id))],
        );
        failures = 0;
      } catch (err) {
        this.options.onError?.(err as Error);
        for (const id of ids) this.unwritten.add(id);
        failures++;
      } finally {
        this.writing = new Set();
        this.tellWritten();
      }
      if (failures > 0) await this.pause.wait(retryDelayMs(failures));
    }
  }

  private tellWritten(): void {
    for (const resolve of [...this.written]) resolve();
    this.written.clear();
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.beat()
        .catch((err: unknown) => this.options.onError?.(err as Error))
        .finally(() => this.schedule());
    }, this.options.heartbeatMs ?? 2_000);
    this.timer.unref?.();
  }
}
