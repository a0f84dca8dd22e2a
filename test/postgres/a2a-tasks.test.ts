// The A2A task table the nodes share (src/storage/postgres/a2a-tasks.ts, docs/a2a.md): a final
// task never changes whichever node writes later, a task is read only by its owner in its room,
// the table keeps at most the bound (the least recently updated forgotten), the open tasks of a
// node that is gone, or stopping, are finished, and a cancel reaches every node's feed.
import { describe, expect, it } from 'vitest';
import { PgA2aTasks } from '../../src/storage/postgres/a2a-tasks.js';
import { RoomFeed } from '../../src/storage/postgres/feed.js';
import { PgStore } from '../../src/storage/postgres/pg-store.js';
import { pgTestsEnabled, usePgServerForFile } from './pg-server.js';

const enabled = pgTestsEnabled();
const { server: pgServer, cleanup } = usePgServerForFile();

async function twoNodes(): Promise<{ a: PgA2aTasks; b: PgA2aTasks; store: PgStore }> {
  const store = new PgStore({ connectionString: await pgServer().createDatabase(), poolSize: 4 });
  await store.open();
  cleanup(() => store.close());
  const pool = store.connectionPool;
  for (const nodeId of ['node-a', 'node-b']) await pool.query('INSERT INTO chatroom_nodes (node_id) VALUES ($1)', [nodeId]);
  return { a: new PgA2aTasks(pool, 'node-a'), b: new PgA2aTasks(pool, 'node-b'), store };
}

const row = (taskId: string, state: string, final = false, ownerId = 'p1', roomId = 'r1') => ({ taskId, ownerId, roomId, final, task: { id: taskId, state } });

describe.skipIf(!enabled)('the shared A2A task table', () => {
  it('never changes a final task, and never lets another owner write or read one', async () => {
    const { a, b } = await twoNodes();
    expect(await a.save(row('t1', 'working'), 1000)).toBe(true);
    expect(await a.save(row('t1', 'working+answer'), 1000)).toBe(true);
    // Cancelled through node B; node A's later writes (an answer, the round's end) are refused.
    expect(await b.save(row('t1', 'canceled', true), 1000)).toBe(true);
    expect(await a.save(row('t1', 'working+2 answers'), 1000)).toBe(false);
    expect(await a.save(row('t1', 'completed', true), 1000)).toBe(false);
    expect(await a.load('t1', 'p1', 'r1')).toEqual({ id: 't1', state: 'canceled' });

    expect(await a.save(row('t2', 'working'), 1000)).toBe(true);
    expect(await b.save(row('t2', 'taken over', false, 'p2'), 1000)).toBe(false);
    expect(await b.save(row('t2', 'moved', false, 'p1', 'r2'), 1000)).toBe(false);
    expect(await b.load('t2', 'p2', 'r1')).toBeUndefined();
    expect(await b.load('t2', 'p1', 'r2')).toBeUndefined();
    expect(await b.load('t2', 'p1', 'r1')).toEqual({ id: 't2', state: 'working' });
    expect(await b.list('p1', 'r1', 10)).toEqual([
      { id: 't2', state: 'working' },
      { id: 't1', state: 'canceled' },
    ]);
    expect(await b.list('p2', 'r1', 10)).toEqual([]);
  });

  it('keeps at most the bound: the least recently updated task is forgotten', async () => {
    const { a } = await twoNodes();
    for (const id of ['t1', 't2', 't3']) await a.save(row(id, 'working'), 3);
    await a.save(row('t1', 'working+answer'), 3); // t1 is now the most recently updated
    await a.save(row('t4', 'working'), 3);
    expect(await a.load('t2', 'p1', 'r1')).toBeUndefined();
    expect((await a.list('p1', 'r1', 10)).map((t) => (t as { id: string }).id)).toEqual(['t4', 't1', 't3']);
  });

  it("finishes the open tasks of a node that is gone, and a stopping node's own", async () => {
    const { a, b, store } = await twoNodes();
    await a.save(row('a-open', 'working'), 1000);
    await a.save(row('a-done', 'completed', true), 1000);
    await b.save(row('b-open', 'working'), 1000);
    const finish = (task: unknown) => ({ ...(task as object), state: 'failed' });
    // Both nodes live: nothing is orphaned.
    expect(await b.finishOrphans(finish)).toBe(0);
    // Node A's presence expired (the sweep deleted its row): its open task ends, once.
    await store.connectionPool.query("DELETE FROM chatroom_nodes WHERE node_id = 'node-a'");
    expect(await b.finishOrphans(finish)).toBe(1);
    expect(await b.finishOrphans(finish)).toBe(0);
    expect(await b.load('a-open', 'p1', 'r1')).toEqual({ id: 'a-open', state: 'failed' });
    expect(await b.load('a-done', 'p1', 'r1')).toEqual({ id: 'a-done', state: 'completed' });
    expect(await b.load('b-open', 'p1', 'r1')).toEqual({ id: 'b-open', state: 'working' });
    // A final task stays final: node A coming back cannot write it again.
    expect(await a.save(row('a-open', 'completed', true), 1000)).toBe(false);
    // Node B stops: its own open task ends.
    expect(await b.finishOwn(finish)).toBe(1);
    expect(await b.load('b-open', 'p1', 'r1')).toEqual({ id: 'b-open', state: 'failed' });
  });

  it("announces a cancel to every node's feed", async () => {
    const { a, store } = await twoNodes();
    const heard: string[] = [];
    const feed = new RoomFeed({ connectionString: store.connectionString, onChange: () => undefined, onA2aTaskCanceled: (id) => heard.push(id) });
    await feed.start();
    cleanup(() => feed.stop());
    await a.announceCancel('3f8a2c1e-task');
    await expect.poll(() => heard).toEqual(['3f8a2c1e-task']);
  });
});
