// StatementGroup: items go alone while a slot is free, and together once every slot is busy.
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

describe('StatementGroup', () => {
  it('sends an item alone while a slot is free, then groups what waits, up to maxGroup', async () => {
    const { run, groups, finish } = manualRun();
    const group = new StatementGroup(run, { slots: 2, maxGroup: 3 });
    const results = [1, 2, 3, 4, 5, 6, 7].map((i) => group.submit(i));
    expect(groups).toEqual([[1], [2]]);
    finish[0]!(true);
    expect(await results[0]).toBe(10);
    expect(groups).toEqual([[1], [2], [3, 4, 5]]);
    finish[1]!(true);
    await results[1];
    expect(groups).toEqual([[1], [2], [3, 4, 5], [6, 7]]);
    finish[2]!(true);
    finish[3]!(true);
    expect(await Promise.all(results)).toEqual([10, 20, 30, 40, 50, 60, 70]);
  });

  it('answers each item of a group alone, and every item of a statement that failed', async () => {
    const { run, finish } = manualRun();
    const group = new StatementGroup(run, { slots: 1, maxGroup: 10 });
    const first = group.submit(1);
    const grouped = [2, -3, 4].map((i) => group.submit(i));
    finish[0]!(false);
    await expect(first).rejects.toThrow('statement failed');
    await expect.poll(() => finish.length).toBe(2);
    finish[1]!(true);
    const settled = await Promise.allSettled(grouped);
    expect(settled.map((s) => (s.status === 'fulfilled' ? s.value : (s.reason as Error).message))).toEqual([20, 'refused -3', 40]);
    // The slot is free again: the next item goes alone at once.
    const next = group.submit(5);
    expect(finish).toHaveLength(3);
    finish[2]!(true);
    expect(await next).toBe(50);
  });
});
