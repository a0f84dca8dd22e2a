// Room list view: filter, join (with a password prompt where needed) and create a room.
import { ApiError, callTool } from './api.js';
import { askPassword } from './dialog.js';
import { clear, h, toast } from './dom.js';
import { field, setFieldErrors } from './forms.js';
import { errorText, fieldErrorText, MODE_LABEL } from './i18n.js';
import { icon } from './icons.js';

/**
 * Makes sure the signed-in person is a member of the room, asking for its password when
 * needed. Resolves true when they are (then the room can be opened).
 */
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
    title: `加入 ${roomName || '房间'}`,
    message: '这个房间设置了密码，加入时需要输入一次。',
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

  const filterInput = h('input', { type: 'search', id: 'room-filter', placeholder: '按名称或简介筛选', 'aria-label': '筛选房间', autocomplete: 'off' });
  const refreshBtn = h('button', { type: 'button', class: 'btn btn-ghost', 'aria-label': '刷新房间列表' }, '刷新');
  const createToggle = h('button', { type: 'button', class: 'btn btn-primary', 'aria-expanded': 'false', 'aria-controls': 'create-room' }, '＋ 创建房间');
  const list = h('ul', { class: 'room-list', id: 'room-list', 'aria-label': '房间列表' });
  const status = h('p', { class: 'muted room-list-status', role: 'status' }, '正在加载房间…');

  // ── create form ──
  const fName = field({ label: '房间名（英文）', name: 'room_name', required: true, maxlength: 64, placeholder: '例如 Design Review', hint: '以英文字母开头；英文字母、数字、空格、_ 和 -' });
  const fDesc = field({ label: '简介', name: 'room_description', maxlength: 60, placeholder: '最多 10 个汉字或 30 个字符' });
  const fMode = field({
    label: '模式',
    name: 'interaction_mode',
    as: 'select',
    options: [
      { value: 'default', label: '轮流模式：智能体按顺序发言', selected: true },
      { value: 'host', label: '主持人模式：由主持人点名' },
    ],
  });
  const fPassword = field({ label: '房间密码（可选）', name: 'password', type: 'password', autocomplete: 'new-password', maxlength: 256, hint: '留空表示任何人都可以加入' });
  const fUsers = field({ label: '允许用户发言', name: 'user_participation', type: 'checkbox', checked: true });
  const fields = [fName, fDesc, fMode, fPassword, fUsers];
  const createError = h('p', { class: 'form-error', role: 'alert', hidden: true });
  const createSubmit = h('button', { type: 'submit', class: 'btn btn-primary' }, '创建并进入');
  const createCancel = h('button', { type: 'button', class: 'btn btn-ghost' }, '取消');
  const createForm = h(
    'form',
    { class: 'card create-room', id: 'create-room', 'aria-labelledby': 'create-title', novalidate: true, hidden: true },
    h('h2', { id: 'create-title' }, '创建房间'),
    h('div', { class: 'form-grid' }, fName.row, fDesc.row, fMode.row, fPassword.row),
    fUsers.row,
    createError,
    h('div', { class: 'form-actions' }, createCancel, createSubmit),
  );

  const setCreateOpen = (open) => {
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
    const args = {
      room_name: fName.input.value.trim(),
      interaction_mode: fMode.input.value,
      user_participation: fUsers.input.checked,
    };
    if (!args.room_name) {
      setFieldErrors(fields, { room_name: '请输入房间名' });
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
    if (rooms.length === 0) status.textContent = '还没有房间，创建第一个吧。';
    else if (shown.length === 0) status.textContent = '没有符合筛选条件的房间。';
    else status.textContent = `共 ${rooms.length} 个房间${q ? `，显示 ${shown.length} 个` : ''}`;
    for (const room of shown) list.append(roomItem(room));
  };

  const roomItem = (room) => {
    const joined = ctx.myRooms.has(room.room_id);
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
          room.has_password ? h('span', { class: 'lock', role: 'img', 'aria-label': '需要密码', title: '需要密码' }, icon('lock', { size: 15 })) : null,
        ),
        h('p', { class: 'room-item-desc' }, room.room_description || '（没有简介）'),
        h(
          'p',
          { class: 'room-item-meta' },
          h('span', { class: 'chip' }, MODE_LABEL[room.interaction_mode] || room.interaction_mode),
          h('span', { class: 'chip chip-quiet' }, `${room.member_count} 位成员`),
          joined ? h('span', { class: 'chip chip-ok' }, '已加入') : null,
        ),
      ),
      h('button', { type: 'button', class: `btn ${joined ? '' : 'btn-primary'}`, onclick: open, 'aria-label': `${joined ? '进入' : '加入'}房间 ${room.room_name}` }, joined ? '进入' : '加入'),
    );
  };

  const load = async () => {
    try {
      const data = await callTool('list_rooms', {});
      if (destroyed) return;
      rooms = data.rooms || [];
      render();
    } catch (err) {
      if (destroyed) return;
      status.textContent = `加载失败：${errorText(err)}`;
    }
  };

  filterInput.addEventListener('input', render);
  refreshBtn.addEventListener('click', load);

  const view = h(
    'section',
    { class: 'view view-rooms', 'aria-labelledby': 'rooms-heading' },
    h('div', { class: 'rooms-head' }, h('h1', { id: 'rooms-heading', class: 'page-title' }, '房间'), h('div', { class: 'rooms-actions' }, refreshBtn, createToggle)),
    createForm,
    h('div', { class: 'rooms-filter' }, h('label', { for: 'room-filter', class: 'visually-hidden' }, '筛选房间'), filterInput),
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
    },
    /** myRooms changed (auth_ok after connect): redraw the joined marks. */
    refresh: render,
  };
}
