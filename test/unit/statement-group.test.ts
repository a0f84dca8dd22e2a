// StatementGroup: the items of one event-loop turn go together, and so do the items that wait
// while every slot is busy.
import { describe, expect, it } from 'vitest';
import { StatementGroup } from '../../src/storage/postgres/statement-group.js';

/** A run whose statements the test finishes by hand; it records the groups it was given. */
function manualRun() {
  const groups: number[][] = [];
  const finish: ((ok: boolean) => void)[] = [];
  const run = (items: number[]): Promise<Promise<number>[]> => {
    groups.push(items);
    return new Promise((resolve, reject) => {
      finish.push((ok) => (ok ? resolve(items.map((i) => (i < 0 ? Promise.reject(new Error(`refused ${i}`)) : Promise.resolve(i * 10)))) : reject(new Error('statement failed'))));
    });
  };
  return { run, groups, finish };
}

const endOfTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('StatementGroup', () => {
  it('sends the items of one turn together at its end, then groups what waits for a slot, up to maxGroup', async () => {
    const { run, groups, finish } = manualRun();
    const group = new StatementGroup(run, { slots: 2, maxGroup: 3 });
    const first = [1, 2].map((i) => group.submit(i));
    expect(groups).toEqual([]);
    await endOfTurn();
    expect(groups).toEqual([[1, 2]]);
    const second = [3].map((i) => group.submit(i));
    await endOfTurn();
    expect(groups).toEqual([[1, 2], [3]]);
    // Both slots busy: these wait, and go as groups of at most 3 when slots free up.
    const waiting = [4, 5, 6, 7].map((i) => group.submit(i));
    await endOfTurn();
    expect(groups).toHaveLength(2);
    finish[0]!(true);
    expect(await Promise.all(first)).toEqual([10, 20]);
    expect(groups).toEqual([[1, 2], [3], [4, 5, 6]]);
    finish[1]!(true);
    await second[0];
    expect(groups).toEqual([[1, 2], [3], [4, 5, 6], [7]]);
    finish[2]!(true);
    finish[3]!(true);
    expect(await Promise.all(waiting)).toEqual([40, 50, 60, 70]);
  });

  it('answers each item of a group alone, and every item of a statement that failed', async () => {
    const { run, finish } = manualRun();
    const group = new StatementGroup(run, { slots: 1, maxGroup: 10 });
    const first = group.submit(1);
    await endOfTurn();
    const grouped = [2, -3, 4].map((i) => group.submit(i));
    await endOfTurn();
    finish[0]!(false);
    await expect(first).rejects.toThrow('statement failed');
    await expect.poll(() => finish.length).toBe(2);
    finish[1]!(true);
    const settled = await Promise.allSettled(grouped);
    expect(settled.map((s) => (s.status === 'fulfilled' ? s.value : (s.reason as Error).message))).toEqual([20, 'refused -3', 40]);
    // The slot is free again: the next item goes at the end of its turn.
    const next = group.submit(5);
    await endOfTurn();
    expect(finish).toHaveLength(3);
    finish[2]!(true);
    expect(await next).toBe(50);
  });
});
