// Stored turn deadlines: kept in step with the room state by commits, claimed exactly once
// across nodes, taken over when a claiming node dies (its lease runs out).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { completeDeadline, claimDueDeadlines, DeadlineWatcher, storedDeadline, turnDeadlineOf, type DueDeadline } from '../../src/storage/postgres/deadlines.js';
import { PgStore } from '../../src/storage/postgres/pg-store.js';
import { commitWithRetry } from '../../src/storage/postgres/stale-retry.js';
import type { CurrentRound } from '../../src/rounds/types.js';
import type { RoomRecord } from '../../src/types.js';
import { makeMessage, makeRoom } from '../unit/storage-helpers.js';
import { pgTestsEnabled, startPgServer, type PgServer } from './pg-server.js';

const enabled = pgTestsEnabled();

function running(agent: string, deadline: Date | null, index = 0, roundId = 'round-1'): CurrentRound {
  return {
    round_id: roundId,
    kind: 'rotation',
    start_time: '2026-01-01T00:00:00.000Z',
    current_agent_index: index,
    agent_queue: ['Alpha', 'Beta'],
    pending_mentions: [],
    guard_count: 0,
    completed: false,
    turn: { agent, can_skip: true, reason: 'rotation', deadline: deadline?.toISOString() ?? null, posted: 0 },
  };
}

function ended(): CurrentRound {
  return { ...running('Alpha', null), completed: true, turn: null, end_reason: 'completed' } as CurrentRound;
}

const withRound = (room: RoomRecord, round: CurrentRound | null): RoomRecord => ({ ...room, current_round: round });
const inMs = (ms: number) => new Date(Date.now() + ms);

describe('turnDeadlineOf', () => {
  it('names the running turn\'s deadline, and nothing when no timer runs', () => {
    const at = new Date('2026-05-01T10:00:00Z');
    expect(turnDeadlineOf(withRound(makeRoom('r'), running('Alpha', at)))).toEqual({
      deadline: '2026-05-01T10:00:00.000Z',
      turnKey: 'round-1/0/Alpha/2026-05-01T10:00:00.000Z',
    });
    expect(turnDeadlineOf(withRound(makeRoom('r'), running('Alpha', null)))).toBeNull();
    expect(turnDeadlineOf(withRound(makeRoom('r'), ended()))).toBeNull();
    expect(turnDeadlineOf(makeRoom('r'))).toBeNull();
  });
});

