// `agent-chatroom a2a-agent` against the real server, with a stand-in remote agent built on the
// official A2A SDK's server in this process: it echoes (streamed or polled), never finishes,
// fails, or asks a question. The runner runs in-process (runA2aAgent), as the command does.
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { TaskState, type AgentCard, type Part } from '@a2a-js/sdk';
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore, type AgentExecutor, type ExecutionEventBus, type RequestContext } from '@a2a-js/sdk/server';
import { agentCardHandler, jsonRpcHandler, UserBuilder } from '@a2a-js/sdk/server/express';
import express from 'express';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { runA2aAgent, type RunningA2aAgent } from '../../src/a2a-agent/run.js';
import { closedPort } from '../helpers/process.js';
import { registerUser, startTestServer, type TestServer } from '../helpers/server.js';

type Mode = 'echo' | 'hang' | 'fail' | 'ask';

interface StandIn {
  cardUrl: string;
  /** Each message as the remote agent got it: `sentTaskId` is the task id the message named. */
  received: Array<{ contextId: string; taskId: string; sentTaskId: string; text: string }>;
  cancelled: string[];
  headers: Array<Record<string, string | string[] | undefined>>;
  close(): Promise<void>;
}

const text = (parts: readonly Part[]) => parts.map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('');
const part = (value: string): Part => ({ content: { $case: 'text', value }, mediaType: 'text/plain', filename: '', metadata: {} });
const now = () => new Date().toISOString();

