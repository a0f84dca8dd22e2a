// The member list: online/offline, role, host and creator badges, agents' introductions, and
// who holds the turn.
import { h } from './dom.js';
import { PRESENCE_LABEL, ROLE_LABEL } from './i18n.js';
import { formatTime } from './time.js';

/**
 * @param {HTMLElement} list  <ul>
 * @param {object} room
 * @param {{ me: string, turnAgent: string|null }} opts
 */
export function renderMembers(list, room, { me, turnAgent }) {
  const members = room.members || [];
  list.replaceChildren(
    ...members.map((m) => {
      const isMe = m.name.toLowerCase() === (me || '').toLowerCase();
      const speaking = turnAgent && m.name === turnAgent;
      const status = m.status === 'online' ? 'online' : 'offline';
      return h(
        'li',
        { class: `member member-${status}${speaking ? ' member-speaking' : ''}`, dataset: { name: m.name, status } },
        h(
          'div',
          { class: 'member-line' },
          h('span', { class: `status-dot ${status}`, role: 'img', 'aria-label': PRESENCE_LABEL[status], title: `${PRESENCE_LABEL[status]} · 最近活动 ${formatTime(m.last_active, room.timezone)}` }),
          h('span', { class: 'member-name' }, m.name),
          h('span', { class: `badge badge-${m.role}` }, ROLE_LABEL[m.role] || m.role),
          m.is_host ? h('span', { class: 'badge badge-host' }, '主持人') : null,
          m.name === room.created_by ? h('span', { class: 'badge badge-quiet' }, '创建者') : null,
          isMe ? h('span', { class: 'badge badge-me' }, '我') : null,
          speaking ? h('span', { class: 'badge badge-speaking' }, '发言中') : null,
        ),
        m.role === 'ai_agent' && m.introduce ? h('p', { class: 'member-intro' }, m.introduce) : null,
      );
    }),
  );
}

export function onlineCount(room) {
  return (room.members || []).filter((m) => m.status === 'online').length;
}
