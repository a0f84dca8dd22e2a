// The message list of a room: keeps messages deduped by message_id and seq, renders them in seq
// order with round separators, quiet one-line notes for skip/timeout records, and keeps the
// view pinned to the bottom while the reader is there.
import { fetchFile } from './api.js';
import { downloadUrl, h, toast } from './dom.js';
import { errorText, ROLE_LABEL, skipNote } from './i18n.js';
import { icon } from './icons.js';
import { renderMarkdown } from './markdown.js';
import { formatClock, formatTime } from './time.js';

const NEAR_BOTTOM_PX = 80;

export class MessageList {
  /**
   * @param {object} ctx
   * @param {() => string} ctx.me             my name
   * @param {() => string} ctx.timezone       room timezone
   * @param {() => object[]} ctx.members      room members
   * @param {(roundId: string) => number} ctx.roundNumber  1-based, 0 when unknown
   * @param {() => void} ctx.onLoadOlder
   */
  constructor(ctx) {
    this.ctx = ctx;
    /** message_id → message */
    this.byId = new Map();
    /** seq → message_id */
    this.bySeq = new Map();
    /** message_id → rendered element (cache; dropped when the message changes) */
    this.nodes = new Map();
    this.sortedSeqs = [];
    this.minSeq = null;
    /** Highest seq such that every seq from minSeq up to it is present (resume point). */
    this.top = null;
    this.lastRenderedSeq = 0;
    this.lastRoundId = null;
    this.separators = new Map();
    this.hasOlder = false;

    this.olderBtn = h('button', { type: 'button', class: 'btn btn-ghost btn-small load-older', hidden: true }, '加载更早的消息');
    this.olderBtn.addEventListener('click', () => ctx.onLoadOlder());
    this.list = h('ol', { class: 'msg-list', 'aria-label': '消息' });
    this.empty = h('p', { class: 'msg-empty muted' }, '还没有消息。说点什么吧！');
    this.scroller = h('div', { class: 'msg-scroll', tabindex: '0', 'aria-label': '消息记录', role: 'log', 'aria-live': 'polite', 'aria-relevant': 'additions' }, this.olderBtn, this.empty, this.list);
    this.newPill = h('button', { type: 'button', class: 'new-pill', hidden: true }, '有新消息 ↓');
    this.newPill.addEventListener('click', () => this.scrollToBottom(true));
    this.scroller.addEventListener('scroll', () => {
      if (this.isNearBottom()) this.newPill.hidden = true;
    });
    this.el = h('div', { class: 'msg-pane' }, this.scroller, this.newPill);
  }

  get size() {
    return this.byId.size;
  }

  has(seq) {
    return this.bySeq.has(seq);
  }

  /** The page we hold begins at seq 1 (nothing older to load). */
  setHasOlder(value) {
    this.hasOlder = value;
    this.olderBtn.hidden = !value;
  }

  setLoadingOlder(loading) {
    this.olderBtn.disabled = loading;
    this.olderBtn.textContent = loading ? '正在加载…' : '加载更早的消息';
  }

  /**
   * Adds or replaces messages. Returns 'new' | 'updated' | 'duplicate' for the last one.
   * Rendering is done by `flush` (batched by the caller) or `addLive`.
   */
  store(message) {
    const known = this.byId.get(message.message_id);
    if (known) {
      if (sameVersion(known, message)) return 'duplicate';
      this.byId.set(message.message_id, message);
      this.nodes.delete(message.message_id);
      return 'updated';
    }
    const other = this.bySeq.get(message.seq);
    if (other !== undefined && other !== message.message_id) {
      // Same seq, different id: cannot happen with one server; keep the newest answer.
      this.byId.delete(other);
      this.nodes.delete(other);
    }
    this.byId.set(message.message_id, message);
    this.bySeq.set(message.seq, message.message_id);
    this.insertSeq(message.seq);
    if (this.minSeq === null || message.seq < this.minSeq) this.minSeq = message.seq;
    this.advanceTop();
    return 'new';
  }

