// The seam between the rooms' A2A interface (src/gateways/a2a/) and a task table the nodes
// share (STORE=postgres: src/storage/postgres/a2a-tasks.ts). The file store has none: one node
// keeps its tasks in memory (gateways/a2a/task-store.ts). The table knows nothing of A2A beyond
// "a task is JSON, owned by one participant in one room, final once it reached a terminal state".

/** One task as stored: who may read it, where, whether it is final, and the task's JSON. */
export interface SharedTaskRow {
  taskId: string;
  /** The participant who sent the message: the only one who may read or cancel the task. */
  ownerId: string;
  roomId: string;
  /** The task reached a terminal state: its row never changes again. */
  final: boolean;
  task: unknown;
}

export interface SharedTaskTable {
  /**
   * Writes the task (the node that first writes it is the one following it), unless its stored
   * row is final or belongs to someone else: resolves false then, and nothing changed. Past
   * `keep` rows the least recently updated are forgotten.
   */
  save(row: SharedTaskRow, keep: number): Promise<boolean>;
  /** The task, when it exists and is the owner's task in that room. */
  load(taskId: string, ownerId: string, roomId: string): Promise<unknown | undefined>;
  /** The owner's tasks in that room, the most recently updated first, at most `limit`. */
  list(ownerId: string, roomId: string, limit: number): Promise<unknown[]>;
  /** Tells every node (this one too) that the task was cancelled: the node following it stops. */
  announceCancel(taskId: string): Promise<void>;
  /** Called with each task id another node (or this one) announced as cancelled. */
  onCancel(handler: (taskId: string) => void): void;
  /**
   * Tasks not final that no live node follows any more (their node's presence expired: it
   * crashed, or stopped without finishing them) become `finish(task)`, final. Resolves how many.
   */
  finishOrphans(finish: (task: unknown) => unknown): Promise<number>;
  /** This node's tasks not final become `finish(task)`, final (the node is stopping). */
  finishOwn(finish: (task: unknown) => unknown): Promise<number>;
}
