// The turn bar: who holds the turn, why (rotation / mention / host), whether they may skip, and
// a live countdown to the deadline. Admins get a button to pass a silent agent's turn.
import { h } from './dom.js';
import { icon } from './icons.js';
import { REASON_LABEL, ROUND_END_LABEL } from './i18n.js';
import { formatCountdown } from './time.js';

export class TurnBar {
  /**
   * @param {object} opts
   * @param {() => number} opts.now         server time in ms
   * @param {() => void} opts.onPass        admin: pass the current turn
   */
  constructor({ now, onPass }) {
    this.now = now;
    this.state = null;
    this.timer = null;

    this.icon = h('span', { class: 'turn-icon', 'aria-hidden': 'true' });
    this.headline = h('span', { class: 'turn-headline' });
    this.agent = h('strong', { class: 'turn-agent' });
    this.reason = h('span', { class: 'chip turn-reason' });
    this.skip = h('span', { class: 'chip turn-skip' });
    this.countdown = h('span', { class: 'turn-countdown', role: 'timer', 'aria-label': '剩余时间', 'aria-live': 'off' });
    this.progress = h('span', { class: 'turn-progress', 'aria-hidden': 'true' }, h('span', { class: 'turn-progress-fill' }));
    this.queue = h('ol', { class: 'turn-queue', 'aria-label': '本轮发言顺序' });
    this.passBtn = h('button', { type: 'button', class: 'btn btn-small btn-ghost turn-pass', hidden: true }, '跳过当前发言者');
    this.passBtn.addEventListener('click', () => onPass());
    this.el = h(
      'section',
      { class: 'turnbar', 'aria-label': '发言轮次', dataset: { state: 'idle' } },
      h(
        'div',
        { class: 'turn-line' },
        this.icon,
        h('span', { class: 'turn-status', role: 'status', 'aria-live': 'polite' }, this.headline, this.agent, this.reason, this.skip),
        h('span', { class: 'turn-right' }, this.countdown, this.passBtn),
      ),
      this.progress,
      this.queue,
    );
  }

  /**
   * @param {object} s
   * @param {boolean} s.paused
   * @param {object|null} s.turn  { agent, can_skip, reason, deadline, timeout_ms }
   * @param {object|null} s.round current_round (agent_queue, current_agent_index, completed, end_reason)
   * @param {boolean} s.isAdmin
   * @param {string} s.me
   */
  update(s) {
    this.state = s;
    const { paused, turn, round } = s;
    let mode;
    if (paused) mode = 'paused';
    else if (turn) mode = 'turn';
    else if (round && round.completed && round.end_reason === 'guard') mode = 'guard';
    else mode = 'idle';
    this.el.dataset.state = mode;

    this.agent.textContent = turn ? turn.agent : '';
    this.agent.hidden = !turn;
    this.reason.hidden = !turn;
    this.skip.hidden = !turn;
    if (turn) {
      this.reason.textContent = REASON_LABEL[turn.reason] || turn.reason;
      this.reason.dataset.reason = turn.reason;
      this.skip.textContent = turn.can_skip ? '可以跳过' : '必须回答';
      this.skip.classList.toggle('chip-warn', !turn.can_skip);
    }
    if (mode === 'paused') {
      this.icon.replaceChildren(icon('pause', { size: 18 }));
      this.headline.textContent = turn ? '房间已暂停 · 恢复后继续：' : '房间已暂停，不会安排发言';
    } else if (mode === 'turn') {
      this.icon.replaceChildren(icon('mic', { size: 18 }));
      this.headline.textContent = turn.agent.toLowerCase() === (s.me || '').toLowerCase() ? '轮到你发言' : '正在发言：';
      if (turn.agent.toLowerCase() === (s.me || '').toLowerCase()) this.agent.hidden = true;
    } else if (mode === 'guard') {
      this.icon.replaceChildren(icon('alert', { size: 18 }));
      this.headline.textContent = ROUND_END_LABEL.guard;
    } else {
      this.icon.replaceChildren(icon('chat', { size: 18 }));
      this.headline.textContent = '空闲：有人发言后，智能体会依次回答';
    }
    this.passBtn.hidden = !(s.isAdmin && turn && !paused);
    if (turn) this.passBtn.setAttribute('aria-label', `跳过 ${turn.agent} 的本次发言`);

    this.renderQueue(round, turn);
    clearInterval(this.timer);
    this.timer = null;
    if (mode === 'turn' && turn.deadline) {
      this.tick();
      this.timer = setInterval(() => this.tick(), 250);
    } else {
      this.countdown.textContent = '';
      this.countdown.hidden = true;
      this.progress.hidden = true;
    }
  }

  renderQueue(round, turn) {
    this.queue.replaceChildren();
    const queue = round && !round.completed ? round.agent_queue || [] : [];
    this.queue.hidden = queue.length < 2;
    let current = typeof round?.current_agent_index === 'number' ? round.current_agent_index : -1;
    if (turn && queue[current] !== turn.agent) current = queue.indexOf(turn.agent, Math.max(0, current));
    queue.forEach((name, i) => {
      const cls = i < current ? 'done' : i === current ? 'current' : 'next';
      this.queue.append(h('li', { class: `turn-queue-item ${cls}`, ...(i === current ? { 'aria-current': 'step' } : {}) }, name));
    });
  }

  tick() {
    const turn = this.state?.turn;
    if (!turn || !turn.deadline) return;
    const total = turn.timeout_ms || 0;
    let remaining = Date.parse(turn.deadline) - this.now();
    // Clock skew must not show more time than a whole turn.
    if (total > 0) remaining = Math.min(remaining, total);
    this.countdown.hidden = false;
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
