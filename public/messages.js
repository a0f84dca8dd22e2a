// @ts-check
// The message list of a room as a window over the MessageStore: only the messages near what
// the reader sees are elements (at most MAX_RENDERED), more are fetched (get_messages
// before_seq / after_seq) or dropped as the reader scrolls, and a jump (search hit, quoted
// message) loads a window around its target. Round separators, quiet notes for skip records,
// reply quotes, and the actions on one's own messages (reply, edit, delete).
import { fetchFile } from './api.js';
import { downloadUrl, h, toast } from './dom.js';
import { errorText, roleLabel, skipNote, systemText, t } from './i18n.js';
import { icon } from './icons.js';
import { plainText, renderMarkdown } from './markdown.js';
import { MessageStore } from './store.js';
import { formatClock, formatTime } from './time.js';

/** @typedef {import('./store.js').Message} Message */

const NEAR_BOTTOM_PX = 80;
/** Load or render more when the reader is this close to an end of what is shown. */
const EDGE_PX = 800;
export const MAX_RENDERED = 240;
const CHUNK = 100;
/** Messages rendered when the room opens. */
const FIRST_WINDOW = 50;
/** A jump renders this many messages on each side of its target. */
const JUMP_HALF = 90;
export const PAGE = 100;

/**
 * @typedef {object} ListContext
 * @property {() => string} me
 * @property {() => string} timezone
 * @property {() => any[]} members
 * @property {() => string} mode             interaction_mode
 * @property {() => boolean} isAdmin
 * @property {(roundId: string) => number} roundNumber
 * @property {(args: { before_seq?: number, after_seq?: number, limit: number }) => Promise<Message[]>} fetchPage
 * @property {(m: Message) => void} onReply
 * @property {(m: Message, text: string) => Promise<boolean>} onEdit   saves an edit; true when done
 * @property {(m: Message) => void} onDelete
 * @property {(messageId: string) => void} onJumpToId
 */

export class MessageList {
  /** @param {ListContext} ctx */
  constructor(ctx) {
    this.ctx = ctx;
    this.store = new MessageStore();
    /** Rendered window [lo, hi] (seqs); lo > hi when nothing is shown. */
    this.lo = 1;
    this.hi = 0;
    /** The window's bottom is the newest message (live messages are appended). */
    this.atLive = true;
    /** @type {Map<number, HTMLElement[]>} seq → its elements (separator?, message) */
    this.rendered = new Map();
    this.loading = false;
    /** @type {Map<string, HTMLElement>} round_id → separator shown */
    this.separators = new Map();
    /** Editing: message_id being edited (its node shows a form). */
    this.editing = /** @type {string|null} */ (null);

    this.topStatus = h('p', { class: 'msg-edge muted', hidden: true });
    this.list = h('ol', { class: 'msg-list', 'aria-label': t('msg.listLabel') });
    this.empty = h('p', { class: 'msg-empty muted' }, t('msg.empty'));
    this.scroller = h('div', { class: 'msg-scroll', tabindex: '0', 'aria-label': t('msg.logLabel'), role: 'log', 'aria-live': 'polite', 'aria-relevant': 'additions' }, this.topStatus, this.empty, this.list);
    this.newPill = h('button', { type: 'button', class: 'new-pill', hidden: true }, t('msg.newPill'));
    this.newPill.addEventListener('click', () => this.jumpToLatest());
    let queued = false;
    this.scroller.addEventListener('scroll', () => {
      if (this.isNearBottom() && this.atLive) this.newPill.hidden = true;
      if (queued) return;
      queued = true;
      requestAnimationFrame(() => {
        queued = false;
        this.onScroll();
      });
    });
    this.el = h('div', { class: 'msg-pane' }, this.scroller, this.newPill);
  }

  /** Number of message elements on the page (for tests and the window bound). */
  get renderedCount() {
    return this.rendered.size;
  }

