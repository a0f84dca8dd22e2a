// SPEC §11/§12: a room's A2A interface answers on any node. The agents are connected to node A;
// the member's A2A client talks to node B, which learns of the answers and of the round's end
// only from the shared event feed.
import { TaskState, type Task } from '@a2a-js/sdk';
import { afterAll, describe, expect, it } from 'vitest';
import type { ChatroomClient } from '../../src/client/index.js';
import { a2aClient, answeringAgent, artifactTexts, bearer, sendRequest } from '../helpers/a2a.js';
import { ok, useClusterNodes } from './cluster-nodes.js';
import { pgTestsEnabled } from './pg-server.js';

const enabled = pgTestsEnabled();
const cluster = useClusterNodes();
const agents: ChatroomClient[] = [];
afterAll(async () => {
  for (const agent of agents) await agent.close();
});

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
});
