// One turn's exchange with the remote A2A agent: send the prompt as a message in the room's A2A
// context, follow the task (streamed when the card offers streaming, else polled with GetTask)
// and report its state as it changes, until it ends or asks for input. The caller's signal
// (the turn's cut-off) ends the wait; the task id is reported as soon as it is known, so the
// caller can cancel it.
import { randomUUID } from 'node:crypto';
import { Role, TaskState, type Artifact, type Message as A2aMessage, type Part, type SendMessageRequest, type Task, type TaskStatus } from '@a2a-js/sdk';
import type { Client } from '@a2a-js/sdk/client';

/** How often a task is read again with GetTask when it is not streamed. */
export const POLL_MS = 500;

const FINAL_STATES: ReadonlySet<TaskState> = new Set([
  TaskState.TASK_STATE_COMPLETED,
  TaskState.TASK_STATE_FAILED,
  TaskState.TASK_STATE_CANCELED,
  TaskState.TASK_STATE_REJECTED,
  TaskState.TASK_STATE_INPUT_REQUIRED,
  TaskState.TASK_STATE_AUTH_REQUIRED,
]);

export interface AskOptions {
  client: Client;
  streaming: boolean;
  text: string;
  contextId: string;
  /** A task that asked for input last turn: this message answers it. */
  taskId?: string;
  signal: AbortSignal;
  onTask(taskId: string, contextId: string): void;
  onStatus(status: TaskStatus): void;
}

export type AskResult = { kind: 'message'; message: A2aMessage } | { kind: 'task'; task: Task };

export function textOf(parts: readonly Part[] | undefined): string {
  return (parts ?? [])
    .map((p) => (p.content?.$case === 'text' ? p.content.value : ''))
    .filter((t) => t !== '')
    .join('\n');
}

export async function ask(options: AskOptions): Promise<AskResult> {
  const request: SendMessageRequest = {
    tenant: '',
    message: {
      messageId: randomUUID(),
      contextId: options.contextId,
      taskId: options.taskId ?? '',
      role: Role.ROLE_USER,
      parts: [{ content: { $case: 'text', value: options.text }, mediaType: 'text/plain', filename: '', metadata: {} }],
      metadata: {},
      extensions: [],
      referenceTaskIds: [],
    },
    configuration: { acceptedOutputModes: ['text/plain'], taskPushNotificationConfig: undefined, returnImmediately: !options.streaming },
    metadata: {},
  };
  const first = options.streaming ? await streamed(options, request) : await sent(options, request);
  if (first.kind === 'message' || isFinal(first.task)) return first;
  return { kind: 'task', task: await poll(options, first.task) };
}

function isFinal(task: Task): boolean {
  return task.status !== undefined && FINAL_STATES.has(task.status.state);
}

async function sent(options: AskOptions, request: SendMessageRequest): Promise<AskResult> {
  const result = await options.client.sendMessage(request, { signal: options.signal });
  if ('messageId' in result) return { kind: 'message', message: result };
  options.onTask(result.id, result.contextId);
  if (result.status) options.onStatus(result.status);
  return { kind: 'task', task: result };
}

async function streamed(options: AskOptions, request: SendMessageRequest): Promise<AskResult> {
  let task: Task | undefined;
  const artifacts = new Map<string, Artifact>();
  for await (const event of options.client.sendMessageStream(request, { signal: options.signal })) {
    const payload = event.payload;
    if (!payload) continue;
    switch (payload.$case) {
      case 'message':
        return { kind: 'message', message: payload.value };
      case 'task':
        task = payload.value;
        for (const artifact of task.artifacts ?? []) artifacts.set(artifact.artifactId, artifact);
        options.onTask(task.id, task.contextId);
        if (task.status) options.onStatus(task.status);
        break;
      case 'statusUpdate': {
        const update = payload.value;
        task ??= { id: update.taskId, contextId: update.contextId, status: undefined, artifacts: [], history: [], metadata: {} };
        if (update.status) {
          task.status = update.status;
          options.onStatus(update.status);
        }
        break;
      }
      case 'artifactUpdate': {
        const artifact = payload.value.artifact;
        if (!artifact) break;
        const earlier = artifacts.get(artifact.artifactId);
        artifacts.set(artifact.artifactId, payload.value.append && earlier ? { ...earlier, parts: [...earlier.parts, ...artifact.parts] } : artifact);
        break;
      }
    }
  }
  if (!task) throw new Error('the stream ended without a task or a message');
  return { kind: 'task', task: { ...task, artifacts: [...artifacts.values()] } };
}

/** Reads the task until it ends or asks for input (or the signal fires). */
async function poll(options: AskOptions, task: Task): Promise<Task> {
  let current = task;
  let state = current.status?.state;
  while (!isFinal(current)) {
    await sleep(POLL_MS, options.signal);
    current = await options.client.getTask({ tenant: '', id: task.id }, { signal: options.signal });
    if (current.status && current.status.state !== state) {
      state = current.status.state;
      options.onStatus(current.status);
    }
  }
  return current;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
