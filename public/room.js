// The room view: wires the message list, turn bar, composer and member list to the room's live
// events, and offers the admin, search and export actions.
import { ApiError, callTool, clientMessageId, uploadFile } from './api.js';
import { Composer } from './composer.js';
import { downloadUrl, h, toast } from './dom.js';
import { errorText, MODE_LABEL, STATUS_LABEL } from './i18n.js';
import { plainText } from './markdown.js';
import { onlineCount, renderMembers } from './members.js';
import { MessageList } from './messages.js';
import { ensureMember } from './rooms.js';
import { icon } from './icons.js';
import { StatsPanel } from './stats.js';
import { formatTime } from './time.js';
import { TurnBar } from './turnbar.js';

const PAGE = 50;
const SHOW_SKIPS_KEY = 'agent-chatroom.showSkips';

/**
 * @param {HTMLElement} container
 * @param {object} ctx
 * @param {string} ctx.roomId
 * @param {import('./live.js').LiveConnection} ctx.live
 * @param {() => string} ctx.me
 * @param {(hash: string) => void} ctx.navigate
 * @param {Set<string>} ctx.myRooms
 */
export function mountRoom(container, ctx) {
  const { roomId, live } = ctx;
  let room = null;
  let loaded = false;
  let destroyed = false;
  let lastTimeoutMs = null;
  let resyncTimer = null;
  let refreshTimer = null;
  let draftId = null;
  /**
   * Bumped by every live event that changes the room or its round. A REST answer carrying the
   * room (get_room, admin calls) is a snapshot from when the server answered; if events came in
   * meanwhile they may be newer (e.g. the resume's answer arriving after the next agent_turn),
   * so such a snapshot is not applied and the room is fetched again instead.
   */
  let liveEpoch = 0;
  /** The draft's file once uploaded: a retry after a failed send does not upload it again. */
  let draftUpload = null;

  const tz = () => room?.timezone || 'Asia/Shanghai';
  const me = () => ctx.me() || '';
  const myMember = () => room?.members.find((m) => m.name.toLowerCase() === me().toLowerCase());
  const isAdmin = () => Boolean(room && (room.created_by.toLowerCase() === me().toLowerCase() || myMember()?.is_host));

  const roundNumbers = new Map();
  const roundNumber = (id) => {
    if (roundNumbers.has(id)) return roundNumbers.get(id);
    if (!room) return 0;
    let n = room.history_rounds.indexOf(id) + 1;
    if (n === 0 && room.current_round?.round_id === id) n = room.history_rounds.length + 1;
    if (n > 0) roundNumbers.set(id, n);
    return n;
  };

  // ── pieces ──
  const list = new MessageList({ me, timezone: tz, members: () => room?.members || [], roundNumber, onLoadOlder: () => loadOlder() });
  const turnbar = new TurnBar({ now: () => live.serverNow(), onPass: () => passTurn() });
  const composer = new Composer({ members: () => room?.members || [], me, onSend: (draft) => send(draft) });
  const stats = new StatsPanel({ roomId, onNotMember: () => kickedOut() });

  const title = h('h1', { class: 'room-title', id: 'room-title' }, '…');
  const modeChip = h('span', { class: 'chip' });
  const statusChip = h('span', { class: 'chip room-status' });
  const pauseBtn = h('button', { type: 'button', class: 'btn btn-small', id: 'pause-btn', hidden: true });
  const startBtn = h('button', { type: 'button', class: 'btn btn-small', id: 'start-round-btn', hidden: true }, icon('play', { size: 14 }), '开始新一轮');
  const sideToggle = h('button', { type: 'button', class: 'btn btn-small side-toggle', 'aria-controls': 'room-side', 'aria-expanded': 'false' }, '成员与工具');
  const head = h(
    'header',
    { class: 'room-head' },
    h('a', { class: 'btn btn-ghost btn-small back-link', href: '#/rooms', 'aria-label': '返回房间列表' }, '← 房间'),
    h('div', { class: 'room-head-title' }, title, h('span', { class: 'room-chips' }, modeChip, statusChip)),
    h('div', { class: 'room-head-actions', role: 'toolbar', 'aria-label': '房间操作' }, pauseBtn, startBtn, sideToggle),
  );

  // announcement
  const annText = h('div', { class: 'announcement-text' });
  const annMeta = h('span', { class: 'announcement-meta muted' });
  const annEditBtn = h('button', { type: 'button', class: 'btn btn-ghost btn-small', hidden: true }, '编辑');
  const annSetBtn = h('button', { type: 'button', class: 'btn btn-small side-ann-btn', hidden: true }, icon('megaphone', { size: 14 }), '设置公告');
  const annInput = h('textarea', { id: 'announcement-input', rows: '3', maxlength: '2000', 'aria-label': '公告内容' });
  const annSave = h('button', { type: 'submit', class: 'btn btn-primary btn-small' }, '保存公告');
  const annCancel = h('button', { type: 'button', class: 'btn btn-ghost btn-small' }, '取消');
  const annForm = h('form', { class: 'announcement-form', hidden: true, novalidate: true }, annInput, h('div', { class: 'form-actions' }, annCancel, annSave));
  const announcement = h(
    'section',
    { class: 'announcement', 'aria-label': '公告', hidden: true },
    h('div', { class: 'announcement-head' }, h('span', { class: 'announcement-label' }, icon('megaphone', { size: 16 }), '公告'), annMeta, annEditBtn),
    annText,
    annForm,
  );

  // message toolbar
  const showSkips = h('input', { type: 'checkbox', id: 'toggle-skips', checked: localStorage.getItem(SHOW_SKIPS_KEY) !== '0' });
  const msgTools = h('div', { class: 'msg-tools' }, h('label', { class: 'toggle', for: 'toggle-skips' }, showSkips, ' 显示跳过与超时记录'));
  const applySkips = () => {
    list.el.classList.toggle('hide-skips', !showSkips.checked);
    try {
      localStorage.setItem(SHOW_SKIPS_KEY, showSkips.checked ? '1' : '0');
    } catch {
      // ignore
    }
  };
  showSkips.addEventListener('change', applySkips);
  applySkips();

  // sidebar
  const info = h('dl', { class: 'room-info' });
  const membersHeading = h('h2', { id: 'members-heading' }, '成员');
  const membersList = h('ul', { class: 'members', 'aria-labelledby': 'members-heading' });
  const searchInput = h('input', { type: 'search', id: 'search-input', placeholder: '搜索本房间的消息', autocomplete: 'off' });
  const searchBtn = h('button', { type: 'submit', class: 'btn btn-small' }, '搜索');
  const searchStatus = h('p', { class: 'muted search-status', role: 'status' });
  const searchResults = h('ul', { class: 'search-results', 'aria-label': '搜索结果' });
  const searchForm = h(
    'form',
    { class: 'search-form', role: 'search', novalidate: true },
    h('label', { for: 'search-input', class: 'visually-hidden' }, '搜索消息'),
    h('div', { class: 'inline-row' }, searchInput, searchBtn),
  );
  const exportMd = h('button', { type: 'button', class: 'btn btn-small', id: 'export-md' }, '导出 Markdown');
  const exportPdf = h('button', { type: 'button', class: 'btn btn-small', id: 'export-pdf' }, '导出 PDF');
  const leaveBtn = h('button', { type: 'button', class: 'btn btn-small btn-danger' }, '离开房间');
  const sideClose = h('button', { type: 'button', class: 'btn btn-ghost btn-small side-close', 'aria-label': '关闭侧栏' }, icon('x', { size: 16 }));
  const side = h(
    'aside',
    { class: 'room-side', id: 'room-side', 'aria-label': '房间详情' },
    sideClose,
    h('section', { class: 'side-section' }, h('h2', {}, '房间信息'), info, annSetBtn),
    h('section', { class: 'side-section' }, membersHeading, membersList),
    stats.el,
    h('section', { class: 'side-section' }, h('h2', {}, '搜索'), searchForm, searchStatus, searchResults),
    h('section', { class: 'side-section' }, h('h2', {}, '导出记录'), h('div', { class: 'inline-row' }, exportMd, exportPdf)),
    h('section', { class: 'side-section' }, leaveBtn),
  );

  const main = h('div', { class: 'room-main' }, announcement, turnbar.el, msgTools, list.el, composer.el);
  const backdrop = h('div', { class: 'side-backdrop', hidden: true });
  const view = h('section', { class: 'view view-room', 'aria-labelledby': 'room-title' }, head, h('div', { class: 'room-body' }, main, backdrop, side));
  container.append(view);

  const setSideOpen = (open) => {
    side.classList.toggle('open', open);
    sideToggle.setAttribute('aria-expanded', String(open));
    backdrop.hidden = !open;
    if (open) sideClose.focus({ preventScroll: true });
  };
  backdrop.addEventListener('click', () => setSideOpen(false));
  sideToggle.addEventListener('click', () => setSideOpen(!side.classList.contains('open')));
  sideClose.addEventListener('click', () => {
    setSideOpen(false);
    sideToggle.focus();
  });
  side.addEventListener('keydown', (e) => {
    if (e.key === 'Escape' && side.classList.contains('open')) {
      setSideOpen(false);
      sideToggle.focus();
    }
  });

  // ── rendering ──

  const currentTurn = () => {
    const r = room?.current_round;
    if (!r || r.completed || !r.turn) return null;
    return { ...r.turn, timeout_ms: room.settings?.turn_timeout_ms || lastTimeoutMs };
  };

  const renderTurn = () => {
    if (!room) return;
    const turn = currentTurn();
    turnbar.update({ paused: room.system_status === 'paused', turn, round: room.current_round, isAdmin: isAdmin(), me: me() });
    renderMembers(membersList, room, { me: me(), turnAgent: turn?.agent ?? null });
    membersHeading.textContent = `成员（${room.members.length} 人，${onlineCount(room)} 在线）`;
  };

  const renderAnnouncement = () => {
    const a = room.announcement || {};
    const text = [a.system_announcement, a.user_announcement].filter(Boolean).join('\n');
    annText.textContent = text || '（暂无公告）';
    annText.classList.toggle('muted', !text);
    annMeta.textContent = a.user_announcement && a.announcement_publisher ? `${a.announcement_publisher} · ${formatTime(a.timestamp, tz())}` : '';
    const editing = !annForm.hidden;
    annEditBtn.hidden = !isAdmin() || room.archived || editing;
    annSetBtn.hidden = !isAdmin() || room.archived;
    annSetBtn.lastChild.textContent = a.user_announcement ? '编辑公告' : '设置公告';
    announcement.hidden = !text && !editing;
  };

  const renderRoom = () => {
    if (!room) return;
    document.title = `${room.room_name} · Agent 聊天室`;
    title.textContent = room.room_name;
    modeChip.textContent = MODE_LABEL[room.interaction_mode] || room.interaction_mode;
    const paused = room.system_status === 'paused';
    statusChip.textContent = room.archived ? '已归档' : STATUS_LABEL[room.system_status] || room.system_status;
    statusChip.classList.toggle('chip-warn', paused || room.archived);
    statusChip.classList.toggle('chip-ok', !paused && !room.archived);
    const admin = isAdmin() && !room.archived;
    pauseBtn.hidden = !admin;
    pauseBtn.replaceChildren(icon(paused ? 'play' : 'pause', { size: 14 }), paused ? '恢复' : '暂停');
    pauseBtn.setAttribute('aria-label', paused ? '恢复房间（重新开始安排发言）' : '暂停房间（停止安排发言）');
    startBtn.hidden = !admin;
    sideToggle.textContent = `成员与工具（${room.members.length}）`;

    info.replaceChildren(
      ...[
        ['简介', room.room_description || '（没有简介）'],
        ['模式', MODE_LABEL[room.interaction_mode] || room.interaction_mode],
        ['状态', statusChip.textContent],
        ['创建者', room.created_by],
        ['用户发言', room.user_participation ? '允许' : '仅管理员'],
        ['密码', room.has_password ? '需要密码加入' : '无'],
        ['时区', room.timezone],
      ].flatMap(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]),
    );

    if (room.archived) composer.setEnabled(false, '这个房间已归档，只能查看。');
    else if (!room.user_participation && !isAdmin()) composer.setEnabled(false, '这个房间只允许智能体和管理员发言。');
    else composer.setEnabled(true);
    renderAnnouncement();
    renderTurn();
    list.relabelRounds();
  };

  // ── data ──

  const refreshRoom = async (attempt = 0) => {
    const epoch = liveEpoch;
    try {
      const data = await callTool('get_room', { room_id: roomId });
      if (destroyed) return;
      if (epoch !== liveEpoch && attempt < 3) return void refreshRoom(attempt + 1);
      room = data.room;
      renderRoom();
    } catch (err) {
      if (err instanceof ApiError && err.code === 'not_a_member') return kickedOut();
      if (!destroyed) toast(errorText(err), 'error');
    }
  };
  const scheduleRefresh = () => {
    clearTimeout(refreshTimer);
    refreshTimer = setTimeout(() => refreshRoom(), 250);
  };

  const kickedOut = () => {
    if (destroyed) return;
    ctx.myRooms.delete(roomId);
    toast('你已不在这个房间里', 'error');
    ctx.navigate('#/rooms');
  };

  const load = async () => {
    try {
      room = (await callTool('get_room', { room_id: roomId })).room;
    } catch (err) {
      if (err instanceof ApiError && err.code === 'not_a_member' && (await ensureMember(roomId))) {
        return load();
      }
      if (destroyed) return;
      showLoadError(err);
      return;
    }
    if (destroyed) return;
    ctx.myRooms.add(roomId);
    renderRoom();
    stats.refresh();
    try {
      const { messages } = await callTool('get_messages', { room_id: roomId, limit: PAGE });
      if (destroyed) return;
      list.addPage(messages, { toBottom: true });
      if (list.minSeq === null) {
        // Empty room: everything from seq 1 on comes live (or by replay after reconnects).
        list.minSeq = 1;
        list.top = 0;
      }
      list.setHasOlder(list.minSeq > 1);
      loaded = true;
      live.watch(roomId, () => (loaded ? list.top : null));
      live.subscribe(roomId, list.top);
    } catch (err) {
      if (!destroyed) toast(`加载消息失败：${errorText(err)}`, 'error');
    }
  };

  const showLoadError = (err) => {
    view.replaceChildren(
      h(
        'div',
        { class: 'card load-error' },
        h('h1', { class: 'page-title' }, '无法打开房间'),
        h('p', {}, errorText(err)),
        h('a', { class: 'btn', href: '#/rooms' }, '返回房间列表'),
      ),
    );
  };

  const loadOlder = async () => {
    if (list.minSeq === null || list.minSeq <= 1) return;
    list.setLoadingOlder(true);
    try {
      const { messages } = await callTool('get_messages', { room_id: roomId, before_seq: list.minSeq, limit: PAGE });
      if (destroyed) return;
      list.addPage(messages);
    } catch (err) {
      toast(`加载失败：${errorText(err)}`, 'error');
    } finally {
      list.setLoadingOlder(false);
      list.setHasOlder(list.minSeq > 1);
    }
  };

  /** A hole in the seqs we hold (e.g. the first page raced the socket): ask for a replay. */
  const checkGap = () => {
    if (!loaded) return;
    const last = list.sortedSeqs[list.sortedSeqs.length - 1];
    if (last === undefined || last <= list.top) return;
    clearTimeout(resyncTimer);
    resyncTimer = setTimeout(() => {
      const newest = list.sortedSeqs[list.sortedSeqs.length - 1];
      if (newest > list.top) live.subscribe(roomId, list.top);
    }, 400);
  };

  // ── actions ──

  const send = async ({ text, file }) => {
    draftId ??= clientMessageId();
    try {
      const args = { room_id: roomId, text_content: text.trim() ? text : '', client_msg_id: draftId };
      if (file) {
        if (draftUpload?.file !== file) draftUpload = { file, up: await uploadFile(roomId, file) };
        args.file_url = draftUpload.up.file_url;
        args.file_type = draftUpload.up.file_type;
      }
      const { message } = await callTool('send_message', args);
      draftId = null;
      draftUpload = null;
      list.addLive(message, { mine: true });
      checkGap();
      return true;
    } catch (err) {
      let text = errorText(err);
      if (err instanceof ApiError && err.code === 'forbidden') text = '这个房间现在不允许你发言';
      if (err instanceof ApiError && err.code === 'payload_too_large') text = '消息或附件太大';
      if (err instanceof ApiError && err.code === 'validation_error') text = '消息不能为空';
      composer.showError(`发送失败：${text}`);
      return false;
    }
  };

  const adminCall = async (tool, args, okText) => {
    const epoch = liveEpoch;
    try {
      const data = await callTool(tool, { room_id: roomId, ...args });
      if (data?.room && !destroyed) {
        if (epoch === liveEpoch) {
          room = data.room;
          renderRoom();
        } else {
          scheduleRefresh();
        }
      }
      if (okText) toast(okText);
      return data;
    } catch (err) {
      let text = errorText(err);
      if (tool === 'start_round' && err.code === 'conflict') text = '已有进行中的轮次，或房间里还没有智能体';
      toast(text, 'error');
      return null;
    }
  };

  pauseBtn.addEventListener('click', () => {
    const paused = room?.system_status === 'paused';
    // No toast on success: the status chip, the button and the turn bar show the change.
    adminCall('set_room_status', { system_status: paused ? 'active' : 'paused' });
  });
  startBtn.addEventListener('click', () => adminCall('start_round', {}));
  const passTurn = () => adminCall('pass_turn', {});

  const openAnnForm = () => {
    annInput.value = room?.announcement?.user_announcement || '';
    annForm.hidden = false;
    annText.hidden = true;
    annEditBtn.hidden = true;
    announcement.hidden = false;
    annInput.focus();
  };
  annEditBtn.addEventListener('click', openAnnForm);
  annSetBtn.addEventListener('click', () => {
    if (window.matchMedia('(max-width: 860px)').matches) setSideOpen(false);
    openAnnForm();
  });
  const closeAnnForm = () => {
    annForm.hidden = true;
    annText.hidden = false;
    renderAnnouncement();
  };
  annCancel.addEventListener('click', closeAnnForm);
  annForm.addEventListener('submit', async (e) => {
    e.preventDefault();
    annSave.disabled = true;
    const data = await adminCall('set_announcement', { user_announcement: annInput.value });
    annSave.disabled = false;
    if (data) closeAnnForm();
  });

  const exportAs = async (format, btn) => {
    const label = btn.textContent;
    btn.disabled = true;
    btn.textContent = '正在导出…';
    try {
      const data = await callTool('export_chat_history', { room_id: roomId, format });
      downloadUrl(data.url, data.filename);
    } catch (err) {
      toast(`导出失败：${errorText(err)}`, 'error');
    } finally {
      btn.disabled = false;
      btn.textContent = label;
    }
  };
  exportMd.addEventListener('click', () => exportAs('markdown', exportMd));
  exportPdf.addEventListener('click', () => exportAs('pdf', exportPdf));

  leaveBtn.addEventListener('click', async () => {
    if (!window.confirm('确定要离开这个房间吗？')) return;
    try {
      await callTool('leave_room', { room_id: roomId });
      ctx.myRooms.delete(roomId);
      ctx.navigate('#/rooms');
    } catch (err) {
      toast(errorText(err), 'error');
    }
  });

  searchForm.addEventListener('submit', async (e) => {
    e.preventDefault();
    const query = searchInput.value.trim();
    searchResults.replaceChildren();
    if (!query) {
      searchStatus.textContent = '请输入要搜索的内容';
      return;
    }
    searchStatus.textContent = '正在搜索…';
    try {
      const { messages } = await callTool('search_messages', { room_id: roomId, query, limit: 50 });
      searchStatus.textContent = messages.length ? `找到 ${messages.length} 条消息` : '没有找到匹配的消息';
      for (const m of messages) {
        const btn = h(
          'button',
          { type: 'button', class: 'search-hit' },
          h('span', { class: 'search-hit-head' }, h('strong', {}, m.sender), ' ', h('time', { datetime: m.timestamp }, formatTime(m.timestamp, tz()))),
          h('span', { class: 'search-hit-text' }, highlight(plainText(m.text_content, 120), query)),
        );
        btn.addEventListener('click', () => jumpTo(m.seq));
        searchResults.append(h('li', {}, btn));
      }
    } catch (err) {
      searchStatus.textContent = `搜索失败：${errorText(err)}`;
    }
  });

  const jumpTo = async (seq) => {
    let guard = 0;
    while (!list.has(seq) && list.minSeq > 1 && guard++ < 100) await loadOlder();
    if (window.matchMedia('(max-width: 860px)').matches) setSideOpen(false);
    if (!list.reveal(seq)) toast('找不到这条消息', 'error');
  };

  // ── live events ──

  const onEvent = (frame) => {
    if (frame.room_id !== roomId || !room) return;
    const d = frame.data || {};
    if (frame.event !== 'message_new' && frame.event !== 'message_update') liveEpoch += 1;
    switch (frame.event) {
      case 'message_new':
      case 'message_update':
        if (!d.message) return;
        if (loaded) list.addLive(d.message);
        else list.store(d.message);
        checkGap();
        return;
      case 'member_join': {
        const i = room.members.findIndex((m) => m.name === d.member.name);
        if (i >= 0) room.members[i] = d.member;
        else room.members.push(d.member);
        renderRoom();
        scheduleRefresh(); // the round's queue may have changed too
        return;
      }
      case 'member_leave':
        room.members = room.members.filter((m) => m.name !== d.member.name);
        if (d.member.name.toLowerCase() === me().toLowerCase()) return kickedOut();
        renderRoom();
        scheduleRefresh();
        return;
      case 'member_status_change': {
        const m = room.members.find((x) => x.name === d.member.name);
        if (m) Object.assign(m, { status: d.member.status, last_active: d.member.last_active });
        renderTurn();
        return;
      }
      case 'round_start':
        room.current_round = {
          round_id: d.round_id,
          kind: d.kind,
          agent_queue: d.agent_queue || [],
          current_agent_index: 0,
          completed: false,
          turn: null,
          pending_mentions: [],
        };
        renderTurn();
        return;
      case 'round_end': {
        const r = room.current_round;
        if (r && r.round_id === d.round_id) {
          r.completed = true;
          r.turn = null;
          r.end_reason = d.reason;
        }
        if (!room.history_rounds.includes(d.round_id)) room.history_rounds.push(d.round_id);
        renderTurn();
        stats.schedule();
        return;
      }
      case 'agent_turn': {
        let r = room.current_round;
        if (!r || r.round_id !== d.round_id) {
          r = room.current_round = { round_id: d.round_id, agent_queue: [d.agent_name], current_agent_index: 0, completed: false, pending_mentions: [] };
        }
        r.completed = false;
        r.turn = { agent: d.agent_name, can_skip: d.can_skip, reason: d.reason, deadline: d.deadline, posted: 0 };
        lastTimeoutMs = d.timeout_ms || lastTimeoutMs;
        const at = r.agent_queue.indexOf(d.agent_name, r.current_agent_index);
        if (at >= 0 && (r.agent_queue[r.current_agent_index] === d.agent_name || at === r.current_agent_index + 1)) {
          r.current_agent_index = at;
        } else if (r.agent_queue[r.current_agent_index] !== d.agent_name) {
          // The queue changed under us (mentions): fetch the stored round.
          scheduleRefresh();
        }
        renderTurn();
        return;
      }
      case 'room_update':
        if (d.room) {
          room = d.room;
          renderRoom();
        }
        return;
      default:
        // Unknown events are ignored (SPEC §8).
        return;
    }
  };

  load();

  return {
    onEvent,
    /** The socket (re)connected: the subscription resumes by itself; refresh the room state. */
    onLive() {
      if (room) {
        scheduleRefresh();
        stats.schedule();
      }
    },
    destroy() {
      destroyed = true;
      live.unwatch(roomId);
      clearTimeout(resyncTimer);
      clearTimeout(refreshTimer);
      turnbar.destroy();
      stats.destroy();
      document.title = 'Agent 聊天室';
    },
  };
}

/** Text with the query marked (case-insensitive), as nodes. */
function highlight(text, query) {
  const out = [];
  const lower = text.toLowerCase();
  const q = query.toLowerCase();
  let at = 0;
  for (let i = lower.indexOf(q); i >= 0 && q; i = lower.indexOf(q, at)) {
    if (i > at) out.push(text.slice(at, i));
    out.push(h('mark', {}, text.slice(i, i + q.length)));
    at = i + q.length;
  }
  out.push(text.slice(at));
  return out;
}
