// @ts-check
// The member list: presence (online / busy / offline), agent badge, host (host-mode rooms only)
// and creator marks, what an agent reported it is doing, who holds the turn, an agent's
// introduction and capabilities (SPEC §4), and, for admins, a button to remove a member.
import { h } from './dom.js';
import { presenceLabel, roleLabel, t } from './i18n.js';
import { activityText } from './turnbar.js';
import { formatTime } from './time.js';

/**
 * @param {HTMLElement} list  <ul>
 * @param {any} room
 * @param {{ me: string, turnAgent: string|null, activities: Record<string, { activity: string, note: string }>, capabilities: Map<string, string[]>, canRemove: boolean, onRemove: (name: string) => void }} opts
 */
export function renderMembers(list, room, { me, turnAgent, activities, capabilities, canRemove, onRemove }) {
  const members = room.members || [];
  list.replaceChildren(
    ...members.map((/** @type {any} */ m) => {
      const isMe = m.name.toLowerCase() === (me || '').toLowerCase();
      const speaking = turnAgent && m.name === turnAgent;
      const status = m.status === 'online' || m.status === 'busy' ? m.status : 'offline';
      const act = activities[m.name];
      const remove =
        canRemove && !isMe
          ? h('button', { type: 'button', class: 'btn btn-ghost btn-tiny member-remove', 'aria-label': t('members.remove', { name: m.name }), title: t('members.remove', { name: m.name }) }, '×')
          : null;
      remove?.addEventListener('click', () => onRemove(m.name));
      return h(
        'li',
        { class: `member member-${status}${speaking ? ' member-speaking' : ''}`, dataset: { name: m.name, status } },
        h(
          'div',
          { class: 'member-line' },
          h('span', { class: `status-dot ${status}`, role: 'img', 'aria-label': presenceLabel(status), title: `${presenceLabel(status)} · ${t('members.lastActive', { time: formatTime(m.last_active, room.timezone) })}` }),
          h('span', { class: 'member-name' }, m.name, isMe ? h('span', { class: 'member-me muted' }, t('members.meSuffix')) : null),
          h(
            'span',
            { class: 'member-badges' },
            m.role === 'ai_agent' ? h('span', { class: 'badge badge-ai_agent' }, roleLabel('ai_agent')) : h('span', { class: 'badge badge-user' }, roleLabel('user')),
            m.is_host && room.interaction_mode === 'host' ? h('span', { class: 'badge badge-host' }, t('badge.host')) : null,
            m.name === room.created_by ? h('span', { class: 'badge badge-quiet' }, t('badge.creator')) : null,
            speaking ? h('span', { class: 'badge badge-speaking' }, t('badge.speaking')) : null,
          ),
          remove,
        ),
        act ? h('p', { class: 'member-activity' }, activityText(m.name, act)) : null,
        m.role === 'ai_agent' && m.introduce ? h('p', { class: 'member-intro' }, m.introduce) : null,
        m.role === 'ai_agent' && capabilities.get(m.name)?.length
          ? h(
              'p',
              { class: 'member-caps', 'aria-label': t('members.capabilities') },
              ...(capabilities.get(m.name) ?? []).map((c) => h('span', { class: 'member-cap' }, c)),
            )
          : null,
      );
    }),
  );
}

/** @param {any} room */
export function onlineCount(room) {
  return (room.members || []).filter((/** @type {any} */ m) => m.status === 'online' || m.status === 'busy').length;
}