  insertSeq(seq) {
    const a = this.sortedSeqs;
    if (a.length === 0 || a[a.length - 1] < seq) {
      a.push(seq);
      return;
    }
    let lo = 0;
    let hi = a.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (a[mid] < seq) lo = mid + 1;
      else hi = mid;
    }
    a.splice(lo, 0, seq);
  }

  advanceTop() {
    if (this.minSeq === null) return;
    if (this.top === null || this.top < this.minSeq - 1) this.top = this.minSeq - 1;
    while (this.bySeq.has(this.top + 1)) this.top += 1;
  }

  /** A message from the socket (or our own send): shown at once, keeps the reader's place. */
  addLive(message, { mine = false } = {}) {
    const outcome = this.store(message);
    if (outcome === 'duplicate') return outcome;
    const stick = this.isNearBottom();
    if (outcome === 'new' && message.seq > this.lastRenderedSeq) {
      this.appendNode(message);
    } else if (outcome === 'updated' && this.list.querySelector(`[data-message-id="${CSS.escape(message.message_id)}"]`)) {
      const old = this.list.querySelector(`[data-message-id="${CSS.escape(message.message_id)}"]`);
      old.replaceWith(this.nodeFor(message));
      return outcome;
    } else {
      this.renderAll();
    }
    if (stick || mine) this.scrollToBottom();
    else if (outcome === 'new') this.newPill.hidden = false;
    return outcome;
  }

  /** Adds a page of history (older or initial) and redraws, keeping the visible position. */
  addPage(messages, { toBottom = false } = {}) {
    const before = this.scroller.scrollHeight - this.scroller.scrollTop;
    for (const m of messages) this.store(m);
    this.renderAll();
    if (toBottom) this.scrollToBottom();
    else this.scroller.scrollTop = this.scroller.scrollHeight - before;
  }

  renderAll() {
    this.list.replaceChildren();
    this.separators.clear();
    this.lastRoundId = null;
    this.lastRenderedSeq = 0;
    for (const seq of this.sortedSeqs) this.appendNode(this.byId.get(this.bySeq.get(seq)));
    this.empty.hidden = this.sortedSeqs.length > 0;
  }

  /** Redraws everything (e.g. room timezone or members changed); keeps the scroll position. */
  refreshAll() {
    this.nodes.clear();
    const before = this.scroller.scrollHeight - this.scroller.scrollTop;
    const stick = this.isNearBottom();
    this.renderAll();
    if (stick) this.scrollToBottom();
    else this.scroller.scrollTop = this.scroller.scrollHeight - before;
  }

  appendNode(message) {
    this.empty.hidden = true;
    if (message.round_id && message.round_id !== this.lastRoundId) {
      this.lastRoundId = message.round_id;
      const sep = this.separatorFor(message);
      this.list.append(sep);
    }
    const node = this.nodeFor(message);
    this.list.append(node);
    if (message.round_id && (message.visible || message.role === 'system')) {
      this.separators.get(message.round_id)?.classList.remove('round-sep-quiet');
    }
    this.lastRenderedSeq = Math.max(this.lastRenderedSeq, message.seq);
  }

  /** Numbers round separators drawn before the room knew the round (replayed history). */
  relabelRounds() {
    for (const [roundId, sep] of this.separators) {
      if (sep.dataset.numbered === '1') continue;
      const n = this.ctx.roundNumber(roundId);
      if (n <= 0) continue;
      sep.dataset.numbered = '1';
      sep.setAttribute('aria-label', `第 ${n} 轮开始`);
      sep.firstChild.textContent = `第 ${n} 轮 · ${sep.dataset.time}`;
    }
  }

  separatorFor(message) {
    const n = this.ctx.roundNumber(message.round_id);
    const label = n > 0 ? `第 ${n} 轮` : '新一轮';
    const time = formatClock(message.timestamp, this.ctx.timezone());
    // Quiet until the round has a visible message (so hidden skip notes leave no empty rounds).
    const sep = h(
      'li',
      { class: 'round-sep round-sep-quiet', role: 'separator', dataset: { roundId: message.round_id, time, numbered: n > 0 ? '1' : '0' }, 'aria-label': `${label}开始` },
      h('span', {}, `${label} · ${time}`),
    );
    this.separators.set(message.round_id, sep);
    return sep;
  }

  nodeFor(message) {
    let node = this.nodes.get(message.message_id);
    if (!node) {
      node = buildNode(message, this.ctx);
      this.nodes.set(message.message_id, node);
    }
    return node;
  }

  isNearBottom() {
    const s = this.scroller;
    return s.scrollHeight - s.scrollTop - s.clientHeight < NEAR_BOTTOM_PX;
  }

  scrollToBottom(smooth = false) {
    this.scroller.scrollTo({ top: this.scroller.scrollHeight, behavior: smooth ? 'smooth' : 'auto' });
    this.newPill.hidden = true;
  }

  /** Scrolls a message into view and flashes it; false when it is not loaded. */
  reveal(seq) {
    const node = this.list.querySelector(`[data-seq="${seq}"]`);
    if (!node) return false;
    node.scrollIntoView({ block: 'center' });
    node.classList.remove('flash');
    void node.offsetWidth;
    node.classList.add('flash');
    if (node.tabIndex < 0) node.tabIndex = -1;
    node.focus({ preventScroll: true });
    return true;
  }
}

function sameVersion(a, b) {
  return a.text_content === b.text_content && a.deleted === b.deleted && a.edited_at === b.edited_at && a.processed === b.processed && a.file_url === b.file_url;
}

/** A stable hue per name; similar names (Echo1, Echo2) land far apart (golden angle). */
function hueOf(name) {
  let hash = 0;
  for (const ch of name.toLowerCase()) hash = (hash * 31 + ch.codePointAt(0)) >>> 0;
  return Math.round((hash * 137.508) % 360);
}

