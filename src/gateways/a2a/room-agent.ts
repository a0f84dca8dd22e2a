// A room as an A2A agent (SPEC §12), on the SDK's DefaultRequestHandler: a sent message is
// posted into the room as the caller through the tool registry (the room's rules apply, their
// refusals become A2A errors before any task exists); its task follows the round the message
// started, one artifact per visible agent answer, and completes when that round ends.
// Cancelling stops the following only: the room and its round go on. Tasks are kept in this
// node's memory (STORE=file) or in the table the nodes share (STORE=postgres), so that with
// several nodes GetTask and CancelTask answer on any of them (docs/a2a.md, "Several nodes").
import { Task, type AgentCard, type Message as A2aMessage, type SendMessageRequest, type StreamResponse } from '@a2a-js/sdk';
import { ContentTypeNotSupportedError, RequestMalformedError, UnsupportedOperationError } from '@a2a-js/sdk/errors';
import { DefaultRequestHandler, type A2ARequestHandler, type ServerCallContext, type TaskStore } from '@a2a-js/sdk/server';
import type { EventBus } from '../../events/bus.js';
import type { Timers } from '../../identity/presence.js';
import type { SharedTaskTable } from '../../storage/a2a-tasks.js';
import type { ToolRegistry } from '../../tools/registry.js';
import type { Message, RoomRecord } from '../../types.js';
import { A2A_VERSION, roomCard } from './card.js';
import { toA2aError } from './errors.js';
import { memberOf } from './member.js';
import { abandoned, FOLLOWER, RoundExecutor } from './round-executor.js';
import { RoundFollower } from './round-follower.js';
import { SharedTaskStore } from './shared-task-store.js';
import { BoundedTaskStore } from './task-store.js';

/**
 * Tasks one member may have waiting at once over all rooms, on one node (each holds a listener
 * on that node's bus; with several nodes the bound is per node).
 */
export const MAX_OPEN_TASKS_PER_MEMBER = 10;

/** How often a node looks for shared tasks whose node is gone (STORE=postgres). */
export const ORPHAN_SWEEP_MS = 2000;

export interface RoomAgentOptions {
  bus: EventBus;
  registry: ToolRegistry;
  roomNow: (roomId: string) => Promise<RoomRecord | undefined>;
  maxTasks?: number;
  /** The task table the nodes share (STORE=postgres); without it tasks stay in this node's memory. */
  shared?: SharedTaskTable;
  timers: Timers;
  onError: (err: unknown, what: string) => void;
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
  private sweepTimer: unknown;
  private closed = false;
  readonly tasks: TaskStore;

  constructor(private readonly options: RoomAgentOptions) {
    const shared = options.shared;
    if (shared) {
      this.tasks = new SharedTaskStore(shared, (stored) => this.executor.overruled(stored), options.maxTasks);
      shared.onCancel((taskId) => this.executor.canceledElsewhere(taskId));
      this.scheduleSweep();
    } else {
      this.tasks = new BoundedTaskStore(options.maxTasks);
    }
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

  /**
   * The SDK's cancel: a task followed on this node is stopped here; one followed by another node
   * is stored `canceled` by this node (which also covers a node that died) and the cancel is
   * announced, so the node following it stops waiting. A final task never changes after.
   */
  cancelTask: A2ARequestHandler['cancelTask'] = async (p, c) => {
    const task = await this.inner.cancelTask(p, c);
    await this.options.shared?.announceCancel(task.id).catch((err: unknown) => this.options.onError(err, 'could not announce an A2A cancel'));
    return task;
  };

  // The rest is the SDK's (tasks are scoped to the member and the room, see RoomMember).
  getTask: A2ARequestHandler['getTask'] = (p, c) => this.inner.getTask(p, c);
  listTasks: A2ARequestHandler['listTasks'] = (p, c) => this.inner.listTasks(p, c);
  resubscribe: A2ARequestHandler['resubscribe'] = (p, c) => this.inner.resubscribe(p, c);
  createTaskPushNotificationConfig: A2ARequestHandler['createTaskPushNotificationConfig'] = (p, c) => this.inner.createTaskPushNotificationConfig(p, c);
  getTaskPushNotificationConfig: A2ARequestHandler['getTaskPushNotificationConfig'] = (p, c) => this.inner.getTaskPushNotificationConfig(p, c);
  listTaskPushNotificationConfigs: A2ARequestHandler['listTaskPushNotificationConfigs'] = (p, c) => this.inner.listTaskPushNotificationConfigs(p, c);
  deleteTaskPushNotificationConfig: A2ARequestHandler['deleteTaskPushNotificationConfig'] = (p, c) => this.inner.deleteTaskPushNotificationConfig(p, c);

  /** Stops following (server shutdown); with the shared table this node's open tasks end `failed`. */
  async close(): Promise<void> {
    this.closed = true;
    this.options.timers.clearTimeout(this.sweepTimer);
    this.executor.stopAll();
    await this.options.shared?.finishOwn(finishAbandoned).catch((err: unknown) => this.options.onError(err, 'could not finish the open A2A tasks'));
  }

  /** Shared tasks whose node is gone (its presence expired) end `failed` instead of waiting forever. */
  private scheduleSweep(): void {
    if (this.closed) return;
    this.sweepTimer = this.options.timers.setTimeout(() => {
      this.options
        .shared!.finishOrphans(finishAbandoned)
        .catch((err: unknown) => this.options.onError(err, 'could not finish the A2A tasks of a stopped node'))
        .finally(() => this.scheduleSweep());
    }, ORPHAN_SWEEP_MS);
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

/** A stored task (A2A JSON) no node follows any more, as it ends. */
function finishAbandoned(json: unknown): unknown {
  return Task.toJSON(abandoned(Task.fromJSON(json)));
}
