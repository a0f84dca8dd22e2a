// The page's pure modules, run in Node: the room reducer (trusts room_update and the queue in
// agent_turn, falls back without it), the queue the turn bar shows in a mention chain, the
// seq-range message store (gaps, resume point, trimming), and the two dictionaries.
import { describe, expect, it, vi } from 'vitest';
// @ts-expect-error plain JS module of the page (checked by tsconfig.public.json)
import { initialRoomState, reduceRoom, visibleQueue } from '../../public/room-state.js';
// @ts-expect-error plain JS module of the page
import { MessageStore } from '../../public/store.js';
// @ts-expect-error plain JS module of the page
import en from '../../public/locales/en.js';
// @ts-expect-error plain JS module of the page
import zhCN from '../../public/locales/zh-CN.js';

const room = () => ({
  room_id: 'r',
  members: [
    { name: 'Alice', role: 'user', status: 'online' },
    { name: 'Alpha', role: 'ai_agent', status: 'online' },
    { name: 'Beta', role: 'ai_agent', status: 'online' },
    { name: 'Gamma', role: 'ai_agent', status: 'online' },
  ],
  history_rounds: [],
  current_round: null,
});

const msg = (seq: number, extra: Record<string, unknown> = {}) => ({ message_id: `m${seq}`, seq, text_content: `t${seq}`, visible: true, deleted: false, ...extra });

describe('room reducer', () => {
  it('takes the queue, index and pending chain from agent_turn', () => {
    let s = reduceRoom(initialRoomState(), { type: 'room', room: room() });
    s = reduceRoom(s, { type: 'event', event: 'round_start', data: { round_id: 'R1', agent_queue: ['Alpha', 'Beta', 'Gamma'] } });
    s = reduceRoom(s, {
      type: 'event',
      event: 'agent_turn',
      data: { round_id: 'R1', agent_name: 'Gamma', can_skip: false, reason: 'mention', deadline: '2030-01-01T00:00:00.000Z', timeout_ms: 5000, agent_queue: ['Alpha', 'Gamma', 'Beta'], current_agent_index: 1, pending_mentions: ['Gamma'] },
    });
    expect(s.stale).toBe(false);
    expect(s.timeoutMs).toBe(5000);
    expect(s.room.current_round.agent_queue).toEqual(['Alpha', 'Gamma', 'Beta']);
    expect(s.room.current_round.turn.agent).toBe('Gamma');
    // The chain ends the round after Gamma: Beta is never asked in this round.
    expect(visibleQueue(s.room.current_round)).toEqual({ names: ['Alpha', 'Gamma'], current: 1 });
  });

  it('takes a queue changed during a turn from room_update (an @mention while Alpha answers), keeping the turn', () => {
    let s = reduceRoom(initialRoomState(), { type: 'room', room: room() });
    s = reduceRoom(s, { type: 'event', event: 'round_start', data: { round_id: 'R1', agent_queue: ['Alpha', 'Beta', 'Gamma'] } });
    const deadline = '2030-01-01T00:00:00.000Z';
    s = reduceRoom(s, {
      type: 'event',
      event: 'agent_turn',
      data: { round_id: 'R1', agent_name: 'Alpha', can_skip: true, reason: 'rotation', deadline, timeout_ms: 5000, agent_queue: ['Alpha', 'Beta', 'Gamma'], current_agent_index: 0, pending_mentions: [] },
    });
    // The server's room_update after a person's "@Gamma": the room as stored, its turn included.
    const turn = { agent: 'Alpha', can_skip: true, reason: 'rotation', deadline, posted: 0 };
    const current_round = { round_id: 'R1', kind: 'rotation', agent_queue: ['Alpha', 'Gamma', 'Beta'], current_agent_index: 0, pending_mentions: ['Gamma'], completed: false, turn };
    s = reduceRoom(s, { type: 'event', event: 'room_update', data: { room: { ...room(), current_round } } });
    expect(s.room.current_round.turn).toMatchObject({ agent: 'Alpha', deadline });
    expect(visibleQueue(s.room.current_round)).toEqual({ names: ['Alpha', 'Gamma'], current: 0 });
  });

  it("keeps the rounds played across a room_update, whose room has no history_rounds (it grows with the room's age)", () => {
    let s = reduceRoom(initialRoomState(), { type: 'room', room: { ...room(), history_rounds: ['R0'] } });
    s = reduceRoom(s, { type: 'event', event: 'round_start', data: { round_id: 'R1', agent_queue: ['Alpha'] } });
    s = reduceRoom(s, { type: 'event', event: 'round_end', data: { round_id: 'R1', reason: 'completed' } });
    const { history_rounds: _none, ...update } = { ...room(), announcement: { user_announcement: 'new' } };
    s = reduceRoom(s, { type: 'event', event: 'room_update', data: { room: update } });
    expect(s.room.history_rounds).toEqual(['R0', 'R1']);
    expect(s.room.announcement.user_announcement).toBe('new');
  });

  it('without agent_queue follows the stored queue, and marks the state stale when the turn lands elsewhere', () => {
    let s = reduceRoom(initialRoomState(), { type: 'room', room: room() });
    s = reduceRoom(s, { type: 'event', event: 'round_start', data: { round_id: 'R1', agent_queue: ['Alpha', 'Beta', 'Gamma'] } });
    s = reduceRoom(s, { type: 'event', event: 'agent_turn', data: { round_id: 'R1', agent_name: 'Alpha', can_skip: true, reason: 'rotation', deadline: 'x' } });
    s = reduceRoom(s, { type: 'event', event: 'agent_turn', data: { round_id: 'R1', agent_name: 'Beta', can_skip: true, reason: 'rotation', deadline: 'x' } });
    expect(s.stale).toBe(false);
    expect(s.room.current_round.current_agent_index).toBe(1);
    s = reduceRoom(s, { type: 'event', event: 'agent_turn', data: { round_id: 'R1', agent_name: 'Alpha', can_skip: false, reason: 'mention', deadline: 'x' } });
    expect(s.stale).toBe(true);
    // room_update (or get_room) is the truth again.
    s = reduceRoom(s, { type: 'event', event: 'room_update', data: { room: room() } });
    expect(s.stale).toBe(false);
  });

  it('keeps what agents report with set_activity until idle, their next post, or the round ends', () => {
    let s = reduceRoom(initialRoomState(), { type: 'room', room: room() });
    s = reduceRoom(s, { type: 'event', event: 'member_status_change', data: { member: { name: 'Alpha', status: 'busy', activity: 'thinking', note: '读文件' } } });
    expect(s.activities.Alpha).toEqual({ activity: 'thinking', note: '读文件' });
    expect(s.room.members.find((m: { name: string }) => m.name === 'Alpha').status).toBe('busy');
    s = reduceRoom(s, { type: 'event', event: 'message_new', data: { message: { ...msg(1), sender: 'Alpha' } } });
    expect(s.activities.Alpha).toBeUndefined();
    s = reduceRoom(s, { type: 'event', event: 'member_status_change', data: { member: { name: 'Beta', status: 'busy', activity: 'working', note: '' } } });
    s = reduceRoom(s, { type: 'event', event: 'member_status_change', data: { member: { name: 'Beta', status: 'online', activity: 'idle' } } });
    expect(s.activities.Beta).toBeUndefined();
    s = reduceRoom(s, { type: 'event', event: 'member_status_change', data: { member: { name: 'Gamma', status: 'busy', activity: 'working' } } });
    s = reduceRoom(s, { type: 'event', event: 'round_end', data: { round_id: 'R9', reason: 'completed' } });
    expect(s.activities).toEqual({});
  });

  it('ignores unknown events and returns the same state', () => {
    const s = reduceRoom(initialRoomState(), { type: 'room', room: room() });
    expect(reduceRoom(s, { type: 'event', event: 'something_new', data: {} })).toBe(s);
  });
});

