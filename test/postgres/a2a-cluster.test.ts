// SPEC §11/§12: a room's A2A interface answers on any node. The agents are connected to node A;
// the member's A2A client talks to node B, which learns of the answers and of the round's end
// only from the shared event feed. Tasks are kept in PostgreSQL (docs/a2a.md): GetTask and
// CancelTask answer on every node, only for the task's owner, and a task whose node died ends.
import { TaskState, type Task } from '@a2a-js/sdk';
import type { Client } from '@a2a-js/sdk/client';
import { afterAll, describe, expect, it } from 'vitest';
import type { ChatroomClient } from '../../src/client/index.js';
import type { ServerProcess } from '../helpers/process.js';
import { a2aClient, answeringAgent, artifactTexts, bearer, sendRequest } from '../helpers/a2a.js';
import { kill, ok, spawnNode, useClusterNodes } from './cluster-nodes.js';
import { pgTestsEnabled } from './pg-server.js';

const enabled = pgTestsEnabled();
const cluster = useClusterNodes();
const agents: ChatroomClient[] = [];
const processes: ServerProcess[] = [];
afterAll(async () => {
  for (const agent of agents) await agent.close();
  for (const node of processes) node.child.kill('SIGKILL');
});

const stateOf = async (client: Client, id: string, token: string) => (await client.getTask({ tenant: '', id }, bearer(token))).status?.state;
const setStatus = (url: string, roomId: string, status: 'paused' | 'active', token: string) =>
  ok(url, 'set_room_status', { room_id: roomId, system_status: status }, token);

/**
 * A person's room, created through `url`, with answering agents connected to the nodes named
 * (`[node url, agent name]`), then paused: a message sent into it waits, so its task stays
 * working until the room is resumed (docs/a2a.md).
 */
/** ListTasks of a room's context: the first 10, artifacts included. */
const listRequest = (roomId: string) => ({
  tenant: '',
  contextId: roomId,
  status: 0,
  pageSize: 10,
  pageToken: '',
  historyLength: undefined,
  statusTimestampAfter: undefined,
  includeArtifacts: true,
});

async function pausedRoom(url: string, personName: string, roomName: string, agentsOn: Array<[string, string]>) {
  const person = await ok(url, 'register_user', { name: personName });
  const { room } = await ok(url, 'create_room', { room_name: roomName, language: 'en' }, person.token);
  const members = [];
  for (const [nodeUrl, name] of agentsOn) {
    const agent = await answeringAgent(nodeUrl, name, room.room_id);
    agents.push(agent.client);
    members.push(agent);
  }
  await setStatus(url, room.room_id, 'paused', person.token);
  return { person, roomId: room.room_id as string, members };
}

