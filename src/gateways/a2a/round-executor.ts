// The A2A executor of a room: follows the posted message's round (round-follower.ts) and
// publishes it as the task's events: `working`, one artifact per visible agent answer,
// `completed` when the round ends. It runs on the node that took the message; a cancel (on this
// node, or announced by another through the shared task table) stops the following and ends
// the task `canceled`. The room and its round are never touched.
import { randomUUID } from 'node:crypto';
import { TaskState, type Message as A2aMessage, type Part, type Task, type TaskStatus } from '@a2a-js/sdk';
import { AgentEvent, type AgentExecutor, type ExecutionEventBus, type RequestContext } from '@a2a-js/sdk/server';
import type { RoundAnswer, RoundFollower } from './round-follower.js';

/** Where the request context carries the follower of the message `RoomAgents` posted. */
export const FOLLOWER = 'chatroom.follower';

interface Following {
  follower: RoundFollower;
  bus: ExecutionEventBus;
  contextId: string;
}

export class RoundExecutor implements AgentExecutor {
  private readonly running = new Map<string, Following>();

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
    this.running.set(taskId, { follower, bus, contextId });
    const status = (state: TaskState, text: string, metadata: Record<string, unknown> = {}) =>
      bus.publish(AgentEvent.statusUpdate({ taskId, contextId, status: statusOf(state, taskId, contextId, text), metadata }));
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
            return; // whoever stopped it published the final status
        }
      }
    } finally {
      if (this.running.get(taskId)?.follower === follower) this.running.delete(taskId);
    }
  };

  /** A cancel on this node (the SDK calls it when the task runs here). */
  cancelTask = async (taskId: string, bus: ExecutionEventBus): Promise<void> => {
    const following = this.take(taskId);
    bus.publish(
      AgentEvent.statusUpdate({
        taskId,
        contextId: following?.contextId ?? '',
        status: { state: TaskState.TASK_STATE_CANCELED, message: undefined, timestamp: new Date().toISOString() },
        metadata: {},
      }),
    );
  };

  /** Another node cancelled a task: if this node follows it, it stops and the task ends `canceled` here too. */
  canceledElsewhere(taskId: string): void {
    const following = this.running.get(taskId);
    if (following) void this.cancelTask(taskId, following.bus);
  }

  /**
   * The stored task is final while this node still follows it (a cancel whose announcement was
   * missed, or this node was taken for dead): stop, and end the task here as it was stored.
   */
  overruled(stored: Task): void {
    const following = this.take(stored.id);
    if (!following || !stored.status) return;
    following.bus.publish(AgentEvent.statusUpdate({ taskId: stored.id, contextId: following.contextId, status: stored.status, metadata: {} }));
  }

  /** Stops every follower (server shutdown): their tasks end as they are. */
  stopAll(): void {
    for (const id of [...this.running.keys()]) this.take(id);
  }

  private take(taskId: string): Following | undefined {
    const following = this.running.get(taskId);
    this.running.delete(taskId);
    following?.follower.stop();
    return following;
  }
}

/** The task as it ends when no node follows its round any more (the node stopped or died). */
export function abandoned(task: Task): Task {
  const status = statusOf(
    TaskState.TASK_STATE_FAILED,
    task.id,
    task.contextId,
    'The server node following this task stopped before its round ended. The room goes on: its messages and answers are in the room (get_messages).',
  );
  return { ...task, status, history: status.message ? [...task.history, status.message] : task.history };
}

function statusOf(state: TaskState, taskId: string, contextId: string, text: string): TaskStatus {
  return { state, message: agentMessage(taskId, contextId, text), timestamp: new Date().toISOString() };
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
