// The room runtime as the unit tests build it: callers and members by name, and a Rooms service
// on a manual clock with silent logs.
import type { EventBus } from '../../src/events/bus.js';
import type { Presence } from '../../src/identity/presence.js';
import { silentLogger } from '../../src/logger.js';
import { Rooms } from '../../src/runtime/rooms.js';
import type { Store } from '../../src/storage/store.js';
import type { Caller, Member } from '../../src/types.js';
import type { ManualClock } from './clock.js';

/** The turn timeout of these tests' rooms. */
export const TURN_MS = 60_000;

export function caller(name: string, role: 'user' | 'ai_agent'): Caller {
  return { kind: role === 'user' ? 'user' : 'agent', id: `id-${name}`, name, role, tokenHash: 'h' };
}

/** The member `c` becomes on joining now (online, zh-CN, Asia/Shanghai). */
export function member(c: Caller, clock: ManualClock): Member {
  const at = new Date(clock.now()).toISOString();
  return {
    name: c.name,
    role: c.role,
    introduce: '',
    status: 'online',
    last_active: at,
    is_host: false,
    skip_list: [],
    language_preference: 'zh-CN',
    timezone_preference: 'Asia/Shanghai',
    participant_id: c.id,
    joined_at: at,
  };
}

/** Rooms on `store`, timed by `clock`, with TURN_MS turns. */
export function testRooms(store: Store, bus: EventBus, presence: Presence, clock: ManualClock, options: { shared?: boolean } = {}): Rooms {
  return new Rooms({
    ...options,
    store,
    bus,
    presence,
    logger: silentLogger,
    now: clock.now,
    timers: clock,
    turnTimeoutMs: TURN_MS,
    maxMessageChars: 32_000,
    defaults: { language: 'zh-CN', timezone: 'Asia/Shanghai' },
  });
}