describe.skipIf(!enabled)('a room as an A2A agent on several nodes', () => {
  it("node B completes the task with the answers of agents connected to node A, streamed in order", async () => {
    const site = await cluster.newSite();
    const a = await cluster.node(site);
    const b = await cluster.node(site);
    const person = await ok(a.url, 'register_user', { name: 'Nora' });
    const { room } = await ok(a.url, 'create_room', { room_name: 'Across nodes', language: 'en' }, person.token);
    const first = await answeringAgent(a.url, 'Kappa', room.room_id);
    const second = await answeringAgent(a.url, 'Lambda', room.room_id);
    agents.push(first.client, second.client);

    const client = await a2aClient(b.url, room.room_id);
    const names: string[] = [];
    let final: TaskState | undefined;
    for await (const event of client.sendMessageStream(sendRequest('hello from node B'), bearer(person.token))) {
      const payload = event.payload;
      if (payload?.$case === 'artifactUpdate') names.push(payload.value.artifact!.name);
      if (payload?.$case === 'statusUpdate') final = payload.value.status!.state;
    }
    expect(names).toEqual(['Kappa', 'Lambda']);
    expect(final).toBe(TaskState.TASK_STATE_COMPLETED);

    // Both answered, so a follow-up round runs (SPEC §6.1.1; both pass it): wait until the room is
    // idle, so the next message starts a round of its own.
    await expect
      .poll(async () => (await ok(b.url, 'get_room', { room_id: room.room_id }, person.token)).room.current_round?.completed, { timeout: 15_000 })
      .toBe(true);
    const task = (await client.sendMessage(sendRequest('and once more'), bearer(person.token))) as Task;
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(artifactTexts(task)).toEqual([
      { name: 'Kappa', text: 'Kappa heard: and once more' },
      { name: 'Lambda', text: 'Lambda heard: and once more' },
    ]);
  });

  it('GetTask on node B follows a task node A took: working, then completed with the answers; only its owner reads it', async () => {
    const site = await cluster.newSite();
    const a = await cluster.node(site);
    const b = await cluster.node(site);
    const { person, roomId, members } = await pausedRoom(a.url, 'Olga', 'Tasks across nodes', [
      [b.url, 'Mu'],
      [b.url, 'Nu'],
    ]);
    const first = members[0]!;

    const onA = await a2aClient(a.url, roomId);
    const onB = await a2aClient(b.url, roomId);
    const started = (await onA.sendMessage(sendRequest('what do you think?', true), bearer(person.token))) as Task;
    expect(started.status?.state).toBe(TaskState.TASK_STATE_WORKING);
    const read = await onB.getTask({ tenant: '', id: started.id }, bearer(person.token));
    expect(read.id).toBe(started.id);
    expect(read.contextId).toBe(roomId);
    expect(read.status?.state).toBe(TaskState.TASK_STATE_WORKING);
    // Another member of the room, on the same node: not found, nothing learnt.
    await expect(onB.getTask({ tenant: '', id: started.id }, bearer(first.token))).rejects.toThrow(/not found/i);
    await expect(onA.getTask({ tenant: '', id: started.id }, bearer(first.token))).rejects.toThrow(/not found/i);

    await setStatus(b.url, roomId, 'active', person.token);
    await expect.poll(() => stateOf(onB, started.id, person.token), { timeout: 15_000 }).toBe(TaskState.TASK_STATE_COMPLETED);
    const done = await onB.getTask({ tenant: '', id: started.id }, bearer(person.token));
    expect(artifactTexts(done)).toEqual([
      { name: 'Mu', text: 'Mu heard: what do you think?' },
      { name: 'Nu', text: 'Nu heard: what do you think?' },
    ]);
    // ListTasks on B shows the owner's task, and no one else's.
    const listed = await onB.listTasks(listRequest(roomId), bearer(person.token));
    expect(listed.tasks.map((t) => t.id)).toEqual([started.id]);
    const others = await onB.listTasks(listRequest(roomId), bearer(first.token));
    expect(others.tasks).toEqual([]);
  });

  it('CancelTask on node C cancels a task node A follows: A stops waiting, every node reads canceled, the room goes on', async () => {
    const site = await cluster.newSite();
    const a = await cluster.node(site);
    const b = await cluster.node(site);
    const c = await cluster.node(site);
    const { person, roomId, members } = await pausedRoom(a.url, 'Pia', 'Cancel across nodes', [
      [a.url, 'Xi'],
      [b.url, 'Omicron'],
    ]);
    const first = members[0]!;

    const onA = await a2aClient(a.url, roomId);
    const onB = await a2aClient(b.url, roomId);
    const onC = await a2aClient(c.url, roomId);
    // The member streams the task from node A; the cancel comes through node C.
    let taskId = '';
    let canceledOnC: Task | undefined;
    const states: TaskState[] = [];
    for await (const event of onA.sendMessageStream(sendRequest('please wait for me'), bearer(person.token))) {
      const payload = event.payload;
      if (payload?.$case === 'artifactUpdate') throw new Error(`unexpected answer ${payload.value.artifact!.name}`);
      if (payload?.$case === 'statusUpdate') states.push(payload.value.status!.state);
      if (payload?.$case === 'task' && !taskId) {
        taskId = payload.value.id;
        expect(await stateOf(onB, taskId, person.token)).toBe(TaskState.TASK_STATE_WORKING);
        // Not the owner: not found on C either, and the task is untouched.
        await expect(onC.cancelTask({ tenant: '', id: taskId, metadata: {} }, bearer(first.token))).rejects.toThrow(/not found/i);
        canceledOnC = await onC.cancelTask({ tenant: '', id: taskId, metadata: {} }, bearer(person.token));
      }
    }
    // Node A ended its stream with the cancel: it stopped waiting for the round.
    expect(canceledOnC?.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    expect(states.at(-1)).toBe(TaskState.TASK_STATE_CANCELED);
    expect(await stateOf(onA, taskId, person.token)).toBe(TaskState.TASK_STATE_CANCELED);
    expect(await stateOf(onB, taskId, person.token)).toBe(TaskState.TASK_STATE_CANCELED);

    // The room was never stopped: resumed, the message's round runs and both agents answer it.
    const { room: now } = await ok(b.url, 'get_room', { room_id: roomId }, person.token);
    expect(now.system_status).toBe('paused');
    await setStatus(b.url, roomId, 'active', person.token);
    const answers = async () =>
      (await ok(c.url, 'get_messages', { room_id: roomId, limit: 50 }, person.token)).messages
        .filter((m: { role: string; text_content: string }) => m.role === 'ai_agent' && m.text_content.endsWith('heard: please wait for me'))
        .map((m: { sender: string }) => m.sender)
        .sort();
    await expect.poll(answers, { timeout: 15_000 }).toEqual(['Omicron', 'Xi']);
    // The answers came after the cancel: the task stays canceled, without them, on every node.
    for (const client of [onA, onB, onC]) {
      const task = await client.getTask({ tenant: '', id: taskId }, bearer(person.token));
      expect(task.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
      expect(task.artifacts).toEqual([]);
    }
  });

  it("a node that dies leaves no task working: a cancel on another node sticks, the node's other tasks end failed", async () => {
    const site = await cluster.newSite();
    // Node B (here) takes a node for dead 3 s after its last heartbeat; node A is a process to kill.
    const b = await cluster.node(site, {}, { socketGraceMs: 3000 });
    const a = await spawnNode(site);
    processes.push(a);
    const { person, roomId } = await pausedRoom(b.url, 'Quinn', 'A node dies', [[b.url, 'Rho']]);

    const onA = await a2aClient(a.url, roomId);
    const onB = await a2aClient(b.url, roomId);
    const toCancel = (await onA.sendMessage(sendRequest('first question', true), bearer(person.token))) as Task;
    const left = (await onA.sendMessage(sendRequest('second question', true), bearer(person.token))) as Task;
    expect(await stateOf(onB, toCancel.id, person.token)).toBe(TaskState.TASK_STATE_WORKING);
    expect(await stateOf(onB, left.id, person.token)).toBe(TaskState.TASK_STATE_WORKING);

    await kill(a);
    // The node following it is gone: the node that gets the cancel stores it.
    const canceled = await onB.cancelTask({ tenant: '', id: toCancel.id, metadata: {} }, bearer(person.token));
    expect(canceled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    // The other task does not stay working forever: once node A's presence expires it ends failed.
    await expect.poll(() => stateOf(onB, left.id, person.token), { timeout: 20_000 }).toBe(TaskState.TASK_STATE_FAILED);
    const failed = await onB.getTask({ tenant: '', id: left.id }, bearer(person.token));
    const reason = failed.status?.message?.parts.map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('');
    expect(reason).toMatch(/stopped before its round ended/);
    expect(await stateOf(onB, toCancel.id, person.token)).toBe(TaskState.TASK_STATE_CANCELED);
    // The room goes on: resumed, the messages still get their answers.
    await setStatus(b.url, roomId, 'active', person.token);
    await expect
      .poll(async () => (await ok(b.url, 'get_messages', { room_id: roomId, limit: 50 }, person.token)).messages.some((m: { text_content: string }) => m.text_content.startsWith('Rho heard:')), {
        timeout: 15_000,
      })
      .toBe(true);
  });

  it('a node that stops cleanly ends the tasks it was following at once: failed, read on another node', async () => {
    const site = await cluster.newSite();
    const a = await cluster.node(site);
    const b = await cluster.node(site);
    const { person, roomId } = await pausedRoom(b.url, 'Rosa', 'A node stops', [[b.url, 'Sigma']]);
    const onA = await a2aClient(a.url, roomId);
    const onB = await a2aClient(b.url, roomId);
    const task = (await onA.sendMessage(sendRequest('still there?', true), bearer(person.token))) as Task;
    expect(await stateOf(onB, task.id, person.token)).toBe(TaskState.TASK_STATE_WORKING);
    await a.close();
    expect(await stateOf(onB, task.id, person.token)).toBe(TaskState.TASK_STATE_FAILED);
  });
});