  /** The first page (newest messages); the window opens at the bottom. @param {Message[]} messages */
  openLatest(messages) {
    this.store.addPage(messages, { live: true });
    if (messages.length === 0) this.store.resumeSeq = 0;
    const top = this.store.resumeSeq ?? 0;
    // Enough to fill a tall screen; the rest of the page is rendered from the store on scroll.
    this.setWindow(Math.max(1, top - FIRST_WINDOW + 1), top);
    this.atLive = true;
    this.scrollToBottom();
  }

  /** The resume point for the live subscription (null before the first page). */
  get resumeSeq() {
    return this.store.resumeSeq;
  }

  /**
   * A message from the socket or our own send. Own messages are always brought into view, even
   * when the socket's copy came first (the send's answer is then a duplicate).
   * @param {Message} message @param {{ mine?: boolean }} [opts]
   * @returns {{ outcome: string, gap: boolean }}
   */
  addLive(message, { mine = false } = {}) {
    const stick = this.isNearBottom();
    const wasResume = this.store.resumeSeq;
    const result = this.store.addLive(message);
    const { outcome } = result;
    if (outcome === 'updated') {
      this.rerender(message.seq);
    } else if (outcome === 'new' && this.atLive && wasResume !== null && this.hi === wasResume) {
      // Extend the window over everything that now connects to the live edge.
      const top = this.store.resumeSeq ?? this.hi;
      for (let s = this.hi + 1; s <= top; s++) this.appendSeq(s);
      this.hi = Math.max(this.hi, top);
      this.empty.hidden = this.rendered.size > 0;
      if (stick || mine) this.trimTop();
    }
    if (mine) {
      if (this.atLive && this.rendered.has(message.seq)) this.scrollToBottom();
      else void this.jumpTo(message.seq, { flash: false, block: 'end' });
    } else if (outcome === 'new' && message.seq > (wasResume ?? 0)) {
      if (stick && this.atLive) this.scrollToBottom();
      else if (!message.visible) {
        // quiet skip records never call the reader down
      } else this.newPill.hidden = false;
    }
    return result;
  }

  // ── window ──

  /** Renders exactly [lo, hi] (clipped to what the store holds around it). @param {number} lo @param {number} hi */
  setWindow(lo, hi) {
    this.list.replaceChildren();
    this.rendered.clear();
    this.separators.clear();
    this.lo = lo;
    this.hi = hi;
    for (let s = lo; s <= hi; s++) this.appendSeq(s);
    this.empty.hidden = this.rendered.size > 0 || (this.store.resumeSeq ?? 0) > 0;
    this.updateEdges();
  }

  /** @param {number} seq */
  appendSeq(seq) {
    const m = this.store.get(seq);
    if (!m) return;
    const els = this.elementsFor(m);
    this.list.append(...els);
    this.rendered.set(seq, els);
    // A visible message of a round whose separator was quiet makes it show.
    if (m.round_id && (m.visible || m.role === 'system')) this.separators.get(m.round_id)?.classList.remove('round-sep-quiet');
  }

  /** @param {number} seq */
  prependSeq(seq) {
    const m = this.store.get(seq);
    if (!m) return;
    // The old first message may lose its separator now that its predecessor is known.
    const next = this.store.get(seq + 1);
    const els = this.elementsFor(m);
    this.list.prepend(...els);
    this.rendered.set(seq, els);
    if (next && this.rendered.has(seq + 1)) this.rerender(seq + 1);
  }

  /** Opens the inline editor on one's own message. @param {Message} m */
  startEdit(m) {
    this.editing = m.message_id;
    this.rerender(m.seq);
  }

  /** Redraws one message in place (edited, deleted, processed). @param {number} seq */
  rerender(seq) {
    const old = this.rendered.get(seq);
    const m = this.store.get(seq);
    if (!old || !m) return;
    const els = this.elementsFor(m);
    old[old.length - 1].after(...els);
    for (const el of old) el.remove();
    this.rendered.set(seq, els);
  }

