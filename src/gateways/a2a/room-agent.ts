// A room as an A2A agent (SPEC §12), on the SDK's DefaultRequestHandler: a sent message is
// posted into the room as the caller through the tool registry (the room's rules apply, their
// refusals become A2A errors before any task exists); its task follows the round the message
// started, one artifact per visible agent answer, and completes when that round ends.
// Cancelling stops the following only: the room and its round go on.
import { randomUUID } from 'node:crypto';
import { TaskState, type AgentCard, type Message as A2aMessage, type Part, type SendMessageRequest, type StreamResponse, type Task } from '@a2a-js/sdk';
import { ContentTypeNotSupportedError, RequestMalformedError, UnsupportedOperationError } from '@a2a-js/sdk/errors';
import {
  AgentEvent,
  DefaultRequestHandler,
  type A2ARequestHandler,
  type AgentExecutor,
  type ExecutionEventBus,
  type RequestContext,
  type ServerCallContext,
  type User,
} from '@a2a-js/sdk/server';
import type { EventBus } from '../../events/bus.js';
import type { ToolRegistry } from '../../tools/registry.js';
import type { Caller, Message, RoomRecord } from '../../types.js';
import { A2A_VERSION, roomCard } from './card.js';
import { toA2aError } from './errors.js';
import { RoundFollower, type RoundAnswer } from './round-follower.js';
import { BoundedTaskStore } from './task-store.js';

/** Tasks one member may have waiting at once over all rooms (each holds a bus listener). */
export const MAX_OPEN_TASKS_PER_MEMBER = 10;

/** A member of the room the request is for, authenticated by its bearer token. */
export class RoomMember implements User {
  constructor(
    readonly caller: Caller,
    readonly roomId: string,
    /** Kept for this request only: the post goes through the registry as the caller. */
    readonly token: string,
    readonly address: string | null,
  ) {}

  get isAuthenticated(): boolean {
    return true;
  }

  /** The SDK scopes stored tasks by this: one member's tasks of one room. */
  get userName(): string {
    return `${this.caller.id}@${this.roomId}`;
  }
}

const FOLLOWER = 'chatroom.follower';

export interface RoomAgentOptions {
  bus: EventBus;
  registry: ToolRegistry;
  roomNow: (roomId: string) => Promise<RoomRecord | undefined>;
  maxTasks?: number;
}

/** Follows the posted message's round and publishes it as the task's events. */
class RoundExecutor implements AgentExecutor {
  private readonly running = new Map<string, RoundFollower>();

  execute = async (request: RequestContext, bus: ExecutionEventBus): Promise<void> => {
    const follower = request.context.state.get(FOLLOWER) as RoundFollower | undefined;
    if (!follower) throw new Error('no posted message to follow');
    const { taskId, contextId } = request;
    const task: Task = {
      id: taskId,
      contextId,
      status: { state: TaskState.TASK_STATE_WORKING, message: undefined, timestamp: new Date().toISOString() },
      artifacts: [],
      history: [request.userMessage],
      metadata: {},
    };
    bus.publish(AgentEvent.task(task));
    this.running.set(taskId, follower);
    const status = (state: TaskState, text: string, metadata: Record<string, unknown> = {}) =>
      bus.publish(
        AgentEvent.statusUpdate({
          taskId,
          contextId,
          status: { state, message: agentMessage(taskId, contextId, text), timestamp: new Date().toISOString() },
          metadata,
        }),
      );
    try {
      for await (const step of follower.steps()) {
        switch (step.kind) {
          case 'round':
            status(TaskState.TASK_STATE_WORKING, 'The round started; waiting for the agents.', { round_id: step.round_id });
            break;
          case 'answer':
            bus.publish(AgentEvent.artifactUpdate({ taskId, contextId, artifact: answerArtifact(step.answer), append: false, lastChunk: true, metadata: {} }));
            break;
          case 'end':
            status(TaskState.TASK_STATE_COMPLETED, `The round ended (${step.reason}).`, { round_id: step.round_id, reason: step.reason });
            return;
          case 'no_round':
            status(TaskState.TASK_STATE_COMPLETED, 'The message was posted; it started no round, so no agent answers it.', { reason: 'no_round' });
            return;
          case 'stopped':
            return; // cancelTask published the final status
        }
      }
    } finally {
      this.running.delete(taskId);
    }
  };

  cancelTask = async (taskId: string, bus: ExecutionEventBus): Promise<void> => {
    const follower = this.running.get(taskId);
    follower?.stop();
    bus.publish(
      AgentEvent.statusUpdate({
        taskId,
        contextId: '',
        status: { state: TaskState.TASK_STATE_CANCELED, message: undefined, timestamp: new Date().toISOString() },
        metadata: {},
      }),
    );
  };

  /** Stops every follower (server shutdown): their tasks end as they are. */
  stopAll(): void {
    for (const follower of this.running.values()) follower.stop();
  }
}

/** One visible agent answer of the round as an artifact: the agent's name and the text. */
function answerArtifact(answer: RoundAnswer) {
  return {
    artifactId: answer.message_id,
    name: answer.sender,
    description: `Answer by ${answer.sender}`,
    parts: [textPart(answer.text)],
    metadata: { sender: answer.sender, message_id: answer.message_id, seq: answer.seq, timestamp: answer.timestamp },
    extensions: [],
  };
}

function textPart(text: string): Part {
  return { content: { $case: 'text', value: text }, mediaType: 'text/plain', filename: '', metadata: {} };
}

function agentMessage(taskId: string, contextId: string, text: string): A2aMessage {
  return { messageId: randomUUID(), contextId, taskId, role: 2 /* ROLE_AGENT */, parts: [textPart(text)], metadata: {}, extensions: [], referenceTaskIds: [] };
}

