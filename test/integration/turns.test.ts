// The turn engine on the real server (test/suites/turn-engine.ts, shared with the PostgreSQL
// run), and restarts in the middle of a turn on the file store.
import { describe, expect, it } from 'vitest';
import { restCall, spawnServer } from '../helpers/process.js';
import { tempDataDir } from '../helpers/server.js';
import { turnEngineSuites } from '../suites/turn-engine.js';

turnEngineSuites();

describe('restart in the middle of a turn', () => {
  it('keeps the turn holder after SIGKILL with a fresh full deadline', async () => {
    const dataDir = await tempDataDir();
    const first = await spawnServer({ DATA_DIR: dataDir, TURN_TIMEOUT_MS: '60000' });
    const user = (await restCall(first.url, 'register_user', { name: 'U' })).body.data;
    const a = (await restCall(first.url, 'register_agent', { name: 'A' })).body.data;
    const b = (await restCall(first.url, 'register_agent', { name: 'B' })).body.data;
    const room = (await restCall(first.url, 'create_room', { room_name: 'Restart' }, user.token)).body.data.room;
    await restCall(first.url, 'join_room', { room_id: room.room_id }, a.token);
    await restCall(first.url, 'join_room', { room_id: room.room_id }, b.token);
    await restCall(first.url, 'send_message', { room_id: room.room_id, text_content: 'go' }, user.token);
    const before = (await restCall(first.url, 'get_room', { room_id: room.room_id }, user.token)).body.data.room;
    expect(before.current_round.turn.agent).toBe('A');
    first.child.kill('SIGKILL');
    await first.exited;

    // The restart issues the turn again with the whole TURN_TIMEOUT_MS (60 s here) from the
    // moment it does so, somewhere between this spawn and the server answering: not the old
    // deadline, and not what was left of it.
    const restarting = Date.now();
    const second = await spawnServer({ DATA_DIR: dataDir, TURN_TIMEOUT_MS: '60000' });
    try {
      const ready = Date.now();
      const after = (await restCall(second.url, 'get_room', { room_id: room.room_id }, user.token)).body.data.room;
      expect(after.current_round.turn.agent).toBe('A');
      const deadline = Date.parse(after.current_round.turn.deadline);
      expect(deadline).toBeGreaterThanOrEqual(restarting + 60_000);
      expect(deadline).toBeLessThanOrEqual(ready + 60_000);
      // The holder is told so in its context as well.
      const context = (await restCall(second.url, 'get_context', { room_id: room.room_id }, a.token)).body.data;
      expect(context.your_turn.deadline).toBe(after.current_round.turn.deadline);
      const answer = await restCall(second.url, 'send_message', { room_id: room.room_id, text_content: 'A after restart' }, a.token);
      expect(answer.body.ok).toBe(true);
      const next = (await restCall(second.url, 'get_room', { room_id: room.room_id }, user.token)).body.data.room;
      expect(next.current_round.turn.agent).toBe('B');
    } finally {
      second.child.kill('SIGTERM');
      await second.exited;
    }
  });

  it('keeps a mention chain (pending_mentions) across SIGKILL', async () => {
    const dataDir = await tempDataDir();
    const env = { DATA_DIR: dataDir, TURN_TIMEOUT_MS: '60000' };
    const first = await spawnServer(env);
    const user = (await restCall(first.url, 'register_user', { name: 'U' })).body.data;
    const agents: Record<string, { token: string }> = {};
    const room = (await restCall(first.url, 'create_room', { room_name: 'Chain' }, user.token)).body.data.room;
    for (const name of ['A', 'B', 'C']) {
      agents[name] = (await restCall(first.url, 'register_agent', { name })).body.data;
      await restCall(first.url, 'join_room', { room_id: room.room_id }, agents[name]!.token);
    }
    await restCall(first.url, 'send_message', { room_id: room.room_id, text_content: '@B @C 你们怎么看？' }, user.token);
    const before = (await restCall(first.url, 'get_room', { room_id: room.room_id }, user.token)).body.data.room;
    expect(before.current_round).toMatchObject({ pending_mentions: ['B', 'C'], turn: { agent: 'B', reason: 'mention' } });
    first.child.kill('SIGKILL');
    await first.exited;

    const second = await spawnServer(env);
    try {
      const get = async () => (await restCall(second.url, 'get_room', { room_id: room.room_id }, user.token)).body.data.room;
      expect((await get()).current_round).toMatchObject({
        agent_queue: before.current_round.agent_queue,
        pending_mentions: ['B', 'C'],
        turn: { agent: 'B', reason: 'mention', can_skip: false },
      });
      const answer = (name: string) =>
        restCall(second.url, 'send_message', { room_id: room.room_id, text_content: `${name} answers` }, agents[name]!.token);
      expect((await answer('B')).body.ok).toBe(true);
      expect((await get()).current_round).toMatchObject({
        round_id: before.current_round.round_id,
        pending_mentions: ['C'],
        turn: { agent: 'C', reason: 'mention', can_skip: false },
      });
      expect((await answer('C')).body.ok).toBe(true);
      // The chain ended that round before A was asked (a follow-up round has started since).
      const after = await get();
      expect(after.history_rounds).toContain(before.current_round.round_id);
      expect(after.current_round.round_id).not.toBe(before.current_round.round_id);
      const { messages } = (await restCall(second.url, 'get_messages', { room_id: room.room_id, after_seq: 0 }, user.token)).body.data;
      expect(messages.filter((m: any) => m.round_id === before.current_round.round_id).map((m: any) => m.sender)).toEqual(['B', 'C']);
    } finally {
      second.child.kill('SIGTERM');
      await second.exited;
    }
  });
});