  /** @param {number} seq */
  removeSeq(seq) {
    for (const el of this.rendered.get(seq) || []) el.remove();
    this.rendered.delete(seq);
  }

  /** Drops elements above the viewport once the window is too large (keeps the reader's place). */
  trimTop() {
    if (this.rendered.size <= MAX_RENDERED) return;
    const before = this.scroller.scrollHeight;
    while (this.rendered.size > MAX_RENDERED && this.lo < this.hi) {
      this.removeSeq(this.lo);
      this.lo += 1;
    }
    this.scroller.scrollTop -= before - this.scroller.scrollHeight;
    this.store.trim(this.lo, this.hi);
    this.updateEdges();
  }

  trimBottom() {
    if (this.rendered.size <= MAX_RENDERED) return;
    while (this.rendered.size > MAX_RENDERED && this.hi > this.lo) {
      this.removeSeq(this.hi);
      this.hi -= 1;
      this.atLive = false;
    }
    this.store.trim(this.lo, this.hi);
    this.updateEdges();
  }

  updateEdges() {
    const atStart = this.lo <= 1;
    this.topStatus.hidden = atStart || this.rendered.size === 0;
    this.topStatus.textContent = this.loading ? t('msg.loading') : t('msg.scrollForOlder');
    if (!this.atLive) this.newPill.hidden = false;
    this.newPill.textContent = this.atLive ? t('msg.newPill') : t('msg.toLatest');
  }

  onScroll() {
    if (this.loading) return;
    const s = this.scroller;
    if (s.scrollTop < EDGE_PX && this.lo > 1) void this.extendUp();
    else if (!this.atLive && s.scrollHeight - s.scrollTop - s.clientHeight < EDGE_PX) void this.extendDown();
  }

  /** Shows older messages: from the store, or a page from the server. */
  async extendUp() {
    if (this.lo <= 1 || this.loading) return;
    const want = Math.max(1, this.lo - CHUNK);
    if (!this.store.has(this.lo - 1) || !this.store.has(want)) {
      this.loading = true;
      this.updateEdges();
      try {
        const page = await this.ctx.fetchPage({ before_seq: this.lo, limit: PAGE });
        this.store.addPage(page);
      } catch (err) {
        toast(t('msg.loadFailed', { error: errorText(err) }), 'error');
        return;
      } finally {
        this.loading = false;
      }
    }
    const before = this.scroller.scrollHeight;
    const topBefore = this.scroller.scrollTop;
    let s = this.lo - 1;
    for (; s >= want && this.store.has(s); s--) this.prependSeq(s);
    this.lo = s + 1;
    this.scroller.scrollTop = topBefore + (this.scroller.scrollHeight - before);
    this.trimBottom();
    this.updateEdges();
  }

  /** Shows newer messages (after a jump back in time). */
  async extendDown() {
    if (this.atLive || this.loading) return;
    const want = this.hi + CHUNK;
    const liveTop = this.store.resumeSeq;
    if (!this.store.has(this.hi + 1) || (!this.store.has(want) && !(liveTop !== null && liveTop < want && this.store.has(liveTop)))) {
      this.loading = true;
      try {
        const page = await this.ctx.fetchPage({ after_seq: this.hi, limit: PAGE });
        const reachedEnd = page.length < PAGE;
        this.store.addPage(page, { live: reachedEnd });
        if (reachedEnd && page.length === 0) this.store.resumeSeq = Math.max(this.store.resumeSeq ?? 0, this.hi);
      } catch (err) {
        toast(t('msg.loadFailed', { error: errorText(err) }), 'error');
        return;
      } finally {
        this.loading = false;
      }
    }
    let s = this.hi + 1;
    for (; s <= want && this.store.has(s); s++) this.appendSeq(s);
    this.hi = s - 1;
    if (this.store.resumeSeq !== null && this.hi >= this.store.resumeSeq) {
      this.atLive = true;
      this.newPill.hidden = true;
    }
    this.trimTop();
    this.updateEdges();
  }

