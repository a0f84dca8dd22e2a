// SPEC v2 §3: people stay in charge of agents. Every person member may pause/resume a room and
// call start_round, even in a room an agent created; a non-admin agent may do neither
// (forbidden, permission checked first); an admin agent's start_round never resets a tripped
// loop guard (conflict, details.reason "guard"), a person's does.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { roomWithNewMembers, startTestServer, type TestServer } from '../helpers/server.js';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server.stop();
});

describe('people stay in charge (SPEC v2 §3)', () => {
  it('a person member pauses, resumes and starts rounds in a room an agent created; a non-admin agent cannot', async () => {
    const { room, members: [creator, helper, person] } = await roomWithNewMembers(server, 'Agent made', { Founder: 'agent', Helper: 'agent', Guardian: 'user' });

    for (const [tool, args] of [
      ['set_room_status', { room_id: room.room_id, system_status: 'paused' }],
      ['start_round', { room_id: room.room_id }],
    ] as const) {
      const refused = await server.call(tool, args, helper.token);
      expect(refused.status, tool).toBe(403);
      if (!refused.body.ok) expect(refused.body.error.code).toBe('forbidden');
    }

    const paused = await server.ok('set_room_status', { room_id: room.room_id, system_status: 'paused' }, person.token);
    expect(paused.room.system_status).toBe('paused');
    await server.ok('set_room_status', { room_id: room.room_id, system_status: 'active' }, person.token);
    const { round } = await server.ok('start_round', { room_id: room.room_id }, person.token);
    expect(round).toMatchObject({ completed: false, agent_queue: ['Founder', 'Helper'] });
  });

  it("an admin agent's start_round never resets a tripped guard; a person's does", async () => {
    const { room, members: [creator, other, person] } = await roomWithNewMembers(server, 'Guarded', { Boss: 'agent', Worker: 'agent', Watcher: 'user' });
    await server.ok('update_room', { room_id: room.room_id, max_auto_rounds: 1 }, creator.token);
    // One round of two answers trips the guard (1 round × 2 agents).
    await server.ok('send_message', { room_id: room.room_id, text_content: 'go' }, person.token);
    await server.ok('send_message', { room_id: room.room_id, text_content: 'boss answers' }, creator.token);
    await server.ok('send_message', { room_id: room.room_id, text_content: 'worker answers' }, other.token);
    const { room: tripped } = await server.ok('get_room', { room_id: room.room_id }, person.token);
    expect(tripped.current_round).toMatchObject({ completed: true, end_reason: 'guard' });

    const refused = await server.call('start_round', { room_id: room.room_id }, creator.token);
    expect(refused.status).toBe(409);
    if (!refused.body.ok) expect(refused.body.error).toMatchObject({ code: 'conflict', details: { reason: 'guard' } });

    const { round } = await server.ok('start_round', { room_id: room.room_id }, person.token);
    expect(round).toMatchObject({ completed: false, guard_count: 0 });
  });
});
