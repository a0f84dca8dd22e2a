// @ts-check
// The sidebar's "统计" section: rounds, messages and a per-agent table of turns (answered,
// skipped, timed out, passed by an admin, offline) and the median answer time, from the
// get_room_stats tool. Refreshed by the room view (open, round_end, reconnect) and by its button.
import { ApiError, callTool } from './api.js';
import { h } from './dom.js';
import { errorText, t } from './i18n.js';
import { icon } from './icons.js';

/** Table columns: the stats field and its header (a header breaks only at the <wbr> marks). */
const COLUMNS = [
  ['turns_answered', 'stats.answered'],
  ['turns_skipped', 'stats.skipped'],
  ['turns_timed_out', 'stats.timedOut'],
  ['turns_passed', 'stats.passed'],
  ['turns_offline', 'stats.offline'],
  ['median_answer_ms', 'stats.median'],
];
/** A header's text in parts ("|" in the dictionary marks where it may break). @param {string} key */
const headerParts = (key) => t(key).split('|');

/** 12345 → "12.3 秒"; null → null (shown as "—"). */
export function formatSeconds(ms) {
  if (typeof ms !== 'number' || !Number.isFinite(ms)) return null;
  return t('stats.seconds', { s: (ms / 1000).toFixed(1) });
}

export class StatsPanel {
  /** @param {{ roomId: string, onNotMember?: () => void }} opts */
  constructor({ roomId, onNotMember }) {
    this.roomId = roomId;
    this.onNotMember = onNotMember;
    this.seq = 0;
    this.timer = null;
    this.destroyed = false;

    this.refreshBtn = h(
      'button',
      { type: 'button', class: 'btn btn-ghost btn-small btn-icon stats-refresh', 'aria-label': t('stats.refresh'), title: t('stats.refresh') },
      icon('refresh', { size: 15 }),
    );
    this.refreshBtn.addEventListener('click', () => this.refresh());
    this.summary = h('dl', { class: 'stats-summary' });
    this.status = h('p', { class: 'muted stats-status' }, t('msg.loading'));
    this.body = h('tbody');
    this.table = h(
      'table',
      { class: 'stats-table', hidden: true },
      h('caption', { class: 'visually-hidden' }, t('stats.caption')),
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          h('th', { scope: 'col', class: 'stats-name' }, t('role.ai_agent')),
          // Figure headers are set upright in a narrow column (styles.css, .stats-head): six
          // words side by side do not fit the 300 px sidebar in English (nor all of Chinese).
          ...COLUMNS.map(([key, label]) =>
            h('th', { scope: 'col', dataset: { key } }, h('span', { class: 'stats-head' }, ...headerParts(label).flatMap((p, i) => (i ? [h('wbr'), p] : [p])))),
          ),
        ),
      ),
      this.body,
    );
    this.scroller = h('div', { class: 'stats-scroll' }, this.table);
    this.el = h(
      'section',
      { class: 'side-section stats', 'aria-labelledby': 'stats-heading' },
      h('div', { class: 'side-head' }, h('h2', { id: 'stats-heading' }, t('stats.title')), this.refreshBtn),
      this.summary,
      this.status,
      this.scroller,
    );
  }

  /** Refresh soon (several round_end events in a row make one call). */
  schedule(delayMs = 300) {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.refresh(), delayMs);
  }

  async refresh() {
    clearTimeout(this.timer);
    if (this.destroyed) return;
    const seq = ++this.seq;
    this.refreshBtn.disabled = true;
    this.el.setAttribute('aria-busy', 'true');
    try {
      const { stats } = await callTool('get_room_stats', { room_id: this.roomId });
      if (this.destroyed || seq !== this.seq) return;
      this.render(stats);
    } catch (err) {
      if (this.destroyed || seq !== this.seq) return;
      if (err instanceof ApiError && err.code === 'not_a_member') {
        this.onNotMember?.();
        return;
      }
      this.status.hidden = false;
      this.status.textContent = t('stats.failed', { error: errorText(err) });
    } finally {
      if (seq === this.seq && !this.destroyed) {
        this.refreshBtn.disabled = false;
        this.el.removeAttribute('aria-busy');
      }
    }
  }

  render(stats) {
    this.summary.replaceChildren(
      h('div', { class: 'stats-figure', dataset: { key: 'rounds' } }, h('dt', {}, t('stats.rounds')), h('dd', {}, String(stats.rounds))),
      h('div', { class: 'stats-figure', dataset: { key: 'messages' } }, h('dt', {}, t('stats.messages')), h('dd', {}, String(stats.messages))),
    );
    const agents = stats.agents || [];
    this.body.replaceChildren(
      ...agents.map((a) =>
        h(
          'tr',
          { dataset: { name: a.name } },
          h('th', { scope: 'row', class: 'stats-name' }, a.name),
          ...COLUMNS.map(([key]) => {
            if (key !== 'median_answer_ms') return h('td', { dataset: { key } }, String(a[key] ?? 0));
            const text = formatSeconds(a[key]);
            return text
              ? h('td', { dataset: { key } }, text)
              : h('td', { dataset: { key } }, h('span', { 'aria-hidden': 'true' }, '—'), h('span', { class: 'visually-hidden' }, t('info.none')));
          }),
        ),
      ),
    );
    this.table.hidden = agents.length === 0;
    this.status.hidden = agents.length > 0;
    this.status.textContent = agents.length ? '' : t('stats.noAgents');
    // A table wider than the panel scrolls inside its box; then the box takes keyboard focus.
    requestAnimationFrame(() => {
      const scrolls = this.scroller.scrollWidth > this.scroller.clientWidth + 1;
      if (scrolls) {
        this.scroller.setAttribute('tabindex', '0');
        this.scroller.setAttribute('role', 'region');
        this.scroller.setAttribute('aria-label', t('stats.scrollLabel'));
      } else {
        for (const a of ['tabindex', 'role', 'aria-label']) this.scroller.removeAttribute(a);
      }
    });
  }

  destroy() {
    this.destroyed = true;
    clearTimeout(this.timer);
  }
}
