// The stored last_active (identity/last-active.ts) on a manual clock: after calls at most every
// 5 s, the callers of 250 ms in one batch, every 30 s while a socket or wait is open, and
// everything newer at shutdown.
import { describe, expect, it } from 'vitest';
import { CALL_BATCH_MS, CALL_PERSIST_MS, LastActiveRecorder, SOCKET_PERSIST_MS } from '../../src/identity/last-active.js';
import { Presence } from '../../src/identity/presence.js';
import { silentLogger } from '../../src/logger.js';
import { ManualClock } from '../helpers/clock.js';

function recorder() {
  const clock = new ManualClock();
  const presence = new Presence(clock.now, clock);
  const writes: Array<[string, string]> = [];
  /** The clock's time at each write. */
  const writtenAt: number[] = [];
  const last = new LastActiveRecorder(
    {
      recordLastActive: async (id, at) => {
        writes.push([id, at]);
        writtenAt.push(clock.now());
      },
    },
    presence,
    clock.now,
    clock,
    silentLogger,
  );
  last.start();
  const iso = (ms: number): string => new Date(ms).toISOString();
  return { clock, presence, writes, writtenAt, last, iso };
}

describe('stored last_active', () => {
  it('is stored after a call, then at most every 5 s while calls go on', () => {
    const { clock, presence, writes, last, iso } = recorder();
    const t0 = clock.now();
    presence.touch('a');
    last.called('a');
    clock.advance(CALL_PERSIST_MS);
    presence.touch('a');
    last.called('a'); // 5 s after the stored value: not yet
    clock.advance(1);
    presence.touch('a');
    last.called('a');
    clock.advance(CALL_BATCH_MS);
    expect(writes).toEqual([
      ['a', iso(t0)],
      ['a', iso(t0 + CALL_PERSIST_MS + 1)],
    ]);
    last.stop();
  });

  it('a failed write is tried again at the next call, not only after the interval', async () => {
    const clock = new ManualClock();
    const presence = new Presence(clock.now, clock);
    const attempts: string[] = [];
    let failing = true;
    const last = new LastActiveRecorder(
      {
        recordLastActive: async (id, at) => {
          attempts.push(at);
          if (failing) throw Object.assign(new Error('injected'), { code: 'ENOSPC' });
        },
      },
      presence,
      clock.now,
      clock,
      silentLogger,
    );
    last.called('a');
    clock.advance(CALL_BATCH_MS);
    await new Promise((r) => setImmediate(r));
    failing = false;
    clock.advance(1000); // well inside the 5 s interval
    last.called('a');
    clock.advance(CALL_BATCH_MS);
    await new Promise((r) => setImmediate(r));
    expect(attempts).toHaveLength(2);
    last.stop();
  });

  it('the callers of one 250 ms window are written together, when the window ends', () => {
    const { clock, presence, writes, writtenAt, last, iso } = recorder();
    const t0 = clock.now();
    for (const id of ['a', 'b', 'c']) {
      presence.touch(id);
      last.called(id);
      clock.advance(50);
    }
    expect(writes).toEqual([]); // not one write per call
    clock.advance(CALL_BATCH_MS - 150);
    expect(writes).toEqual([
      ['a', iso(t0)],
      ['b', iso(t0 + 50)],
      ['c', iso(t0 + 100)],
    ]);
    // All three in the same moment: the store groups writes made together into one.
    expect(new Set(writtenAt)).toEqual(new Set([t0 + CALL_BATCH_MS]));
    // A call after the batch starts the next window.
    presence.touch('d');
    last.called('d');
    clock.advance(CALL_BATCH_MS - 1);
    expect(writes).toHaveLength(3);
    clock.advance(1);
    expect(writes.at(-1)).toEqual(['d', iso(t0 + CALL_BATCH_MS)]);
    last.stop();
  });

  it('a shutdown writes the callers still waiting for their batch, and no batch comes after', async () => {
    const { clock, presence, writes, last, iso } = recorder();
    presence.touch('a');
    last.called('a');
    const at = clock.now();
    await last.flush();
    expect(writes).toEqual([['a', iso(at)]]);
    clock.advance(CALL_BATCH_MS * 4);
    expect(writes).toHaveLength(1);
  });

  it('is stored every 30 s while a socket is open, though no call is made', () => {
    const { clock, presence, writes, last } = recorder();
    presence.socketOpened('w');
    clock.advance(SOCKET_PERSIST_MS * 3);
    const times = writes.filter(([id]) => id === 'w').map(([, at]) => Date.parse(at));
    expect(times.length).toBeGreaterThanOrEqual(3);
    for (let i = 1; i < times.length; i++) expect(times[i]! - times[i - 1]!).toBeGreaterThanOrEqual(SOCKET_PERSIST_MS);
    // Never more than 30 s (plus the sweep's period) behind.
    expect(clock.now() - times.at(-1)!).toBeLessThanOrEqual(SOCKET_PERSIST_MS + SOCKET_PERSIST_MS / 3);
    last.stop();
  });

  it('at shutdown stores what is newer: a call between stores, and now for an open socket; nothing for the seeded', async () => {
    const { clock, presence, writes, last, iso } = recorder();
    presence.seed('seeded', clock.now()); // online only from the stored value: nothing to store
    presence.touch('a');
    last.called('a');
    clock.advance(1000);
    presence.touch('a');
    last.called('a'); // within 5 s: not stored now
    presence.socketOpened('w');
    clock.advance(2000);
    writes.length = 0;
    await last.flush();
    expect(writes.sort()).toEqual([
      ['a', iso(clock.now() - 2000)],
      ['w', iso(clock.now())],
    ]);
    // The sweep stopped with it.
    writes.length = 0;
    clock.advance(SOCKET_PERSIST_MS * 2);
    expect(writes).toEqual([]);
  });
});
