// Tasks of the rooms' A2A interface on one node (STORE=file), kept in memory with a bound
// (docs/a2a.md): at most `max` tasks over all callers; past that the least recently used one is
// forgotten (GetTask on it answers TaskNotFound). Tasks are scoped by the SDK's owner (room and
// caller, see RoomMember.userName), so one member never reads another's task, nor a task of
// another room. With STORE=postgres the nodes share them instead (shared-task-store.ts).
import type { ListTasksRequest, ListTasksResponse, Task } from '@a2a-js/sdk';
import { resolveUserScope, type ServerCallContext, type TaskStore } from '@a2a-js/sdk/server';
import { LRUCache } from 'lru-cache';

export const DEFAULT_MAX_TASKS = 1000;

export class BoundedTaskStore implements TaskStore {
  private readonly tasks: LRUCache<string, Task>;

  constructor(max = DEFAULT_MAX_TASKS) {
    this.tasks = new LRUCache({ max });
  }

  get size(): number {
    return this.tasks.size;
  }

  async save(task: Task, context: ServerCallContext): Promise<void> {
    this.tasks.set(key(context, task.id), structuredClone(task));
  }

  async load(taskId: string, context: ServerCallContext): Promise<Task | undefined> {
    const task = this.tasks.get(key(context, taskId));
    return task ? structuredClone(task) : undefined;
  }

  async list(params: ListTasksRequest, context: ServerCallContext): Promise<ListTasksResponse> {
    const prefix = `${resolveUserScope(context)}\u0000`;
    const mine: Task[] = [];
    for (const [k, task] of this.tasks.entries()) if (k.startsWith(prefix)) mine.push(structuredClone(task));
    return listPage(mine, params);
  }
}

/** One page of a caller's tasks (most recently used first) as ListTasks filters them. */
export function listPage(tasks: Task[], params: ListTasksRequest): ListTasksResponse {
  const pageSize = params.pageSize ?? 50;
  const found = tasks.filter((task) => (!params.contextId || task.contextId === params.contextId) && (!params.status || task.status?.state === params.status));
  const page = found.slice(0, pageSize).map((t) => (params.includeArtifacts ? t : { ...t, artifacts: [] }));
  return { tasks: page, nextPageToken: '', pageSize, totalSize: found.length };
}

function key(context: ServerCallContext, taskId: string): string {
  return `${resolveUserScope(context)}\u0000${taskId}`;
}
