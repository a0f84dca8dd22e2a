// The rooms' A2A tasks in PostgreSQL (table `chatroom_a2a_tasks`, migrations/005_a2a_tasks.sql),
// so that GetTask and CancelTask answer on every node (SPEC §11/§12, docs/a2a.md).
//
// - A save is one upsert that leaves a final row (and another owner's row) untouched: a task
//   that reached a terminal state never changes again, whichever node writes later. That is
//   what makes a cancel on another node stick while the node following the round may still be
//   saving answers.
// - Bounded: when a save adds a row, rows past `keep` (least recently updated first) are deleted.
// - Cancels are announced on the `a2a_task_cancels` channel (RoomFeed listens, app.ts hands the
//   ids to `heardCancel`), so the node following the task stops waiting.
// - A task whose node is gone (its row in `chatroom_nodes` deleted by the presence sweep,
//   node-presence.ts) is finished by whichever node asks `finishOrphans` first.
import type pg from 'pg';
import type { SharedTaskRow, SharedTaskTable } from '../a2a-tasks.js';
import { A2A_CANCEL_CHANNEL } from './feed.js';

/** At most this many orphans are finished per call (the next call takes the rest). */
const ORPHAN_BATCH = 200;

export class PgA2aTasks implements SharedTaskTable {
  private readonly handlers = new Set<(taskId: string) => void>();

  constructor(
    private readonly pool: pg.Pool,
    /** This node (chatroom_nodes.node_id): it follows the tasks it first saves. */
    private readonly nodeId: string,
  ) {}

  async save(row: SharedTaskRow, keep: number): Promise<boolean> {
    const { rows } = await this.pool.query<{ inserted: boolean }>(
      `INSERT INTO chatroom_a2a_tasks (task_id, owner_id, room_id, node_id, final, task) VALUES ($1, $2, $3, $4, $5, $6)
       ON CONFLICT (task_id) DO UPDATE SET final = EXCLUDED.final, task = EXCLUDED.task, updated_at = now()
         WHERE NOT chatroom_a2a_tasks.final AND chatroom_a2a_tasks.owner_id = EXCLUDED.owner_id AND chatroom_a2a_tasks.room_id = EXCLUDED.room_id
       RETURNING (xmax = 0) AS inserted`,
      [row.taskId, row.ownerId, row.roomId, this.nodeId, row.final, JSON.stringify(row.task)],
    );
    if (rows.length === 0) return false;
    if (rows[0]!.inserted) {
      await this.pool.query(
        `DELETE FROM chatroom_a2a_tasks WHERE task_id IN (
           SELECT task_id FROM chatroom_a2a_tasks ORDER BY updated_at DESC, task_id DESC OFFSET $1)`,
        [keep],
      );
    }
    return true;
  }

  async load(taskId: string, ownerId: string, roomId: string): Promise<unknown | undefined> {
    const { rows } = await this.pool.query<{ task: string }>('SELECT task FROM chatroom_a2a_tasks WHERE task_id = $1 AND owner_id = $2 AND room_id = $3', [
      taskId,
      ownerId,
      roomId,
    ]);
    return rows[0] ? JSON.parse(rows[0].task) : undefined;
  }

  async list(ownerId: string, roomId: string, limit: number): Promise<unknown[]> {
    const { rows } = await this.pool.query<{ task: string }>(
      'SELECT task FROM chatroom_a2a_tasks WHERE owner_id = $1 AND room_id = $2 ORDER BY updated_at DESC, task_id DESC LIMIT $3',
      [ownerId, roomId, limit],
    );
    return rows.map((r) => JSON.parse(r.task));
  }

  async announceCancel(taskId: string): Promise<void> {
    await this.pool.query(`SELECT pg_notify('${A2A_CANCEL_CHANNEL}', $1)`, [taskId]);
  }

  onCancel(handler: (taskId: string) => void): void {
    this.handlers.add(handler);
  }

  /** A cancel announced by a node (the feed's `a2a_task_cancels` listener). */
  heardCancel(taskId: string): void {
    for (const handler of this.handlers) handler(taskId);
  }

  finishOrphans(finish: (task: unknown) => unknown): Promise<number> {
    return this.finishWhere(
      `NOT t.final AND NOT EXISTS (SELECT 1 FROM chatroom_nodes n WHERE n.node_id = t.node_id)`,
      [],
      finish,
    );
  }

  finishOwn(finish: (task: unknown) => unknown): Promise<number> {
    return this.finishWhere('NOT t.final AND t.node_id = $1', [this.nodeId], finish);
  }

  /** Reads the open rows the condition names, then writes each finished, final, unless it became final meanwhile. */
  private async finishWhere(condition: string, params: unknown[], finish: (task: unknown) => unknown): Promise<number> {
    const { rows } = await this.pool.query<{ task_id: string; task: string }>(
      `SELECT t.task_id, t.task FROM chatroom_a2a_tasks t WHERE ${condition} LIMIT ${ORPHAN_BATCH}`,
      params,
    );
    if (rows.length === 0) return 0;
    const { rowCount } = await this.pool.query(
      `UPDATE chatroom_a2a_tasks t SET final = true, task = u.task, updated_at = now()
       FROM unnest($1::text[], $2::text[]) AS u(task_id, task)
       WHERE t.task_id = u.task_id AND NOT t.final`,
      [rows.map((r) => r.task_id), rows.map((r) => JSON.stringify(finish(JSON.parse(r.task))))],
    );
    return rowCount ?? 0;
  }
}