  /**
   * Brings `seq` into view: renders a window around it, fetching that window first when the
   * store lacks it. Returns false when the message does not exist.
   * @param {number} seq @param {{ flash?: boolean, block?: ScrollLogicalPosition }} [opts]
   */
  async jumpTo(seq, { flash = true, block = 'center' } = {}) {
    const half = JUMP_HALF;
    if (!this.rendered.has(seq)) {
      if (!this.store.has(seq) || !this.store.has(Math.max(1, seq - half))) {
        this.loading = true;
        try {
          const page = await this.ctx.fetchPage({ after_seq: Math.max(0, seq - half - 1), limit: Math.min(200, half * 2 + 1) });
          this.store.addPage(page, { live: page.length < Math.min(200, half * 2 + 1) });
        } catch (err) {
          toast(t('msg.loadFailed', { error: errorText(err) }), 'error');
          return false;
        } finally {
          this.loading = false;
        }
      }
      if (!this.store.has(seq)) return false;
      let lo = seq;
      while (lo > 1 && seq - lo < half && this.store.has(lo - 1)) lo -= 1;
      let hi = seq;
      while (hi - seq < half && this.store.has(hi + 1)) hi += 1;
      this.atLive = this.store.resumeSeq !== null && hi >= this.store.resumeSeq;
      this.setWindow(lo, hi);
    }
    const node = this.rendered.get(seq)?.at(-1);
    if (!node) return false;
    node.scrollIntoView({ block });
    if (flash) {
      node.classList.remove('flash');
      void node.offsetWidth;
      node.classList.add('flash');
      node.tabIndex = -1;
      node.focus({ preventScroll: true });
    }
    this.updateEdges();
    return true;
  }

  /** Back to the newest messages (the live edge). */
  async jumpToLatest() {
    const top = this.store.resumeSeq;
    if (this.atLive) return this.scrollToBottom(true);
    if (top !== null && this.store.has(top) && this.store.has(Math.max(1, top - CHUNK))) {
      this.atLive = true;
      this.setWindow(Math.max(1, top - CHUNK * 2), top);
    } else {
      try {
        const page = await this.ctx.fetchPage({ limit: PAGE });
        this.store.addPage(page, { live: true });
        const newest = this.store.resumeSeq ?? 0;
        this.atLive = true;
        this.setWindow(Math.max(1, newest - PAGE + 1), newest);
      } catch (err) {
        toast(t('msg.loadFailed', { error: errorText(err) }), 'error');
        return;
      }
    }
    this.scrollToBottom();
  }

  /**
   * After a reconnect: an edit or deletion made meanwhile to a message held here has no event (a
   * replay carries only newer messages), so the window is read again from the server and redrawn;
   * held messages outside it are forgotten (paging reads them again when they come into view).
   */
  async refreshHeld() {
    const lo = this.lo;
    const hi = Math.min(this.hi, this.store.resumeSeq ?? this.hi);
    if (hi < lo || this.rendered.size === 0) return;
    try {
      for (let after = lo - 1; after < hi; ) {
        const page = await this.ctx.fetchPage({ after_seq: after, limit: Math.min(200, hi - after) });
        if (page.length === 0) break;
        for (const m of page) if (m.seq <= hi) this.store.put(m);
        after = page[page.length - 1].seq;
      }
    } catch {
      return; // the next reconnect tries again; what is shown stays as it was
    }
    this.store.forgetOutside(this.lo, this.hi);
    this.refreshAll();
  }

  /** Redraws the window (timezone, members, language changed); keeps the place. */
  refreshAll() {
    const stick = this.isNearBottom();
    const top = this.scroller.scrollTop;
    this.setWindow(this.lo, this.hi);
    if (stick && this.atLive) this.scrollToBottom();
    else this.scroller.scrollTop = top;
  }

