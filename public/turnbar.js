// @ts-check
// The turn bar: who holds the turn, why (rotation / mention / host), whether they may skip, what
// the agent reported it is doing (set_activity), a live countdown to the deadline, and the
// agents this round will still ask. While the page is disconnected the countdown stops (the
// page cannot know the deadline still holds). Admins get a button to pass a silent agent's turn.
import { h } from './dom.js';
import { icon } from './icons.js';
import { reasonLabel, roundEndLabel, t } from './i18n.js';
import { visibleQueue } from './room-state.js';
import { formatCountdown } from './time.js';

/**
 * @typedef {object} TurnBarState
 * @property {boolean} paused
 * @property {boolean} connected
 * @property {string} mode                 interaction_mode
 * @property {{ agent: string, can_skip: boolean, reason: string, deadline: string, timeout_ms?: number|null }|null} turn
 * @property {any} round                   current_round
 * @property {boolean} canPass
 * @property {string} me
 * @property {{ activity: string, note: string }|null} activity   the turn holder's activity
 */

export class TurnBar {
  /** @param {{ now: () => number, onPass: () => void }} opts */
  constructor({ now, onPass }) {
    this.now = now;
    /** @type {TurnBarState|null} */
    this.state = null;
    /** @type {ReturnType<typeof setInterval>|undefined} */
    this.timer = undefined;

    this.icon = h('span', { class: 'turn-icon', 'aria-hidden': 'true' });
    this.headline = h('span', { class: 'turn-headline' });
    this.agent = h('strong', { class: 'turn-agent' });
    this.reason = h('span', { class: 'chip turn-reason' });
    this.skip = h('span', { class: 'chip turn-skip' });
    this.activity = h('span', { class: 'turn-activity', hidden: true });
    this.countdown = h('span', { class: 'turn-countdown', role: 'timer', 'aria-label': t('turn.remaining'), 'aria-live': 'off' });
    this.progress = h('span', { class: 'turn-progress', 'aria-hidden': 'true' }, h('span', { class: 'turn-progress-fill' }));
    this.queue = h('ol', { class: 'turn-queue', 'aria-label': t('turn.queue') });
    this.passBtn = h('button', { type: 'button', class: 'btn btn-small btn-ghost turn-pass', hidden: true }, t('turn.pass'));
    this.passBtn.addEventListener('click', () => onPass());
    this.el = h(
      'section',
      { class: 'turnbar', 'aria-label': t('turn.label'), dataset: { state: 'idle' } },
      h(
        'div',
        { class: 'turn-line' },
        this.icon,
        h('span', { class: 'turn-status', role: 'status', 'aria-live': 'polite' }, this.headline, this.agent, this.reason, this.skip, this.activity),
        h('span', { class: 'turn-right' }, this.countdown, this.passBtn),
      ),
      this.progress,
      this.queue,
    );
  }

  /** @param {TurnBarState} s */
  update(s) {
    this.state = s;
    const { paused, turn, round } = s;
    let mode;
    if (paused) mode = 'paused';
    else if (turn) mode = 'turn';
    else if (round && round.completed && round.end_reason === 'guard') mode = 'guard';
    else mode = 'idle';
    this.el.dataset.state = mode;
    this.el.dataset.connected = String(s.connected);

    const mine = Boolean(turn && turn.agent.toLowerCase() === (s.me || '').toLowerCase());
    this.agent.textContent = turn ? turn.agent : '';
    this.agent.hidden = !turn || mine;
    this.reason.hidden = !turn;
    this.skip.hidden = !turn;
    if (turn) {
      this.reason.textContent = reasonLabel(turn.reason);
      this.reason.dataset.reason = turn.reason;
      this.skip.textContent = turn.can_skip ? t('turn.canSkip') : t('turn.mustAnswer');
      this.skip.classList.toggle('chip-warn', !turn.can_skip);
    }
    const act = turn && s.activity ? s.activity : null;
    this.activity.hidden = !act;
    this.activity.textContent = act ? activityText(turn?.agent ?? '', act) : '';
    if (mode === 'paused') {
      this.icon.replaceChildren(icon('pause', { size: 18 }));
      this.headline.textContent = turn ? t('turn.pausedWith') : t('turn.paused');
    } else if (mode === 'turn') {
      this.icon.replaceChildren(icon('mic', { size: 18 }));
      this.headline.textContent = mine ? t('turn.yours') : t('turn.speaking');
    } else if (mode === 'guard') {
      this.icon.replaceChildren(icon('alert', { size: 18 }));
      this.headline.textContent = roundEndLabel('guard');
    } else {
      this.icon.replaceChildren(icon('chat', { size: 18 }));
      this.headline.textContent = s.mode === 'host' ? t('turn.idleHost') : t('turn.idle');
    }
    this.passBtn.hidden = !(s.canPass && turn && !paused && s.connected);
    if (turn) this.passBtn.setAttribute('aria-label', t('turn.passWho', { name: turn.agent }));

    this.renderQueue(round);
    clearInterval(this.timer);
    this.timer = undefined;
    if (mode === 'turn' && turn?.deadline && s.connected) {
      this.tick();
      this.timer = setInterval(() => this.tick(), 250);
    } else if (mode === 'turn' && !s.connected) {
      // Disconnected: the deadline may have moved (resume, extend_turn); show no stale countdown.
      this.countdown.hidden = false;
      this.countdown.textContent = '--:--';
      this.countdown.dataset.remainingMs = '';
      this.countdown.classList.remove('urgent');
      this.countdown.title = t('turn.disconnected');
      this.progress.hidden = true;
    } else {
      this.countdown.textContent = '';
      this.countdown.hidden = true;
      this.progress.hidden = true;
    }
  }

  /** @param {any} round */
  renderQueue(round) {
    const { names, current } = visibleQueue(round);
    this.queue.hidden = names.length < 2;
    this.queue.replaceChildren(
      ...names.map((name, i) => {
        const cls = i < current ? 'done' : i === current ? 'current' : 'next';
        return h('li', { class: `turn-queue-item ${cls}`, ...(i === current ? { 'aria-current': 'step' } : {}) }, name);
      }),
    );
  }

  tick() {
    const turn = this.state?.turn;
    if (!turn || !turn.deadline) return;
    const total = turn.timeout_ms || 0;
    let remaining = Date.parse(turn.deadline) - this.now();
    // Clock skew must not show more time than a whole turn.
    if (total > 0) remaining = Math.min(remaining, total);
    this.countdown.hidden = false;
    this.countdown.title = '';
    this.countdown.textContent = remaining > 0 ? formatCountdown(remaining) : '00:00';
    this.countdown.dataset.remainingMs = String(Math.max(0, Math.round(remaining)));
    this.countdown.classList.toggle('urgent', remaining < Math.min(10_000, total > 0 ? total * 0.25 : 10_000));
    this.progress.hidden = !total;
    const ratio = total > 0 ? Math.min(1, Math.max(0, remaining / total)) : 0;
    this.progress.style.setProperty('--ratio', ratio.toFixed(3));
  }

  destroy() {
    clearInterval(this.timer);
  }
}

/** "Alpha 正在思考…（读取文件）" @param {string} name @param {{ activity: string, note: string }} act */
export function activityText(name, act) {
  const base = t(`activity.${act.activity}`, { name });
  return act.note ? `${base}${t('activity.note', { note: act.note })}` : base;
}
