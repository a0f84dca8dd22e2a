// @ts-check
// The room as the page knows it, changed only by `reduceRoom(state, action) → state`. It trusts
// the server: `room_update` replaces the room, and `agent_turn` carries the round's queue,
// index and pending mention chain (SPEC v2 §8) — the page never guesses the queue. Servers that
// send an `agent_turn` without the queue get the old best effort plus `stale: true` (the view
// then fetches the stored round with get_room).

/**
 * @typedef {object} RoomState
 * @property {any} room                 the room (get_room shape) or null before it loads
 * @property {number|null} timeoutMs    the last turn's timeout_ms
 * @property {Record<string, { activity: string, note: string }>} activities  agent → what it reported with set_activity
 * @property {boolean} stale            the round may differ from the server's: fetch the room
 */

/** @returns {RoomState} */
export function initialRoomState() {
  return { room: null, timeoutMs: null, activities: {}, stale: false };
}

/** @param {string} a @param {string} b */
const same = (a, b) => String(a).toLowerCase() === String(b).toLowerCase();

/**
 * @param {RoomState} state
 * @param {{ type: 'room', room: any } | { type: 'event', event: string, data: any }} action
 * @returns {RoomState}
 */
export function reduceRoom(state, action) {
  if (action.type === 'room') return withRoom(state, action.room);
  const room = state.room;
  if (!room) return state;
  const d = action.data || {};
  switch (action.event) {
    case 'room_update':
      // The event's room has no history_rounds (SPEC §8: it carries status, settings, members
      // and the running round; the list is kept here from get_room and each round_end).
      return d.room ? withRoom(state, { ...d.room, history_rounds: d.room.history_rounds ?? room.history_rounds }) : state;
    case 'member_join': {
      if (!d.member) return state;
      const members = room.members.filter((/** @type {any} */ m) => !same(m.name, d.member.name));
      return { ...state, room: { ...room, members: [...members, d.member] } };
    }
    case 'member_leave': {
      if (!d.member) return state;
      const activities = { ...state.activities };
      delete activities[d.member.name];
      return { ...state, activities, room: { ...room, members: room.members.filter((/** @type {any} */ m) => !same(m.name, d.member.name)) } };
    }
    case 'member_status_change': {
      if (!d.member) return state;
      const members = room.members.map((/** @type {any} */ m) =>
        same(m.name, d.member.name) ? { ...m, status: d.member.status ?? m.status, last_active: d.member.last_active ?? m.last_active } : m,
      );
      const activities = { ...state.activities };
      if (d.member.activity && d.member.activity !== 'idle' && d.member.status !== 'offline') {
        activities[d.member.name] = { activity: d.member.activity, note: d.member.note || '' };
      } else if ('activity' in d.member || d.member.status !== 'busy') {
        delete activities[d.member.name];
      }
      return { ...state, activities, room: { ...room, members } };
    }
    case 'message_new': {
      // An agent's post ends its reported activity (SPEC v2 §7 set_activity).
      const sender = d.message?.sender;
      if (!sender || !state.activities[sender] || !d.message.visible) return state;
      const activities = { ...state.activities };
      delete activities[sender];
      return { ...state, activities };
    }
    case 'round_start':
      return {
        ...state,
        room: {
          ...room,
          current_round: {
            round_id: d.round_id,
            kind: d.kind ?? (d.mode === 'host' ? 'host' : 'rotation'),
            agent_queue: Array.isArray(d.agent_queue) ? d.agent_queue : [],
            current_agent_index: 0,
            completed: false,
            turn: null,
            pending_mentions: Array.isArray(d.pending_mentions) ? d.pending_mentions : [],
          },
        },
      };
    case 'round_end': {
      const r = room.current_round;
      const current_round = r && r.round_id === d.round_id ? { ...r, completed: true, turn: null, end_reason: d.reason } : r;
      const history_rounds = room.history_rounds.includes(d.round_id) ? room.history_rounds : [...room.history_rounds, d.round_id];
      // A turn's end ends its activity too.
      return { ...state, activities: {}, room: { ...room, current_round, history_rounds } };
    }
    case 'agent_turn':
      return agentTurn(state, d);
    default:
      // Unknown events are ignored (SPEC §8).
      return state;
  }
}

/** @param {RoomState} state @param {any} room */
function withRoom(state, room) {
  const names = new Set((room.members || []).map((/** @type {any} */ m) => m.name));
  const activities = Object.fromEntries(Object.entries(state.activities).filter(([n]) => names.has(n)));
  return { ...state, room, activities, stale: false };
}

/** @param {RoomState} state @param {any} d */
function agentTurn(state, d) {
  const room = state.room;
  const prev = room.current_round && room.current_round.round_id === d.round_id ? room.current_round : null;
  const turn = { agent: d.agent_name, can_skip: d.can_skip, reason: d.reason, deadline: d.deadline, posted: 0 };
  const activities = { ...state.activities };
  for (const name of Object.keys(activities)) if (!same(name, d.agent_name)) delete activities[name];
  const timeoutMs = typeof d.timeout_ms === 'number' ? d.timeout_ms : state.timeoutMs;
  if (Array.isArray(d.agent_queue)) {
    const current_round = {
      ...(prev || { round_id: d.round_id, kind: d.reason === 'host' ? 'host' : 'rotation' }),
      agent_queue: d.agent_queue,
      current_agent_index: typeof d.current_agent_index === 'number' ? d.current_agent_index : Math.max(0, d.agent_queue.indexOf(d.agent_name)),
      pending_mentions: Array.isArray(d.pending_mentions) ? d.pending_mentions : [],
      completed: false,
      turn,
    };
    return { ...state, timeoutMs, activities, room: { ...room, current_round } };
  }
  // Fallback for a server without the queue in agent_turn: follow the stored queue when the
  // turn lands where expected, otherwise mark the state stale.
  const queue = prev ? prev.agent_queue : [d.agent_name];
  let index = prev ? prev.current_agent_index : 0;
  let stale = false;
  if (queue[index] !== d.agent_name) {
    const at = queue.indexOf(d.agent_name, index);
    if (at === index + 1) index = at;
    else stale = true;
  }
  const current_round = { ...(prev || { round_id: d.round_id, pending_mentions: [] }), agent_queue: queue, current_agent_index: index, completed: false, turn };
  return { ...state, timeoutMs, activities, stale: state.stale || stale, room: { ...room, current_round } };
}

/**
 * The part of the round's queue that will be asked: in a mention chain the round ends when the
 * chain's last agent has finished (SPEC §6.1.8), so agents after it are not shown.
 * @param {any} round
 * @returns {{ names: string[], current: number }}
 */
export function visibleQueue(round) {
  if (!round || round.completed) return { names: [], current: -1 };
  const queue = Array.isArray(round.agent_queue) ? round.agent_queue : [];
  let current = typeof round.current_agent_index === 'number' ? round.current_agent_index : 0;
  const turnAgent = round.turn?.agent;
  if (turnAgent && queue[current] !== turnAgent) {
    const at = queue.indexOf(turnAgent, Math.max(0, current));
    if (at >= 0) current = at;
  }
  const pending = Array.isArray(round.pending_mentions) ? round.pending_mentions : [];
  let end = queue.length;
  if (pending.length > 0) {
    let last = -1;
    for (let i = Math.max(0, current); i < queue.length; i++) if (pending.some((/** @type {string} */ p) => same(p, queue[i]))) last = i;
    if (last >= 0) end = last + 1;
  }
  return { names: queue.slice(0, end), current };
}
