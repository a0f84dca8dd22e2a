// @ts-check
// Unread messages per room, the last activity of each room, the count in the tab title, and a
// browser notification when someone mentions the signed-in person (after they allowed it).
// The page's socket is subscribed to every room the person belongs to, so counts follow live
// `message_new` events; the last message seen per room is remembered in localStorage.
import { t } from './i18n.js';
import { plainText } from './markdown.js';

const SEEN_KEY = 'agent-chatroom.seen';

/** @type {Record<string, number>} room → last seq seen */
let seen = {};
try {
  seen = JSON.parse(localStorage.getItem(SEEN_KEY) || '{}') || {};
} catch {
  seen = {};
}
/** @type {Map<string, number>} room → unread visible messages of others */
const counts = new Map();
/** @type {Map<string, string>} room → ISO time of its newest message */
export const lastActivity = new Map();
/** @type {Set<() => void>} */
const listeners = new Set();
/** Rooms whose counts were seeded from the server since the socket last (re)connected. */
const seeded = new Set();
/** @type {Record<string, number>} room → highest seq already counted (a seed and a live event never count one message twice) */
const countedThrough = {};

/** The socket (re)connected: events may have been missed, so counts are seeded again. */
export function forgetSeeds() {
  seeded.clear();
}

/** @param {string} roomId */
export function isSeeded(roomId) {
  return seeded.has(roomId);
}
let baseTitle = document.title;
/** The room the reader is looking at (its messages are read as they come, while the tab shows). */
let viewing = /** @type {string|null} */ (null);

function save() {
  try {
    localStorage.setItem(SEEN_KEY, JSON.stringify(seen));
  } catch {
    // ignore
  }
}

function changed() {
  paintTitle();
  for (const l of listeners) l();
}

/** @param {() => void} fn */
export function onUnreadChange(fn) {
  listeners.add(fn);
  return () => listeners.delete(fn);
}

/** @param {string} title */
export function setBaseTitle(title) {
  baseTitle = title;
  paintTitle();
}

function paintTitle() {
  const total = totalUnread();
  document.title = total > 0 ? `(${total > 99 ? '99+' : total}) ${baseTitle}` : baseTitle;
}

export function totalUnread() {
  let n = 0;
  for (const c of counts.values()) n += c;
  return n;
}

/** @param {string} roomId */
export function unreadOf(roomId) {
  return counts.get(roomId) ?? 0;
}

/** @param {string|null} roomId */
export function setViewing(roomId) {
  viewing = roomId;
}

/** The reader has seen `roomId` up to `seq`. @param {string} roomId @param {number} seq */
export function markSeen(roomId, seq) {
  if ((seen[roomId] ?? 0) < seq) {
    seen[roomId] = seq;
    save();
  }
  if (counts.get(roomId)) {
    counts.set(roomId, 0);
    changed();
  }
}

/**
 * Counts from a room's newest page (room list load): visible messages of others after the last
 * seen seq. A room never opened in this browser starts with nothing unread.
 * @param {string} roomId @param {any[]} newest @param {string} me
 */
export function seedFromPage(roomId, newest, me) {
  seeded.add(roomId);
  const last = newest[newest.length - 1];
  if (last) lastActivity.set(roomId, last.timestamp);
  if (!(roomId in seen)) {
    seen[roomId] = last ? last.seq : 0;
    save();
  }
  const n = newest.filter((m) => m.seq > seen[roomId] && m.visible && !m.deleted && m.sender.toLowerCase() !== me.toLowerCase()).length;
  counts.set(roomId, n);
  if (last) countedThrough[roomId] = Math.max(countedThrough[roomId] ?? 0, last.seq);
  changed();
}

/**
 * A live message in any of the person's rooms.
 * @param {string} roomId @param {any} m @param {{ me: string, roomName?: string }} opts
 */
export function noteMessage(roomId, m, { me, roomName }) {
  lastActivity.set(roomId, m.timestamp);
  const mine = m.sender.toLowerCase() === me.toLowerCase();
  const reading = viewing === roomId && document.visibilityState === 'visible';
  const already = m.seq <= (countedThrough[roomId] ?? 0);
  countedThrough[roomId] = Math.max(countedThrough[roomId] ?? 0, m.seq);
  if (mine || reading || already || !m.visible || m.deleted || m.seq <= (seen[roomId] ?? 0)) {
    changed();
    return;
  }
  counts.set(roomId, (counts.get(roomId) ?? 0) + 1);
  changed();
  const mentioned = (m.mentions || []).some((/** @type {string} */ n) => n.toLowerCase() === me.toLowerCase());
  if (mentioned) notify(roomId, m, roomName);
}

/** @param {string} roomId @param {any} m @param {string} [roomName] */
function notify(roomId, m, roomName) {
  if (!('Notification' in window) || Notification.permission !== 'granted') return;
  try {
    const n = new Notification(t('notify.title', { name: m.sender, room: roomName || roomId }), { body: plainText(m.text_content, 140), tag: `${roomId}:${m.message_id}` });
    n.onclick = () => {
      window.focus();
      location.hash = `#/room/${encodeURIComponent(roomId)}`;
      n.close();
    };
  } catch {
    // Some browsers allow notifications only from a service worker.
  }
}

/** The reader came back to the tab: the open room counts as read. */
document.addEventListener('visibilitychange', () => {
  if (document.visibilityState === 'visible' && viewing && counts.get(viewing)) {
    counts.set(viewing, 0);
    changed();
  }
});
