// @ts-check
// Room list view: filter, join (with a password prompt where needed) and create a room; the
// rooms one belongs to show their unread count and last activity.
import { ApiError, callTool, session } from './api.js';
import { askPassword } from './dialog.js';
import { clear, h, toast } from './dom.js';
import { field, setFieldErrors } from './forms.js';
import { errorText, fieldErrorText, modeLabel, t } from './i18n.js';
import { icon } from './icons.js';
import { formatTime } from './time.js';
import { isSeeded, lastActivity, onUnreadChange, seedFromPage, unreadOf } from './unread.js';

/**
 * Makes sure the signed-in person is a member of the room, asking for its password when
 * needed. Resolves true when they are (then the room can be opened).
 */
/** @param {string} roomId @param {{ roomName?: string, hasPassword?: boolean }} [opts] */
export async function ensureMember(roomId, { roomName = '', hasPassword = false } = {}) {
  try {
    await callTool('get_room', { room_id: roomId });
    return true;
  } catch (err) {
    if (!(err instanceof ApiError) || err.code !== 'not_a_member') {
      toast(errorText(err), 'error');
      return false;
    }
  }
  /** @param {string} [password] */
  const join = async (password) => {
    try {
      await callTool('join_room', { room_id: roomId, ...(password ? { password } : {}) });
      return null;
    } catch (err) {
      return errorText(err);
    }
  };
  if (!hasPassword) {
    const problem = await join();
    if (problem === null) return true;
    if (problem !== errorText({ code: 'wrong_password' })) {
      toast(problem, 'error');
      return false;
    }
  }
  return askPassword({
    title: t('rooms.joinTitle', { name: roomName || t('rooms.aRoom') }),
    message: t('rooms.passwordNeeded'),
    submit: join,
  });
}

/**
 * @param {HTMLElement} container
 * @param {{ myRooms: Set<string>, navigate: (hash: string) => void }} ctx
 */