describe.skipIf(!enabled)('stored deadlines', () => {
  let server: PgServer;
  let a: PgStore;
  let b: PgStore;
  beforeAll(async () => {
    server = await startPgServer();
    const url = await server.createDatabase();
    [a, b] = [new PgStore({ connectionString: url, poolSize: 10 }), new PgStore({ connectionString: url, poolSize: 10 })];
    await a.open();
    await b.open();
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await server?.stop();
  });

  /** Creates a room whose running turn is due at `deadline`. */
  async function roomDueAt(roomId: string, deadline: Date): Promise<number> {
    const v = await a.createRoom(makeRoom(roomId));
    return a.commitRoom(roomId, { room: withRound(makeRoom(roomId), running('Alpha', deadline)), messages: [], expectedVersion: v });
  }

  it('commits keep the row in step with the room: set, kept (with its claim) for the same turn, replaced, removed', async () => {
    const pool = a.connectionPool;
    const past = inMs(-1_000);
    let v = await roomDueAt('keep', past);
    expect(await storedDeadline(pool, 'keep')).toEqual({ deadline: past, turnKey: turnDeadlineOf(withRound(makeRoom('keep'), running('Alpha', past)))!.turnKey });

    const [claim] = (await claimDueDeadlines(pool, 'node-a')).filter((d) => d.roomId === 'keep');
    expect(claim).toBeDefined();
    // A commit that leaves the turn as it is (a post, a state change) keeps the claim.
    const same = withRound(makeRoom('keep', { room_description: 'changed' }), running('Alpha', past));
    v = await a.commitRoom('keep', { room: same, messages: [makeMessage('keep', 1)], expectedVersion: v });
    v = await a.commitRoom('keep', { messages: [makeMessage('keep', 2)], expectedVersion: v });
    expect((await claimDueDeadlines(pool, 'node-b')).map((d) => d.roomId)).not.toContain('keep');

    // The next turn replaces it, unclaimed.
    const next = inMs(-500);
    v = await a.commitRoom('keep', { room: withRound(makeRoom('keep'), running('Beta', next, 1)), messages: [], expectedVersion: v });
    expect((await storedDeadline(pool, 'keep'))?.turnKey).toContain('/1/Beta/');
    expect((await claimDueDeadlines(pool, 'node-b')).map((d) => d.roomId)).toContain('keep');

    // Paused (no deadline) or ended: no row.
    v = await a.commitRoom('keep', { room: withRound(makeRoom('keep'), running('Beta', null, 1)), messages: [], expectedVersion: v });
    expect(await storedDeadline(pool, 'keep')).toBeUndefined();
    v = await a.commitRoom('keep', { room: withRound(makeRoom('keep'), running('Beta', inMs(60_000), 1)), messages: [], expectedVersion: v });
    expect(await storedDeadline(pool, 'keep')).toBeDefined();
    expect((await claimDueDeadlines(pool, 'node-b')).map((d) => d.roomId)).not.toContain('keep'); // not due yet
    await a.commitRoom('keep', { room: withRound(makeRoom('keep'), ended()), messages: [], expectedVersion: v });
    expect(await storedDeadline(pool, 'keep')).toBeUndefined();
  });

  it('two nodes racing to claim: every due deadline is claimed exactly once', async () => {
    const rooms = Array.from({ length: 40 }, (_, i) => `race-${i}`);
    for (const roomId of rooms) await roomDueAt(roomId, inMs(-100));
    const claims: { node: string; due: DueDeadline }[] = [];
    const claimer = async (node: string, store: PgStore) => {
      for (;;) {
        const got = (await claimDueDeadlines(store.connectionPool, node, { limit: 3 })).filter((d) => d.roomId.startsWith('race-'));
        if (got.length === 0) return;
        claims.push(...got.map((due) => ({ node, due })));
      }
    };
    await Promise.all([1, 2, 3, 4, 5, 6].flatMap((i) => [claimer(`a${i}`, a), claimer(`b${i}`, b)]));
    const claimed = claims.map((c) => c.due.roomId).sort();
    expect(claimed).toEqual([...rooms].sort());
    expect(new Set(claims.map((c) => c.node[0])).size).toBe(2); // both nodes took part
  });

  it('a claim whose node died runs out, and another node takes the deadline over', async () => {
    await roomDueAt('orphan', inMs(-100));
    const first = await claimDueDeadlines(a.connectionPool, 'dying-node', { leaseMs: 300 });
    expect(first.map((d) => d.roomId)).toContain('orphan');
    // Node A "dies" without firing. Node B gets nothing while the lease holds…
    expect((await claimDueDeadlines(b.connectionPool, 'node-b')).map((d) => d.roomId)).not.toContain('orphan');
    // …and the deadline once it ran out.
    await expect
      .poll(async () => (await claimDueDeadlines(b.connectionPool, 'node-b')).map((d) => d.roomId), { timeout: 5_000, interval: 50 })
      .toContain('orphan');
    // A fire that changed nothing completes it (only while it still has that key).
    const key = (await storedDeadline(b.connectionPool, 'orphan'))!.turnKey;
    expect(await completeDeadline(b.connectionPool, 'orphan', 'another-key')).toBe(false);
    expect(await completeDeadline(b.connectionPool, 'orphan', key)).toBe(true);
    expect(await storedDeadline(b.connectionPool, 'orphan')).toBeUndefined();
  });

  it('watchers on two nodes fire each deadline once, through a room commit', async () => {
    const rooms = Array.from({ length: 12 }, (_, i) => `watch-${i}`);
    for (const [i, roomId] of rooms.entries()) await roomDueAt(roomId, inMs(100 + i * 20));
    const fired: { node: string; roomId: string }[] = [];
    const fire = (node: string, store: PgStore) => async (due: DueDeadline) => {
      if (!due.roomId.startsWith('watch-')) return;
      // What a room runtime does: act only if the turn is still the one that timed out.
      const done = await commitWithRetry(store, due.roomId, (loaded) =>
        turnDeadlineOf(loaded.room)?.turnKey === due.turnKey ? { room: withRound(loaded.room, ended()), messages: [] } : null,
      );
      if (done) fired.push({ node, roomId: due.roomId });
      else await completeDeadline(store.connectionPool, due.roomId, due.turnKey);
    };
    const watchers = [
      new DeadlineWatcher(a.connectionPool, 'node-a', fire('node-a', a), { pollMs: 50 }),
      new DeadlineWatcher(b.connectionPool, 'node-b', fire('node-b', b), { pollMs: 50 }),
    ];
    watchers.forEach((w) => w.start());
    try {
      await expect.poll(() => fired.length, { timeout: 10_000 }).toBe(rooms.length);
      expect(fired.map((f) => f.roomId).sort()).toEqual([...rooms].sort());
      for (const roomId of rooms) expect(await storedDeadline(a.connectionPool, roomId)).toBeUndefined();
    } finally {
      await Promise.all(watchers.map((w) => w.stop()));
    }
  });
});