/** The message's text parts, joined; other parts are refused (a room takes text). */
export function messageText(message: A2aMessage): string {
  const texts: string[] = [];
  for (const part of message.parts ?? []) {
    if (part.content?.$case !== 'text') throw new ContentTypeNotSupportedError({ message: 'A room takes text parts only', metadata: { code: 'validation_error' } });
    texts.push(part.content.value);
  }
  return texts.join('\n');
}

/**
 * The request handler all rooms share: the SDK's DefaultRequestHandler behind a layer that posts
 * the message first and pins the A2A context to the room.
 */
export class RoomAgents implements A2ARequestHandler {
  private readonly executor = new RoundExecutor();
  private readonly inner: DefaultRequestHandler;
  private readonly open = new Map<string, number>();
  readonly tasks: BoundedTaskStore;

  constructor(private readonly options: RoomAgentOptions) {
    this.tasks = new BoundedTaskStore(options.maxTasks);
    this.inner = new DefaultRequestHandler(this.versionCard(), this.tasks, this.executor);
  }

  /**
   * What the JSON-RPC layer checks the protocol version against. The card a client reads is the
   * room's own (card.ts), served at the room's well-known path.
   */
  private versionCard(): AgentCard {
    return roomCard({ room_id: '', room_name: 'Agent Chatroom room', room_description: '' }, [], '', A2A_VERSION);
  }

  async getAgentCard(): Promise<AgentCard> {
    return this.versionCard();
  }

  getAuthenticatedExtendedAgentCard: A2ARequestHandler['getAuthenticatedExtendedAgentCard'] = (p, c) => this.inner.getAuthenticatedExtendedAgentCard(p, c);

  async sendMessage(params: SendMessageRequest, context: ServerCallContext): Promise<A2aMessage | Task> {
    const follower = await this.post(params, context);
    try {
      return await this.inner.sendMessage(this.pinned(params, context), context);
    } catch (err) {
      follower.stop();
      throw err;
    }
  }

  async *sendMessageStream(params: SendMessageRequest, context: ServerCallContext): AsyncGenerator<StreamResponse, void, undefined> {
    const follower = await this.post(params, context);
    try {
      yield* this.inner.sendMessageStream(this.pinned(params, context), context);
    } catch (err) {
      follower.stop();
      throw err;
    }
  }

  // The rest is the SDK's (tasks are scoped to the member and the room by RoomMember.userName).
  getTask: A2ARequestHandler['getTask'] = (p, c) => this.inner.getTask(p, c);
  cancelTask: A2ARequestHandler['cancelTask'] = (p, c) => this.inner.cancelTask(p, c);
  listTasks: A2ARequestHandler['listTasks'] = (p, c) => this.inner.listTasks(p, c);
  resubscribe: A2ARequestHandler['resubscribe'] = (p, c) => this.inner.resubscribe(p, c);
  createTaskPushNotificationConfig: A2ARequestHandler['createTaskPushNotificationConfig'] = (p, c) => this.inner.createTaskPushNotificationConfig(p, c);
  getTaskPushNotificationConfig: A2ARequestHandler['getTaskPushNotificationConfig'] = (p, c) => this.inner.getTaskPushNotificationConfig(p, c);
  listTaskPushNotificationConfigs: A2ARequestHandler['listTaskPushNotificationConfigs'] = (p, c) => this.inner.listTaskPushNotificationConfigs(p, c);
  deleteTaskPushNotificationConfig: A2ARequestHandler['deleteTaskPushNotificationConfig'] = (p, c) => this.inner.deleteTaskPushNotificationConfig(p, c);

  close(): void {
    this.executor.stopAll();
  }

  /** The room is the A2A context: every task of a room has the room id as its contextId. */
  private pinned(params: SendMessageRequest, context: ServerCallContext): SendMessageRequest {
    const member = memberOf(context);
    return { ...params, message: { ...params.message!, contextId: member.roomId } };
  }

  /**
   * Posts the message as the caller, with a follower listening from before the post; the
   * follower holds one of the caller's open-task slots until it stops.
   */
  private async post(params: SendMessageRequest, context: ServerCallContext): Promise<RoundFollower> {
    const member = memberOf(context);
    const message = params.message;
    if (!message?.messageId) throw new RequestMalformedError('message.messageId is required.');
    if (message.taskId) {
      throw new UnsupportedOperationError('Each message starts a new task (the round it starts); follow a running one with GetTask');
    }
    const text = messageText(message);
    const key = member.caller.id;
    const open = this.open.get(key) ?? 0;
    if (open >= MAX_OPEN_TASKS_PER_MEMBER) {
      throw new UnsupportedOperationError({ message: `At most ${MAX_OPEN_TASKS_PER_MEMBER} tasks may wait at once; cancel one or wait`, metadata: { code: 'rate_limited' } });
    }
    this.open.set(key, open + 1);
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      const left = (this.open.get(key) ?? 1) - 1;
      if (left > 0) this.open.set(key, left);
      else this.open.delete(key);
    };
    const follower = new RoundFollower({ bus: this.options.bus, roomId: member.roomId, roomNow: () => this.options.roomNow(member.roomId), onStop: release });
    try {
      const result = (await this.options.registry.call(
        'send_message',
        { room_id: member.roomId, text_content: text },
        { token: member.token, transport: 'a2a', address: member.address },
      )) as { message: Message };
      follower.posted(result.message);
    } catch (err) {
      follower.stop();
      throw toA2aError(err);
    }
    context.state.set(FOLLOWER, follower);
    return follower;
  }
}

export function memberOf(context: ServerCallContext): RoomMember {
  const user = context.user;
  if (!(user instanceof RoomMember)) throw new Error('request without an authenticated room member');
  return user;
}
