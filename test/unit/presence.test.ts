// Presence: online while a socket is open or within 90 s of the last call; changes reported once.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Presence, type PresenceChange } from '../../src/identity/presence.js';

// SPEC §6, written here as literals so that a changed production constant fails these tests.
/** Online for 90 s after the last authenticated call. */
const WINDOW_MS = 90_000;
/** Offline 15 s after the last WebSocket closed (no call since). */
const GRACE_MS = 15_000;

const timers = {
  setTimeout: (fn: () => void, ms: number) => setTimeout(fn, ms),
  clearTimeout: (handle: unknown) => clearTimeout(handle as NodeJS.Timeout),
};

describe('presence', () => {
  let changes: PresenceChange[];
  let presence: Presence;
  beforeEach(() => {
    vi.useFakeTimers();
    vi.setSystemTime(1_000_000);
    changes = [];
    presence = new Presence(() => Date.now(), timers);
    presence.onChange((c) => changes.push(c));
  });
  afterEach(() => {
    presence.stop();
    vi.useRealTimers();
  });

  /** 'a' is online until just before `ms` from now and offline just after: one change each way. */
  function expectOnlineForExactly(ms: number): void {
    expect(presence.isOnline('a')).toBe(true);
    vi.advanceTimersByTime(ms - 10);
    expect(presence.isOnline('a')).toBe(true);
    vi.advanceTimersByTime(20);
    expect(presence.isOnline('a')).toBe(false);
    expect(changes.map((c) => c.online)).toEqual([true, false]);
  }

  it('goes online on a call and offline 90 s after a single call', () => {
    presence.touch('a');
    expectOnlineForExactly(WINDOW_MS);
  });

  it('stays online while calls keep coming, then expires 90 s after the last', () => {
    presence.touch('a');
    for (let i = 0; i < 10; i++) {
      vi.advanceTimersByTime(30_000);
      presence.touch('a');
    }
    expectOnlineForExactly(WINDOW_MS);
  });

  it('is online while a socket is open, whatever the time, and goes offline 15 s after the last one closed', () => {
    presence.socketOpened('a');
    vi.advanceTimersByTime(10 * WINDOW_MS);
    expect(presence.isOnline('a')).toBe(true);
    presence.socketClosed('a');
    expectOnlineForExactly(GRACE_MS);
  });

  it('a reconnect inside the 15 s grace keeps it online; a call after the close gives it the whole 90 s', () => {
    presence.socketOpened('a');
    presence.socketClosed('a');
    vi.advanceTimersByTime(GRACE_MS - 10);
    presence.socketOpened('a');
    vi.advanceTimersByTime(10 * GRACE_MS);
    expect(presence.isOnline('a')).toBe(true);
    presence.socketClosed('a');
    vi.advanceTimersByTime(1000);
    presence.touch('a'); // a call since the close: the window counts from it, not the grace
    vi.advanceTimersByTime(WINDOW_MS - 10);
    expect(presence.isOnline('a')).toBe(true);
    vi.advanceTimersByTime(20);
    expect(presence.isOnline('a')).toBe(false);
    expect(changes.map((c) => c.online)).toEqual([true, false]);
  });

  it('seeds from the stored last_active after a restart', () => {
    presence.seed('recent', Date.now() - 30_000);
    presence.seed('old', Date.now() - 5 * 60_000);
    expect(presence.isOnline('recent')).toBe(true);
    expect(presence.isOnline('old')).toBe(false);
    vi.advanceTimersByTime(60_000 - 10); // 90 s after its last_active, not before
    expect(presence.isOnline('recent')).toBe(true);
    vi.advanceTimersByTime(20);
    expect(presence.isOnline('recent')).toBe(false);
    expect(changes).toEqual([{ participantId: 'recent', online: false, lastActive: 1_000_000 - 30_000 }]);
  });

  it('a last socket closed on another node: offline after the grace unless a socket or a later call is here', () => {
    const closed: Array<[string, number]> = [];
    presence.onLastSocketClosed((id, at) => closed.push([id, at]));
    presence.touch('a'); // a call here, before the close elsewhere
    vi.advanceTimersByTime(1000);
    presence.closedElsewhere('a', Date.now());
    vi.advanceTimersByTime(GRACE_MS - 10);
    expect(presence.isOnline('a')).toBe(true);
    vi.advanceTimersByTime(20);
    expect(presence.isOnline('a')).toBe(false);
    expect(changes.map((c) => [c.participantId, c.online])).toEqual([['a', true], ['a', false]]);

    presence.socketOpened('b'); // a socket here keeps it online
    presence.closedElsewhere('b', Date.now());
    presence.touch('c');
    presence.closedElsewhere('c', Date.now() - 1); // closed before this node's last call
    presence.closedElsewhere('nobody', Date.now()); // unknown here: nothing
    vi.advanceTimersByTime(GRACE_MS + 10);
    expect([presence.isOnline('b'), presence.isOnline('c'), presence.isOnline('nobody')]).toEqual([true, true, false]);

    presence.socketClosed('b'); // this node's last socket of b: the other nodes are told
    expect(closed).toEqual([['b', Date.now()]]);
  });

  it('serves only participants of its own calls, sockets and waits: a seeded one is served from its first activity', () => {
    const served: Array<[string, boolean]> = [];
    presence.onServed((id, on) => served.push([id, on]));
    presence.seed('a', Date.now() - 1000); // active 1 s before the restart: online, not served here
    presence.seed('old', Date.now() - WINDOW_MS - 1000); // long gone: offline
    expect([presence.isOnline('a'), presence.isOnline('old')]).toEqual([true, false]);
    expect(served).toEqual([]);
    presence.touch('a'); // back, through this node
    presence.touch('a');
    expect(served).toEqual([['a', true]]);
    expect(changes).toEqual([]); // it was online already: nothing for the rooms

    // A socket closing on another node does not bring an offline participant online.
    presence.closedElsewhere('old', Date.now());
    expect(presence.isOnline('old')).toBe(false);
    expect(changes).toEqual([]);

    vi.advanceTimersByTime(WINDOW_MS + 10);
    expect(served).toEqual([['a', true], ['a', false]]);
    expect(changes.map((c) => [c.participantId, c.online])).toEqual([['a', false]]);
  });

  it('lists as connected exactly the participants with a socket or wait open here', () => {
    presence.seed('seeded', Date.now());
    presence.touch('caller');
    presence.socketOpened('a');
    presence.socketOpened('a');
    const release = presence.hold('b');
    expect([...presence.connected()].sort()).toEqual(['a', 'b']);
    presence.socketClosed('a');
    expect([...presence.connected()].sort()).toEqual(['a', 'b']);
    release();
    release(); // a second release counts nothing
    presence.socketClosed('a');
    expect([...presence.connected()]).toEqual([]);
    presence.socketClosed('a'); // more closes than opens: still none, and no negative count
    presence.socketOpened('a');
    expect([...presence.connected()]).toEqual(['a']);
  });
});