  /** Numbers round separators drawn before the room knew the round. */
  relabelRounds() {
    for (const [roundId, sep] of this.separators) {
      if (sep.dataset.numbered === '1') continue;
      const n = this.ctx.roundNumber(roundId);
      if (n <= 0) continue;
      sep.dataset.numbered = '1';
      sep.setAttribute('aria-label', t('msg.roundStart', { n }));
      /** @type {HTMLElement} */ (sep.firstChild).textContent = `${t('msg.round', { n })} · ${sep.dataset.time}`;
    }
  }

  isNearBottom() {
    const s = this.scroller;
    return s.scrollHeight - s.scrollTop - s.clientHeight < NEAR_BOTTOM_PX;
  }

  scrollToBottom(smooth = false) {
    this.scroller.scrollTo({ top: this.scroller.scrollHeight, behavior: smooth ? 'smooth' : 'auto' });
    if (this.atLive) this.newPill.hidden = true;
  }

  // ── elements ──

  /** @param {Message} m @returns {HTMLElement[]} */
  elementsFor(m) {
    const out = [];
    const prev = this.store.get(m.seq - 1);
    if (m.round_id && (!prev || prev.round_id !== m.round_id)) out.push(this.separatorFor(m));
    out.push(buildNode(m, this.ctx, this));
    return out;
  }

  /**
   * A round's separator is quiet (hidden with the skip notes) while the round shows nothing
   * visible: looks at the round's messages held from `m` on.
   * @param {Message} m
   */
  roundHasVisible(m) {
    for (let s = m.seq, n = 0; n < MAX_RENDERED; s++, n++) {
      const x = this.store.get(s);
      if (!x || x.round_id !== m.round_id) return false;
      if (x.visible || x.role === 'system') return true;
    }
    return false;
  }

  /** @param {Message} m */
  separatorFor(m) {
    const n = this.ctx.roundNumber(m.round_id);
    const label = n > 0 ? t('msg.round', { n }) : t('msg.newRound');
    const time = formatClock(m.timestamp, this.ctx.timezone());
    const sep = h(
      'li',
      { class: `round-sep${this.roundHasVisible(m) ? '' : ' round-sep-quiet'}`, role: 'separator', dataset: { roundId: m.round_id, time, numbered: n > 0 ? '1' : '0' }, 'aria-label': n > 0 ? t('msg.roundStart', { n }) : label },
      h('span', {}, `${label} · ${time}`),
    );
    this.separators.set(m.round_id, sep);
    return sep;
  }
}

/** A stable hue per name; similar names (Echo1, Echo2) land far apart (golden angle). @param {string} name */
function hueOf(name) {
  let hash = 0;
  for (const ch of name.toLowerCase()) hash = (hash * 31 + (ch.codePointAt(0) ?? 0)) >>> 0;
  return Math.round((hash * 137.508) % 360);
}

/** First letter, plus a trailing digit so Bot1 and Bot2 differ ("B1", "B2"). @param {string} name */
function initialsOf(name) {
  const chars = [...name];
  const first = (chars[0] || '?').toUpperCase();
  const last = chars[chars.length - 1];
  return chars.length > 1 && /\d/.test(last) ? first + last : first;
}