/** A remote A2A agent on the SDK's server: DefaultRequestHandler, InMemoryTaskStore, JSON-RPC. */
async function standIn(mode: Mode, options: { streaming: boolean }): Promise<StandIn> {
  const received: StandIn['received'] = [];
  const cancelled: string[] = [];
  const headers: StandIn['headers'] = [];
  const hanging = new Map<string, () => void>();
  const executor: AgentExecutor = {
    async execute(ctx: RequestContext, bus: ExecutionEventBus) {
      const sentTaskId = ctx.task ? ctx.task.id : '';
      received.push({ contextId: ctx.contextId, taskId: ctx.taskId, sentTaskId, text: text(ctx.userMessage.parts) });
      const status = (state: TaskState, said?: string) =>
        bus.publish(
          AgentEvent.statusUpdate({
            taskId: ctx.taskId,
            contextId: ctx.contextId,
            status: { state, message: said ? { messageId: `m-${Math.random()}`, contextId: ctx.contextId, taskId: ctx.taskId, role: 2, parts: [part(said)], metadata: {}, extensions: [], referenceTaskIds: [] } : undefined, timestamp: now() },
            metadata: {},
          }),
        );
      bus.publish(AgentEvent.task({ id: ctx.taskId, contextId: ctx.contextId, status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: now() }, artifacts: [], history: [ctx.userMessage], metadata: {} }));
      status(TaskState.TASK_STATE_WORKING, 'reading the room');
      if (mode === 'ask' && ctx.task) {
        // The answer to the question: the task it asked in goes on and completes.
        status(TaskState.TASK_STATE_COMPLETED, `Thanks, noted: ${text(ctx.userMessage.parts).includes('Paris') ? 'Paris' : 'unclear'}`);
      } else if (mode === 'echo') {
        bus.publish(
          AgentEvent.artifactUpdate({
            taskId: ctx.taskId,
            contextId: ctx.contextId,
            artifact: { artifactId: `a-${received.length}`, name: 'answer', description: '', parts: [part(`echo: turn ${received.length}`)], metadata: {}, extensions: [] },
            append: false,
            lastChunk: true,
            metadata: {},
          }),
        );
        status(TaskState.TASK_STATE_COMPLETED);
      } else if (mode === 'fail') {
        status(TaskState.TASK_STATE_FAILED, 'model overloaded');
      } else if (mode === 'ask') {
        status(TaskState.TASK_STATE_INPUT_REQUIRED, 'Which city do you mean?');
      } else {
        await new Promise<void>((resolve) => hanging.set(ctx.taskId, resolve));
      }
    },
    async cancelTask(taskId: string, bus: ExecutionEventBus) {
      cancelled.push(taskId);
      bus.publish(AgentEvent.statusUpdate({ taskId, contextId: '', status: { state: TaskState.TASK_STATE_CANCELED, message: undefined, timestamp: now() }, metadata: {} }));
      hanging.get(taskId)?.();
    },
  };
  const app = express();
  const server = http.createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const card: AgentCard = {
    name: `Stand-in ${mode}`,
    description: 'A test agent',
    supportedInterfaces: [{ url: `${base}/rpc`, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' }],
    provider: undefined,
    version: '1.0.0',
    capabilities: { streaming: options.streaming, pushNotifications: false, extensions: [], extendedAgentCard: false },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [],
    signatures: [],
  };
  const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), executor);
  app.use((req, _res, next) => {
    headers.push({ ...req.headers });
    next();
  });
  app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: handler }));
  app.use('/rpc', jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
  return {
    cardUrl: `${base}/.well-known/agent-card.json`,
    received,
    cancelled,
    headers,
    async close() {
      for (const resolve of hanging.values()) resolve();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

let server: TestServer;
let stateDir: string;
const cleanup: Array<() => Promise<void>> = [];

beforeAll(async () => {
  server = await startTestServer();
  stateDir = await mkdtemp(path.join(os.tmpdir(), 'a2a-agent-test-'));
});
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step().catch(() => undefined);
});
afterAll(async () => {
  await server?.stop();
  await rm(stateDir, { recursive: true, force: true });
});

let counter = 0;
async function setUp(mode: Mode, options: { streaming: boolean; turnTimeoutMs?: number; marginMs?: number; headers?: Record<string, string> }) {
  counter++;
  const remote = await standIn(mode, options);
  cleanup.push(() => remote.close());
  const person = await registerUser(server, `Pia${counter}`);
  const { room } = await server.ok('create_room', { room_name: `A2A members ${counter}`, language: 'en' }, person.token);
  await server.ok('update_room', { room_id: room.room_id, turn_timeout_ms: options.turnTimeoutMs ?? 20_000, max_auto_rounds: 1 }, person.token);
  const lines: string[] = [];
  const agent: RunningA2aAgent = await runA2aAgent({
    url: server.url,
    rooms: [room.room_id],
    name: `Remote${counter}`,
    card: remote.cardUrl,
    headers: options.headers ?? {},
    maxChars: 8000,
    stateDir,
    ...(options.marginMs !== undefined ? { marginMs: options.marginMs } : {}),
    log: (line) => lines.push(line),
  });
  cleanup.push(() => agent.stop());
  const say = (t: string) => server.ok('send_message', { room_id: room.room_id, text_content: t }, person.token);
  const messages = async () => (await server.ok('get_messages', { room_id: room.room_id, limit: 200 }, person.token)).messages as any[];
  return { remote, person, roomId: room.room_id as string, agent, say, messages, lines, name: `Remote${counter}` };
}

describe('a2a-agent: a remote A2A agent as a member', () => {
  it('answers two turns in one A2A context, the second carrying the new room message (streaming)', async () => {
    const t = await setUp('echo', { streaming: true, headers: { 'X-Api-Key': 'sekrit-key-123' } });
    await t.say('first question about apples');
    await expect.poll(async () => (await t.messages()).filter((m) => m.sender === t.name && m.visible).map((m) => m.text_content), { timeout: 15_000 }).toEqual(['echo: turn 1']);
    await t.say('second question about pears');
    await expect.poll(async () => (await t.messages()).filter((m) => m.sender === t.name && m.visible).map((m) => m.text_content), { timeout: 15_000 }).toEqual([
      'echo: turn 1',
      'echo: turn 2',
    ]);
    expect(t.remote.received).toHaveLength(2);
    const [first, second] = t.remote.received;
    expect(first!.contextId).toBeTruthy();
    expect(second!.contextId).toBe(first!.contextId);
    expect(first!.text).toContain('first question about apples');
    expect(second!.text).toContain('second question about pears');
    expect(second!.text).not.toContain('first question about apples');
    // The credential reached the remote agent and no log line.
    expect(t.remote.headers.every((h) => h['x-api-key'] === 'sekrit-key-123')).toBe(true);
    expect(t.lines.join('\n')).not.toContain('sekrit-key-123');
    expect(t.lines.join('\n')).toContain('X-Api-Key');
  });

  it('cancels a task that never completes shortly before the deadline and passes the turn with the reason (polled)', async () => {
    const t = await setUp('hang', { streaming: false, turnTimeoutMs: 4000, marginMs: 1500 });
    await t.say('please think forever');
    await expect.poll(() => t.remote.cancelled.length, { timeout: 15_000 }).toBe(1);
    await expect
      .poll(async () => (await t.messages()).find((m) => m.sender === t.name && !m.visible), { timeout: 15_000 })
      .toMatchObject({ skip_reason: 'skip', text_content: expect.stringContaining('cancelled') });
    // Passed by the runner before the deadline: no timeout record.
    expect((await t.messages()).some((m) => m.skip_reason === 'timeout')).toBe(false);
  });

  it('shows a failed task as a visible skip with its reason', async () => {
    const t = await setUp('fail', { streaming: true });
    await t.say('do the impossible');
    await expect
      .poll(async () => (await t.messages()).find((m) => m.sender === t.name), { timeout: 15_000 })
      .toMatchObject({ visible: false, skip_reason: 'skip', text_content: expect.stringContaining('model overloaded') });
  });

  it("posts an input-required question as the agent's answer; the next turn answers that task", async () => {
    const t = await setUp('ask', { streaming: false });
    await t.say('what is the weather?');
    await expect
      .poll(async () => (await t.messages()).find((m) => m.sender === t.name), { timeout: 15_000 })
      .toMatchObject({ visible: true, text_content: 'Which city do you mean?' });
    await t.say('Paris');
    await expect
      .poll(async () => (await t.messages()).filter((m) => m.sender === t.name && m.visible).map((m) => m.text_content), { timeout: 15_000 })
      .toEqual(['Which city do you mean?', 'Thanks, noted: Paris']);
    expect(t.remote.received[1]!.sentTaskId).toBe(t.remote.received[0]!.taskId);
    expect(t.remote.received[1]!.contextId).toBe(t.remote.received[0]!.contextId);
  });

  it('refuses to start with an unreachable card or one without a supported interface', async () => {
    const closed = `http://127.0.0.1:${await closedPort()}/.well-known/agent-card.json`;
    await expect(runA2aAgent({ url: server.url, rooms: ['x'], name: 'Nobody', card: closed, headers: {}, maxChars: 100, stateDir })).rejects.toThrow(
      `Cannot read the agent card at ${closed} (connection refused)`,
    );

    const app = express();
    app.get('/.well-known/agent-card.json', (_req, res) => {
      res.json({ name: 'gRPC only', description: '', version: '1', supportedInterfaces: [{ url: 'grpc://127.0.0.1:1', protocolBinding: 'GRPC', protocolVersion: '1.0' }], capabilities: {}, skills: [], defaultInputModes: [], defaultOutputModes: [] });
    });
    const grpcOnly = http.createServer(app);
    await new Promise<void>((resolve) => grpcOnly.listen(0, '127.0.0.1', resolve));
    cleanup.push(() => new Promise<void>((resolve) => grpcOnly.close(() => resolve())));
    const url = `http://127.0.0.1:${(grpcOnly.address() as AddressInfo).port}/.well-known/agent-card.json`;
    await expect(runA2aAgent({ url: server.url, rooms: ['x'], name: 'Nobody', card: url, headers: {}, maxChars: 100, stateDir })).rejects.toThrow(/offers no interface this runner speaks .* it offers GRPC/);
  });
});
