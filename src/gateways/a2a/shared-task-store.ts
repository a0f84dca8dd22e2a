// Tasks of the rooms' A2A interface in the table the nodes share (STORE=postgres, docs/a2a.md):
// GetTask, ListTasks and CancelTask read the task on any node, as the node that took the message
// last saved it. Scoped by the caller and the room (RoomMember): another member's task is not
// found. Stored as the task's A2A JSON (the SDK's Task.toJSON / fromJSON).
//
// A final task never changes (the table refuses the write): when a save of the node following
// the round is refused, the task was cancelled on another node (or finished because this node
// was taken for dead), and `onOverruled` gets the stored task so the follower stops.
import { Task, TaskState, type ListTasksRequest, type ListTasksResponse } from '@a2a-js/sdk';
import type { ServerCallContext, TaskStore } from '@a2a-js/sdk/server';
import type { SharedTaskTable } from '../../storage/a2a-tasks.js';
import { memberOf } from './member.js';
import { DEFAULT_MAX_TASKS, listPage } from './task-store.js';

/** The A2A terminal states: a task in one of them is final. */
const TERMINAL: readonly TaskState[] = [TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_FAILED, TaskState.TASK_STATE_CANCELED, TaskState.TASK_STATE_REJECTED];

export const isFinal = (task: Task): boolean => task.status !== undefined && TERMINAL.includes(task.status.state);

export class SharedTaskStore implements TaskStore {
  constructor(
    private readonly table: SharedTaskTable,
    private readonly onOverruled: (stored: Task) => void,
    private readonly max = DEFAULT_MAX_TASKS,
  ) {}

  async save(task: Task, context: ServerCallContext): Promise<void> {
    const member = memberOf(context);
    const row = { taskId: task.id, ownerId: member.caller.id, roomId: member.roomId, final: isFinal(task), task: Task.toJSON(task) };
    if (await this.table.save(row, this.max)) return;
    const stored = await this.load(task.id, context);
    if (stored) this.onOverruled(stored);
  }

  async load(taskId: string, context: ServerCallContext): Promise<Task | undefined> {
    const member = memberOf(context);
    const json = await this.table.load(taskId, member.caller.id, member.roomId);
    return json === undefined ? undefined : Task.fromJSON(json);
  }

  async list(params: ListTasksRequest, context: ServerCallContext): Promise<ListTasksResponse> {
    const member = memberOf(context);
    const tasks = await this.table.list(member.caller.id, member.roomId, this.max);
    return listPage(
      tasks.map((json) => Task.fromJSON(json)),
      params,
    );
  }
}