/** @param {Message} message @param {ListContext} ctx @param {MessageList} list */
function buildNode(message, ctx, list) {
  const tz = ctx.timezone();
  const time = formatTime(message.timestamp, tz);
  const timeEl = h('time', { datetime: message.timestamp, title: `${time}（${tz}）` }, time);

  if (!message.visible) {
    return h(
      'li',
      { class: `note note-skip note-${message.skip_reason || 'skip'}`, dataset: { seq: message.seq, messageId: message.message_id, sender: message.sender } },
      h('span', { class: 'note-text' }, skipNote(message.sender, message.skip_reason, message.text_content)),
      ' ',
      timeEl,
    );
  }

  if (message.role === 'system') {
    return h(
      'li',
      { class: 'note note-system', dataset: { seq: message.seq, messageId: message.message_id } },
      h('span', { class: 'badge badge-system' }, roleLabel('system')),
      ' ',
      h('span', { class: 'note-text' }, systemText(message.text_content)),
      ' ',
      timeEl,
    );
  }

  const me = (ctx.me() || '').toLowerCase();
  const members = ctx.members();
  const member = members.find((m) => m.name.toLowerCase() === message.sender.toLowerCase());
  const mine = message.sender.toLowerCase() === me;
  const mentionsMe = !mine && (message.mentions || []).some((/** @type {string} */ n) => n.toLowerCase() === me);
  const classes = ['msg', message.role === 'ai_agent' ? 'msg-agent' : 'msg-user'];
  if (mine) classes.push('msg-mine');
  if (mentionsMe) classes.push('msg-mentions-me');
  if (message.deleted) classes.push('msg-deleted');

  const initials = initialsOf(message.sender);
  const avatar = h('span', { class: `avatar${initials.length > 1 ? ' avatar-2' : ''}`, 'aria-hidden': 'true' }, initials);
  avatar.style.setProperty('--hue', String(hueOf(message.sender)));

  const body = h('div', { class: 'msg-body markdown' });
  if (message.deleted) body.append(h('p', { class: 'muted' }, t('msg.deleted')));
  else body.append(renderMarkdown(message.text_content, { names: members.map((m) => m.name), me: ctx.me() }));

  // Badges say what is not obvious: an agent, the host in a host-mode room. People are the
  // default and one's own messages are marked by their colour, not a badge on every line.
  const head = h(
    'div',
    { class: 'msg-head' },
    h('span', { class: 'msg-sender' }, message.sender),
    message.role === 'ai_agent' ? h('span', { class: 'badge badge-ai_agent' }, roleLabel('ai_agent')) : null,
    member?.is_host && ctx.mode() === 'host' ? h('span', { class: 'badge badge-host' }, t('badge.host')) : null,
    timeEl,
    message.edited_at && !message.deleted ? h('span', { class: 'muted msg-edited' }, t('msg.edited')) : null,
  );

  const quote = message.response_to ? quoteFor(message.response_to, list, ctx) : null;
  const actions = message.deleted || list.editing === message.message_id ? null : actionsFor(message, mine, ctx, list);
  const main = h('div', { class: 'msg-main' }, head, quote, body, message.file_url && !message.deleted ? attachment(message) : null);
  if (list.editing === message.message_id) main.replaceChild(editForm(message, ctx, list), body);

  return h(
    'li',
    { class: classes.join(' '), dataset: { seq: message.seq, messageId: message.message_id, sender: message.sender } },
    avatar,
    main,
    actions,
  );
}

/** The quoted message a reply answers (from the store when held, else a link to load it). */
function quoteFor(/** @type {string} */ id, /** @type {MessageList} */ list, /** @type {ListContext} */ ctx) {
  const target = list.store.byId(id);
  const btn = h(
    'button',
    { type: 'button', class: 'msg-quote', title: t('msg.quoteJump') },
    target
      ? [h('strong', {}, target.sender), ' ', h('span', { class: 'msg-quote-text' }, target.deleted ? t('msg.deleted') : plainText(target.text_content, 100))]
      : h('span', { class: 'msg-quote-text muted' }, t('msg.quoteOlder')),
  );
  btn.addEventListener('click', () => (target ? list.jumpTo(target.seq) : ctx.onJumpToId(id)));
  return btn;
}

/** @param {Message} message @param {boolean} mine @param {ListContext} ctx @param {MessageList} list */
function actionsFor(message, mine, ctx, list) {
  const btn = (/** @type {string} */ cls, /** @type {string} */ label, /** @type {string} */ ic, /** @type {() => void} */ fn) => {
    const b = h('button', { type: 'button', class: `btn btn-ghost btn-icon btn-tiny ${cls}`, 'aria-label': label, title: label }, icon(ic, { size: 14 }));
    b.addEventListener('click', fn);
    return b;
  };
  return h(
    'div',
    { class: 'msg-actions' },
    btn('msg-reply', t('msg.reply'), 'reply', () => ctx.onReply(message)),
    mine ? btn('msg-edit', t('msg.edit'), 'edit', () => list.startEdit(message)) : null,
    mine || ctx.isAdmin() ? btn('msg-delete', t('msg.delete'), 'trash', () => ctx.onDelete(message)) : null,
  );
}