/** First letter, plus a trailing digit so Bot1 and Bot2 differ ("B1", "B2"). */
function initialsOf(name) {
  const chars = [...name];
  const first = (chars[0] || '?').toUpperCase();
  const last = chars[chars.length - 1];
  return chars.length > 1 && /\d/.test(last) ? first + last : first;
}

function buildNode(message, ctx) {
  const tz = ctx.timezone();
  const time = formatTime(message.timestamp, tz);
  const timeEl = h('time', { datetime: message.timestamp, title: `${time}（${tz}）` }, time);

  if (!message.visible) {
    return h(
      'li',
      { class: `note note-skip note-${message.skip_reason || 'skip'}`, dataset: { seq: message.seq, messageId: message.message_id } },
      h('span', { class: 'note-text' }, skipNote(message.sender, message.skip_reason)),
      ' ',
      timeEl,
    );
  }

  if (message.role === 'system') {
    return h(
      'li',
      { class: 'note note-system', dataset: { seq: message.seq, messageId: message.message_id } },
      h('span', { class: 'badge badge-system' }, ROLE_LABEL.system),
      ' ',
      h('span', { class: 'note-text' }, message.text_content),
      ' ',
      timeEl,
    );
  }

  const me = ctx.me();
  const members = ctx.members();
  const member = members.find((m) => m.name.toLowerCase() === message.sender.toLowerCase());
  const mine = message.sender.toLowerCase() === (me || '').toLowerCase();
  const mentionsMe = !mine && (message.mentions || []).some((n) => n.toLowerCase() === (me || '').toLowerCase());
  const classes = ['msg', message.role === 'ai_agent' ? 'msg-agent' : 'msg-user'];
  if (mine) classes.push('msg-mine');
  if (mentionsMe) classes.push('msg-mentions-me');
  if (message.deleted) classes.push('msg-deleted');

  const initials = initialsOf(message.sender);
  const avatar = h('span', { class: `avatar${initials.length > 1 ? ' avatar-2' : ''}`, 'aria-hidden': 'true' }, initials);
  avatar.style.setProperty('--hue', String(hueOf(message.sender)));

  const body = h('div', { class: 'msg-body markdown' });
  if (message.deleted) body.append(h('p', { class: 'muted' }, '（此消息已撤回）'));
  else body.append(renderMarkdown(message.text_content, { names: members.map((m) => m.name), me }));

  const head = h(
    'div',
    { class: 'msg-head' },
    h('span', { class: 'msg-sender' }, message.sender),
    h('span', { class: `badge badge-${message.role}` }, ROLE_LABEL[message.role] || message.role),
    member?.is_host ? h('span', { class: 'badge badge-host' }, '主持人') : null,
    mine ? h('span', { class: 'badge badge-me' }, '我') : null,
    timeEl,
    message.edited_at && !message.deleted ? h('span', { class: 'muted msg-edited' }, '（已编辑）') : null,
  );

  return h(
    'li',
    { class: classes.join(' '), dataset: { seq: message.seq, messageId: message.message_id, sender: message.sender } },
    avatar,
    h('div', { class: 'msg-main' }, head, body, message.file_url && !message.deleted ? attachment(message) : null),
  );
}

function fileNameOf(url) {
  try {
    const last = new URL(url, location.href).pathname.split('/').pop() || 'file';
    return decodeURIComponent(last).replace(/^\d{13,}_/, '');
  } catch {
    return 'file';
  }
}

function attachment(message) {
  const url = message.file_url;
  const name = fileNameOf(url);
  const ours = url.startsWith('/api/v1/files/');
  const external = /^https?:\/\//i.test(url);
  if (!ours && !external) return h('p', { class: 'attachment muted' }, icon('paperclip', { size: 14 }), name);
  const link = h(
    'a',
    { class: 'attachment', href: url, ...(external ? { target: '_blank', rel: 'noopener noreferrer nofollow' } : { download: name }), title: message.file_type || '' },
    icon('paperclip', { size: 14 }),
    name,
    message.file_type ? h('span', { class: 'muted attachment-type' }, ` · ${message.file_type.split(';')[0]}`) : null,
  );
  if (ours) {
    // Downloads need the token: fetch with it, then hand the blob to the browser.
    link.addEventListener('click', async (e) => {
      e.preventDefault();
      try {
        const blob = await fetchFile(url);
        const objectUrl = URL.createObjectURL(blob);
        downloadUrl(objectUrl, name);
        setTimeout(() => URL.revokeObjectURL(objectUrl), 60_000);
      } catch (err) {
        toast(`下载失败：${errorText(err)}`, 'error');
      }
    });
  }
  const wrap = h('div', { class: 'msg-file' }, link);
  if (ours && /^image\//.test(message.file_type || '')) {
    const img = h('img', { class: 'attachment-preview', alt: name, hidden: true });
    wrap.prepend(img);
    fetchFile(url)
      .then((blob) => {
        img.addEventListener('load', () => (img.hidden = false));
        img.addEventListener('error', () => img.remove());
        img.src = URL.createObjectURL(blob);
      })
      .catch(() => img.remove());
  }
  return wrap;
}