describe('message store', () => {
  it('holds ranges, finds the resume point, and notices a gap until it is filled', () => {
    const store = new MessageStore();
    store.addPage([msg(8), msg(9), msg(10)], { live: true });
    expect(store.resumeSeq).toBe(10);
    expect(store.addLive(msg(11))).toEqual({ outcome: 'new', gap: false });
    expect(store.addLive(msg(13))).toEqual({ outcome: 'new', gap: true });
    expect(store.hasGap()).toBe(true);
    expect(store.resumeSeq).toBe(11);
    expect(store.addLive(msg(12))).toEqual({ outcome: 'new', gap: false });
    expect(store.resumeSeq).toBe(13);
    expect(store.hasGap()).toBe(false);
    expect(store.addLive(msg(12))).toEqual({ outcome: 'duplicate', gap: false });
    expect(store.addLive(msg(12, { text_content: 'edited', edited_at: 'now' }))).toEqual({ outcome: 'updated', gap: false });
    store.addPage([msg(1), msg(2)]);
    expect(store.ranges).toEqual([
      [1, 2],
      [8, 13],
    ]);
  });

  it('forgets the messages farthest from the window beyond its limit, keeping the resume point', () => {
    const store = new MessageStore({ maxKept: 100 });
    store.addPage(Array.from({ length: 300 }, (_, i) => msg(i + 1)), { live: true });
    store.trim(1, 50);
    expect(store.size).toBe(100);
    expect(store.has(1)).toBe(true);
    expect(store.has(300)).toBe(false);
    expect(store.ranges).toEqual([[1, 100]]);
    expect(store.resumeSeq).toBe(300);
    expect(store.addLive(msg(301)).gap).toBe(false);
  });
});

describe('dictionaries', () => {
  it('zh-CN and en have the same keys and the same placeholders', () => {
    expect(Object.keys(en).sort()).toEqual(Object.keys(zhCN).sort());
    const holes = (s: string) => [...s.matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort();
    for (const key of Object.keys(zhCN)) expect(holes(en[key]), key).toEqual(holes(zhCN[key]));
  });
});

describe('plurals in the page texts', () => {
  it('"1 message found", "2 messages found" in English; Chinese has no plural', async () => {
    // i18n.js reads the saved language from localStorage and sets the <html> lang when switched.
    const stored = new Map([['agent-chatroom.lang', 'en']]);
    vi.stubGlobal('window', globalThis);
    vi.stubGlobal('localStorage', { getItem: (k: string) => stored.get(k) ?? null, setItem: (k: string, v: string) => stored.set(k, v) });
    vi.stubGlobal('document', { documentElement: { lang: '' } });
    // @ts-expect-error plain JS module of the page
    const { setLang, t } = await import('../../public/i18n.js');
    expect(t('search.found', { n: 1 })).toBe('1 message found (newest first)');
    expect(t('search.found', { n: 2 })).toBe('2 messages found (newest first)');
    expect(t('search.found', { n: 0 })).toBe('0 messages found (newest first)');
    expect(t('rooms.members', { n: 1 })).toBe('1 member');
    expect(t('rooms.countFiltered', { n: 1, shown: 1 })).toBe('1 room, 1 shown');
    setLang('zh-CN');
    expect(t('search.found', { n: 1 })).toBe('找到 1 条消息（最新的在前）');
    vi.unstubAllGlobals();
  });
});