/** The inline editor for one's own message. @param {Message} message @param {ListContext} ctx @param {MessageList} list */
function editForm(message, ctx, list) {
  const input = h('textarea', { class: 'msg-edit-input', rows: '3', 'aria-label': t('msg.editLabel') });
  input.value = message.text_content;
  const save = h('button', { type: 'submit', class: 'btn btn-primary btn-small' }, t('common.save'));
  const cancel = h('button', { type: 'button', class: 'btn btn-ghost btn-small' }, t('common.cancel'));
  const form = h('form', { class: 'msg-edit-form', novalidate: true }, input, h('div', { class: 'form-actions' }, cancel, save));
  const close = () => {
    list.editing = null;
    list.rerender(message.seq);
  };
  cancel.addEventListener('click', close);
  input.addEventListener('keydown', (e) => {
    if (e.key === 'Escape') close();
  });
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    save.disabled = true;
    const ok = await ctx.onEdit(message, input.value);
    save.disabled = false;
    if (ok) close();
  });
  requestAnimationFrame(() => input.focus());
  return form;
}

/** The file name a stored upload was given, without its timestamp. @param {string} url */
export function fileNameOf(url) {
  try {
    const last = new URL(url, location.href).pathname.split('/').pop() || 'file';
    return decodeURIComponent(last).replace(/^\d{13,}_/, '');
  } catch {
    return 'file';
  }
}

/**
 * Image previews fetched with the token, kept across re-renders (a window moving back over an
 * image does not fetch it again); the least recently used are dropped and their blob URLs
 * revoked beyond IMAGE_CACHE_MAX.
 */
const IMAGE_CACHE_MAX = 40;
/** @type {Map<string, Promise<string>>} */
const imageCache = new Map();

/** @param {string} url */
function imageUrl(url) {
  let p = imageCache.get(url);
  if (p) {
    imageCache.delete(url);
    imageCache.set(url, p);
    return p;
  }
  p = fetchFile(url).then((blob) => URL.createObjectURL(blob));
  p.catch(() => imageCache.delete(url));
  imageCache.set(url, p);
  while (imageCache.size > IMAGE_CACHE_MAX) {
    const [oldest, old] = imageCache.entries().next().value;
    imageCache.delete(oldest);
    old.then((u) => URL.revokeObjectURL(u)).catch(() => undefined);
  }
  return p;
}

/** Revokes every cached preview (the room closes). */
export function dropImageCache() {
  for (const p of imageCache.values()) p.then((u) => URL.revokeObjectURL(u)).catch(() => undefined);
  imageCache.clear();
}

/** @param {Message} message */
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
    // Downloads need the token: fetch with it, hand the blob to the browser, then revoke it.
    link.addEventListener('click', async (e) => {
      e.preventDefault();
      try {
        const blob = await fetchFile(url);
        const objectUrl = URL.createObjectURL(blob);
        downloadUrl(objectUrl, name);
        setTimeout(() => URL.revokeObjectURL(objectUrl), 1000);
      } catch (err) {
        toast(t('msg.downloadFailed', { error: errorText(err) }), 'error');
      }
    });
  }
  const wrap = h('div', { class: 'msg-file' }, link);
  if (ours && /^image\//.test(message.file_type || '')) {
    const img = h('img', { class: 'attachment-preview', alt: name, hidden: true });
    wrap.prepend(img);
    img.addEventListener('load', () => (img.hidden = false));
    img.addEventListener('error', () => img.remove());
    imageUrl(url)
      .then((u) => (img.src = u))
      .catch(() => img.remove());
  }
  return wrap;
}