export function mountRooms(container, ctx) {
  let rooms = [];
  let destroyed = false;

  const filterInput = h('input', { type: 'search', id: 'room-filter', placeholder: t('rooms.filterPlaceholder'), 'aria-label': t('rooms.filter'), autocomplete: 'off' });
  const refreshBtn = h('button', { type: 'button', class: 'btn btn-ghost', 'aria-label': t('rooms.refreshLabel') }, t('rooms.refresh'));
  const createToggle = h('button', { type: 'button', class: 'btn btn-primary', 'aria-expanded': 'false', 'aria-controls': 'create-room' }, t('rooms.create'));
  const list = h('ul', { class: 'room-list', id: 'room-list', 'aria-label': t('rooms.list') });
  const status = h('p', { class: 'muted room-list-status', role: 'status' }, t('rooms.loading'));

  // ── create form ──
  // The name rule (SPEC §4) is said up front, with a pattern the browser checks before sending.
  const fName = field({ label: t('create.name'), name: 'room_name', required: true, maxlength: 64, placeholder: t('create.namePlaceholder'), hint: t('create.nameHint'), pattern: '[A-Za-z][A-Za-z0-9 _\\-]*', lang: 'en', inputmode: 'latin' });
  const fDesc = field({ label: t('create.description'), name: 'room_description', maxlength: 60, placeholder: t('create.descriptionHint') });
  const fMode = field({
    label: t('create.mode'),
    name: 'interaction_mode',
    as: 'select',
    options: [
      { value: 'default', label: t('create.modeDefault'), selected: true },
      { value: 'host', label: t('create.modeHost') },
    ],
  });
  const fPassword = field({ label: t('create.password'), name: 'password', type: 'password', autocomplete: 'new-password', maxlength: 256, hint: t('create.passwordHint') });
  const fUsers = field({ label: t('create.userParticipation'), name: 'user_participation', type: 'checkbox', checked: true });
  const fields = [fName, fDesc, fMode, fPassword, fUsers];
  const createError = h('p', { class: 'form-error', role: 'alert', hidden: true });
  const createSubmit = h('button', { type: 'submit', class: 'btn btn-primary' }, t('create.submit'));
  const createCancel = h('button', { type: 'button', class: 'btn btn-ghost' }, t('common.cancel'));
  const createForm = h(
    'form',
    { class: 'card create-room', id: 'create-room', 'aria-labelledby': 'create-title', novalidate: true, hidden: true },
    h('h2', { id: 'create-title' }, t('create.title')),
    h('div', { class: 'form-grid' }, fName.row, fDesc.row, fMode.row, fPassword.row),
    fUsers.row,
    createError,
    h('div', { class: 'form-actions' }, createCancel, createSubmit),
  );

  const setCreateOpen = (/** @type {boolean} */ open) => {
    createForm.hidden = !open;
    createToggle.setAttribute('aria-expanded', String(open));
    if (open) fName.input.focus();
  };
  createToggle.addEventListener('click', () => setCreateOpen(createForm.hidden));
  createCancel.addEventListener('click', () => {
    setCreateOpen(false);
    createToggle.focus();
  });

  createForm.addEventListener('submit', async (e) => {
    e.preventDefault();
    createError.hidden = true;
    setFieldErrors(fields, {});
    /** @type {Record<string, any>} */
    const args = {
      room_name: fName.input.value.trim(),
      interaction_mode: fMode.input.value,
      user_participation: fUsers.input.checked,
    };
    if (!args.room_name) {
      setFieldErrors(fields, { room_name: t('create.nameRequired') });

      return;
    }
    const desc = fDesc.input.value.trim();
    if (desc) args.room_description = desc;
    if (fPassword.input.value) args.password = fPassword.input.value;
    createSubmit.disabled = true;
    try {
      const { room } = await callTool('create_room', args);
      ctx.myRooms.add(room.room_id);
      ctx.navigate(`#/room/${encodeURIComponent(room.room_id)}`);
    } catch (err) {
      if (err instanceof ApiError && err.code === 'validation_error') {
        /** @type {Record<string, string>} */
        const mapped = {};
        for (const [path, msg] of Object.entries(err.fieldIssues())) mapped[path] = fieldErrorText(path, msg);
        if (!setFieldErrors(fields, mapped)) {
          createError.textContent = errorText(err);
          createError.hidden = false;
        }
      } else {
        createError.textContent = errorText(err);
        createError.hidden = false;
      }
    } finally {
      createSubmit.disabled = false;
    }
  });

  // ── list ──
  const render = () => {
    clear(list);
    const q = filterInput.value.trim().toLowerCase();
    const shown = rooms.filter((r) => !q || r.room_name.toLowerCase().includes(q) || (r.room_description || '').toLowerCase().includes(q));
    if (rooms.length === 0) status.textContent = t('rooms.none');
    else if (shown.length === 0) status.textContent = t('rooms.noneMatch');
    else status.textContent = q ? t('rooms.countFiltered', { n: rooms.length, shown: shown.length }) : t('rooms.count', { n: rooms.length });
    // Joined rooms first, the most recently active on top.
    const when = (/** @type {any} */ r) => Date.parse(lastActivity.get(r.room_id) || '') || 0;
    shown.sort((a, b) => Number(ctx.myRooms.has(b.room_id)) - Number(ctx.myRooms.has(a.room_id)) || when(b) - when(a));
    for (const room of shown) list.append(roomItem(room));
  };

  const roomItem = (/** @type {any} */ room) => {
    const joined = ctx.myRooms.has(room.room_id);
    const unread = joined ? unreadOf(room.room_id) : 0;
    const last = lastActivity.get(room.room_id);
    const open = async () => {
      if (await ensureMember(room.room_id, { roomName: room.room_name, hasPassword: room.has_password && !joined })) {
        ctx.myRooms.add(room.room_id);
        ctx.navigate(`#/room/${encodeURIComponent(room.room_id)}`);
      }
    };
    return h(
      'li',
      { class: 'room-item', dataset: { roomId: room.room_id } },
      h(
        'div',
        { class: 'room-item-main' },
        h(
          'h3',
          { class: 'room-item-name' },
          room.room_name,
          unread > 0 ? h('span', { class: 'unread-badge', 'aria-label': t('rooms.unread', { n: unread }) }, unread > 99 ? '99+' : String(unread)) : null,
          room.has_password ? h('span', { class: 'lock', role: 'img', 'aria-label': t('rooms.locked'), title: t('rooms.locked') }, icon('lock', { size: 15 })) : null,
        ),
        h('p', { class: 'room-item-desc' }, room.room_description || t('info.noDescription')),
        h(
          'p',
          { class: 'room-item-meta' },
          h('span', { class: 'chip' }, modeLabel(room.interaction_mode)),
          h('span', { class: 'chip chip-quiet' }, t('rooms.members', { n: room.member_count })),
          joined ? h('span', { class: 'chip chip-ok' }, t('rooms.joined')) : null,
          last ? h('span', { class: 'room-last muted' }, t('rooms.lastActive', { time: formatTime(last) })) : null,
        ),
      ),
      h('button', { type: 'button', class: `btn ${joined ? '' : 'btn-primary'}`, onclick: open, 'aria-label': t(joined ? 'rooms.enterLabel' : 'rooms.joinLabel', { name: room.room_name }) }, joined ? t('rooms.enter') : t('rooms.join')),
    );
  };

  const load = async () => {
    try {
      const data = await callTool('list_rooms', {});
      if (destroyed) return;
      rooms = data.rooms || [];
      render();
      void seedUnread();
    } catch (err) {
      if (destroyed) return;
      status.textContent = t('rooms.loadFailed', { error: errorText(err) });
    }
  };

  /** Unread counts and last activity of the joined rooms, from each one's newest page. */
  const seedUnread = async () => {
    // Once per room and page: afterwards the socket's message_new events keep the counts.
    const mine = rooms.filter((r) => ctx.myRooms.has(r.room_id) && !isSeeded(r.room_id));
    await Promise.all(
      mine.map(async (r) => {
        try {
          const { messages } = await callTool('get_messages', { room_id: r.room_id, limit: 50 });
          if (!destroyed) seedFromPage(r.room_id, messages, session.name || '');
        } catch {
          // a room we just left: no count
        }
      }),
    );
  };
  const offUnread = onUnreadChange(() => {
    if (!destroyed) render();
  });

  filterInput.addEventListener('input', render);
  refreshBtn.addEventListener('click', load);

  const view = h(
    'section',
    { class: 'view view-rooms', 'aria-labelledby': 'rooms-heading' },
    h('div', { class: 'rooms-head' }, h('h1', { id: 'rooms-heading', class: 'page-title' }, t('rooms.title')), h('div', { class: 'rooms-actions' }, refreshBtn, createToggle)),
    createForm,
    h('div', { class: 'rooms-filter' }, h('label', { for: 'room-filter', class: 'visually-hidden' }, t('rooms.filter')), filterInput),
    status,
    list,
  );
  container.append(view);
  load();

  // Keep member counts fresh while the list is open.
  const timer = setInterval(() => {
    if (document.visibilityState === 'visible') load();
  }, 15_000);

  return {
    destroy() {
      destroyed = true;
      clearInterval(timer);
      offUnread();
    },
    /** The socket (re)connected (auth_ok): redraw the joined marks and seed the counts again. */
    refresh() {
      render();
      void seedUnread();
    },
  };
}
