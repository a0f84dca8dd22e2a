// @ts-check
// The room view: feeds live events through the room reducer (room-state.js) and the message
// window (messages.js), and wires the turn bar, composer, member list, search, export, the
// add-agent dialog and the settings panel to them.
import { openAgentDialog } from './agent-dialog.js';
import { ApiError, callTool, clientMessageId, uploadFile } from './api.js';
import { Composer } from './composer.js';
import { confirmDialog } from './dialog.js';
import { downloadUrl, h, toast } from './dom.js';
import { errorText, modeLabel, statusLabel, t } from './i18n.js';
import { icon } from './icons.js';
import { plainText } from './markdown.js';
import { onlineCount, renderMembers } from './members.js';
import { dropImageCache, MessageList, PAGE } from './messages.js';
import { initialRoomState, reduceRoom } from './room-state.js';
import { ensureMember } from './rooms.js';
import { openSettings } from './settings.js';
import { StatsPanel } from './stats.js';
import { formatTime } from './time.js';
import { TurnBar } from './turnbar.js';
import { markSeen, setBaseTitle, setViewing } from './unread.js';

const SHOW_SKIPS_KEY = 'agent-chatroom.showSkips';
const SEARCH_LIMIT = 200;

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
  let state = initialRoomState();
  /** Agents' capabilities (SPEC §4: shown in get_context members), by name. @type {Map<string, string[]>} */
  const capabilities = new Map();
  let loaded = false;
  let destroyed = false;
  /** @type {ReturnType<typeof setTimeout>|undefined} */
  let resyncTimer;
  /** @type {ReturnType<typeof setTimeout>|undefined} */
  let refreshTimer;
  /** @type {string|null} */
  let draftId = null;
  /** The draft's file once uploaded: a retry after a failed send does not upload it again. */
  /** @type {{ file: File, up: any }|null} */
  let draftUpload = null;
  /**
   * Bumped by every live event that changes the room or its round. A REST answer carrying the
   * room is a snapshot from when the server answered; if events came in meanwhile they may be
   * newer, so such a snapshot is not applied and the room is fetched again instead.
   */
  let liveEpoch = 0;

  const room = () => state.room;
  const tz = () => room()?.timezone || 'Asia/Shanghai';
  const me = () => ctx.me() || '';
  const myMember = () => room()?.members.find((/** @type {any} */ m) => m.name.toLowerCase() === me().toLowerCase());
  const isCreator = () => Boolean(room() && room().created_by.toLowerCase() === me().toLowerCase());
  const isAdmin = () => Boolean(room() && (isCreator() || myMember()?.is_host));
  /** SPEC v2 §3: every person member may pause/resume and start rounds. */
  const isPersonMember = () => Boolean(myMember() && myMember().role === 'user');

  /** @type {Map<string, number>} */
  const roundNumbers = new Map();
  /** @param {string} id */
  const roundNumber = (id) => {
    if (roundNumbers.has(id)) return /** @type {number} */ (roundNumbers.get(id));
    const r = room();
    if (!r) return 0;
    let n = r.history_rounds.indexOf(id) + 1;
    if (n === 0 && r.current_round?.round_id === id) n = r.history_rounds.length + 1;
    if (n > 0) roundNumbers.set(id, n);
    return n;
  };

  // ── pieces ──
  const list = new MessageList({
    me,
    timezone: tz,
    members: () => room()?.members || [],
    mode: () => room()?.interaction_mode || 'default',
    isAdmin,
    roundNumber,
    fetchPage: async (args) => (await callTool('get_messages', { room_id: roomId, ...args })).messages,
    onReply: (m) => composer.setReply(m),
    onEdit: (m, text) => editMessage(m, text),
    onDelete: (m) => deleteMessage(m),
    onJumpToId: (id) => jumpToId(id),
  });
  const turnbar = new TurnBar({ now: () => live.serverNow(), onPass: () => adminCall('pass_turn', {}) });
  const composer = new Composer({ members: () => room()?.members || [], me, onSend: (draft) => send(draft) });
  const stats = new StatsPanel({ roomId, onNotMember: () => kickedOut() });

  const title = h('h1', { class: 'room-title', id: 'room-title' }, '…');
  const modeChip = h('span', { class: 'chip' });
  const statusChip = h('span', { class: 'chip room-status' });
  const pauseBtn = h('button', { type: 'button', class: 'btn btn-small', id: 'pause-btn', hidden: true });
  const startBtn = h('button', { type: 'button', class: 'btn btn-small', id: 'start-round-btn', hidden: true }, icon('play', { size: 14 }), t('room.startRound'));
  const agentBtn = h('button', { type: 'button', class: 'btn btn-small', id: 'add-agent-btn' }, icon('plus', { size: 14 }), t('room.addAgent'));
  const settingsBtn = h('button', { type: 'button', class: 'btn btn-small btn-icon', id: 'settings-btn', hidden: true, 'aria-label': t('settings.title'), title: t('settings.title') }, icon('settings', { size: 16 }));
  const sideToggle = h('button', { type: 'button', class: 'btn btn-small side-toggle', 'aria-controls': 'room-side', 'aria-expanded': 'false' }, t('room.sideToggle'));
  const head = h(
    'header',
    { class: 'room-head' },
    h('a', { class: 'btn btn-ghost btn-small back-link', href: '#/rooms', 'aria-label': t('room.backLabel') }, t('room.back')),
    h('div', { class: 'room-head-title' }, title, h('span', { class: 'room-chips' }, modeChip, statusChip)),
    h('div', { class: 'room-head-actions', role: 'toolbar', 'aria-label': t('room.actions') }, pauseBtn, startBtn, agentBtn, settingsBtn, sideToggle),
  );

  // the server's standing notice (paused by whom, guard tripped, no agent online), above the
  // person's announcement; written by the server in the room's language
  const sysNoticeText = h('span', { class: 'system-announcement-text' });
  const sysNotice = h(
    'section',
    { class: 'system-announcement', role: 'status', 'aria-label': t('room.systemNotice'), hidden: true },
    h('span', { class: 'system-announcement-label' }, icon('megaphone', { size: 14 }), t('room.systemNotice')),
    ' ',
    sysNoticeText,
  );

  // announcement
  const annText = h('div', { class: 'announcement-text' });
  const annMeta = h('span', { class: 'announcement-meta muted' });
  const announcement = h(
    'section',
    { class: 'announcement', 'aria-label': t('room.announcement'), hidden: true },
    h('div', { class: 'announcement-head' }, h('span', { class: 'announcement-label' }, icon('megaphone', { size: 16 }), t('room.announcement')), annMeta),
    annText,
  );

  // empty-room hint: how to bring an agent in
  const emptyHint = h(
    'div',
    { class: 'empty-hint', hidden: true },
    h('p', {}, t('room.noAgents')),
    h('button', { type: 'button', class: 'btn btn-primary btn-small', onclick: () => openAgents() }, icon('plus', { size: 14 }), t('room.addAgent')),
  );

  // message toolbar
  const showSkips = h('input', { type: 'checkbox', id: 'toggle-skips', checked: localStorage.getItem(SHOW_SKIPS_KEY) !== '0' });
  const msgTools = h('div', { class: 'msg-tools' }, h('label', { class: 'toggle', for: 'toggle-skips' }, showSkips, ' ', t('room.showSkips')));
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
  const membersHeading = h('h2', { id: 'members-heading' }, t('room.members'));
  const membersList = h('ul', { class: 'members', 'aria-labelledby': 'members-heading' });
  const searchInput = h('input', { type: 'search', id: 'search-input', placeholder: t('search.placeholder'), autocomplete: 'off' });
  const searchBtn = h('button', { type: 'submit', class: 'btn btn-small' }, t('search.button'));
  const searchStatus = h('p', { class: 'muted search-status', role: 'status' });
  const searchResults = h('ul', { class: 'search-results', 'aria-label': t('search.results') });
  const searchForm = h(
    'form',
    { class: 'search-form', role: 'search', novalidate: true },
    h('label', { for: 'search-input', class: 'visually-hidden' }, t('search.label')),
    h('div', { class: 'inline-row' }, searchInput, searchBtn),
  );
  const exportBtns = ['markdown', 'pdf', 'html', 'json'].map((format) =>
    h('button', { type: 'button', class: 'btn btn-small', id: format === 'markdown' ? 'export-md' : `export-${format}`, dataset: { format } }, t(`export.${format}`)),
  );
  const leaveBtn = h('button', { type: 'button', class: 'btn btn-small btn-danger' }, t('room.leave'));
  const sideClose = h('button', { type: 'button', class: 'btn btn-ghost btn-small side-close', 'aria-label': t('room.closeSide') }, icon('x', { size: 16 }));
  const side = h(
    'aside',
    { class: 'room-side', id: 'room-side', 'aria-label': t('room.details') },
    sideClose,
    h('section', { class: 'side-section' }, h('h2', {}, t('room.info')), info),
    h('section', { class: 'side-section' }, membersHeading, membersList),
    stats.el,
    h('section', { class: 'side-section' }, h('h2', {}, t('search.title')), searchForm, searchStatus, searchResults),
    h('section', { class: 'side-section' }, h('h2', {}, t('export.title')), h('div', { class: 'inline-row wrap' }, ...exportBtns)),
    h('section', { class: 'side-section' }, leaveBtn),
  );

  const main = h('div', { class: 'room-main' }, sysNotice, announcement, turnbar.el, emptyHint, msgTools, list.el, composer.el);
  const backdrop = h('div', { class: 'side-backdrop', hidden: true });
  const view = h('section', { class: 'view view-room', 'aria-labelledby': 'room-title' }, head, h('div', { class: 'room-body' }, main, backdrop, side));
  container.append(view);

  /** @param {boolean} open */
  const setSideOpen = (open) => {
    side.classList.toggle('open', open);
    sideToggle.setAttribute('aria-expanded', String(open));
    backdrop.hidden = !open;
    if (open) sideClose.focus({ preventScroll: true });
  };
  const narrow = () => window.matchMedia('(max-width: 860px)').matches;
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

  // ── state ──

  /** @param {Parameters<typeof reduceRoom>[1]} action */
  const dispatch = (action) => {
    const before = state;
    state = reduceRoom(state, action);
    if (state === before) return;
    if (action.type === 'event' && action.event === 'room_update') renderRoom();
    else if (action.type === 'room') renderRoom();
    else renderTurn();
    if (state.stale) scheduleRefresh();
  };

  // ── rendering ──

  const currentTurn = () => {
    const r = room()?.current_round;
    if (!r || r.completed || !r.turn) return null;
    return { ...r.turn, timeout_ms: room().settings?.turn_timeout_ms || state.timeoutMs };
  };

  const renderTurn = () => {
    const r = room();
    if (!r) return;
    const turn = currentTurn();
    const connected = live.isOpen;
    turnbar.update({
      paused: r.system_status === 'paused',
      connected,
      mode: r.interaction_mode,
      turn,
      round: r.current_round,
      canPass: isAdmin() && !r.archived,
      me: me(),
      activity: turn ? state.activities[turn.agent] ?? null : null,
    });
    renderMembers(membersList, r, {
      me: me(),
      turnAgent: turn?.agent ?? null,
      activities: state.activities,
      capabilities,
      canRemove: isAdmin() && !r.archived,
      onRemove: (name) => removeMember(name),
    });
    view.classList.toggle('disconnected', !connected);
    membersHeading.textContent = t('room.membersCount', { n: r.members.length, online: onlineCount(r) });
    const agents = r.members.filter((/** @type {any} */ m) => m.role === 'ai_agent').length;
    emptyHint.hidden = agents > 0 || r.archived;
  };

  const renderAnnouncement = () => {
    const a = room().announcement || {};
    sysNoticeText.textContent = a.system_announcement || '';
    sysNotice.hidden = !a.system_announcement;
    const text = a.user_announcement || '';
    annText.textContent = text;
    annMeta.textContent = a.user_announcement && a.announcement_publisher ? `${a.announcement_publisher} · ${formatTime(a.timestamp, tz())}` : '';
    announcement.hidden = !text;
  };

  const renderRoom = () => {
    const r = room();
    if (!r) return;
    setBaseTitle(`${r.room_name} · ${t('app.title')}`);
    title.textContent = r.room_name;
    modeChip.textContent = modeLabel(r.interaction_mode);
    const paused = r.system_status === 'paused';
    statusChip.textContent = r.archived ? t('status.archived') : statusLabel(r.system_status);
    statusChip.classList.toggle('chip-warn', paused || r.archived);
    statusChip.classList.toggle('chip-ok', !paused && !r.archived);
    const steer = (isAdmin() || isPersonMember()) && !r.archived;
    pauseBtn.hidden = !steer;
    pauseBtn.replaceChildren(icon(paused ? 'play' : 'pause', { size: 14 }), paused ? t('room.resume') : t('room.pause'));
    pauseBtn.setAttribute('aria-label', paused ? t('room.resumeLabel') : t('room.pauseLabel'));
    startBtn.hidden = !steer;
    settingsBtn.hidden = !isAdmin() || r.archived;
    agentBtn.hidden = r.archived;
    sideToggle.textContent = t('room.sideToggleCount', { n: r.members.length });

    info.replaceChildren(
      ...[
        [t('info.description'), r.room_description || t('info.noDescription')],
        [t('info.mode'), modeLabel(r.interaction_mode)],
        [t('info.status'), statusChip.textContent],
        [t('info.creator'), r.created_by],
        [t('info.userPosts'), r.user_participation ? t('info.allowed') : t('info.adminsOnly')],
        [t('info.password'), r.has_password ? t('info.passwordNeeded') : t('info.none')],
        [t('info.autoRounds'), String(r.settings?.max_auto_rounds ?? 3)],
        [t('info.timezone'), r.timezone],
      ].flatMap(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]),
    );

    if (r.archived) composer.setEnabled(false, t('composer.archived'));
    else if (!r.user_participation && !isAdmin()) composer.setEnabled(false, t('composer.muted'));
    else composer.setEnabled(true);
    renderAnnouncement();
    renderTurn();
    list.relabelRounds();
  };

  // ── data ──

  const loadCapabilities = async () => {
    try {
      const { members } = await callTool('get_context', { room_id: roomId, limit: 1 });
      if (destroyed) return;
      capabilities.clear();
      for (const m of members) if (m.capabilities?.length) capabilities.set(m.name, m.capabilities);
      renderRoom();
    } catch {
      // Capabilities are a detail: the member list shows without them.
    }
  };

  const refreshRoom = async (attempt = 0) => {
    const epoch = liveEpoch;
    try {
      const data = await callTool('get_room', { room_id: roomId });
      if (destroyed) return;
      if (epoch !== liveEpoch && attempt < 3) return void refreshRoom(attempt + 1);
      dispatch({ type: 'room', room: data.room });
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
    toast(t('room.kicked'), 'error');
    ctx.navigate('#/rooms');
  };

  /** @returns {Promise<void>} */
  const load = async () => {
    let data;
    // The newest page is asked for at the same time as the room (one round trip, not two).
    const firstPage = callTool('get_messages', { room_id: roomId, limit: PAGE });
    firstPage.catch(() => undefined);
    try {
      data = await callTool('get_room', { room_id: roomId });
    } catch (err) {
      if (err instanceof ApiError && err.code === 'not_a_member' && (await ensureMember(roomId))) return load();
      if (destroyed) return;
      showLoadError(err);
      return;
    }
    if (destroyed) return;
    ctx.myRooms.add(roomId);
    dispatch({ type: 'room', room: data.room });
    void loadCapabilities();
    try {
      const { messages } = await firstPage;
      if (destroyed) return;
      list.openLatest(messages);
      // Statistics after the messages: on a long history they cost the server more.
      stats.refresh();
      loaded = true;
      seen();
      live.watch(roomId, () => (loaded ? list.resumeSeq : null));
      live.subscribe(roomId, list.resumeSeq ?? undefined);
    } catch (err) {
      if (!destroyed) toast(t('msg.loadFailed', { error: errorText(err) }), 'error');
      stats.refresh();
    }
  };

  /** @param {any} err */
  const showLoadError = (err) => {
    view.replaceChildren(
      h('div', { class: 'card load-error' }, h('h1', { class: 'page-title' }, t('room.cannotOpen')), h('p', {}, errorText(err)), h('a', { class: 'btn', href: '#/rooms' }, t('room.backToList'))),
    );
  };

  /** The reader sees the newest messages: they count as read. */
  const seen = () => {
    if (list.atLive && list.resumeSeq !== null && document.visibilityState === 'visible') markSeen(roomId, list.resumeSeq);
  };
  const onVisible = () => seen();
  document.addEventListener('visibilitychange', onVisible);
  setViewing(roomId);

  /** A hole in the seqs we hold (the first page raced the socket): ask for a replay. */
  const resync = () => {
    clearTimeout(resyncTimer);
    resyncTimer = setTimeout(() => {
      if (list.store.hasGap() && list.resumeSeq !== null) live.subscribe(roomId, list.resumeSeq);
    }, 300);
  };

  // ── actions ──

  /** @param {{ text: string, file: File|null, replyTo: any }} draft */
  const send = async ({ text, file, replyTo }) => {
    draftId ??= clientMessageId();
    try {
      /** @type {Record<string, any>} */
      const args = { room_id: roomId, text_content: text.trim() ? text : '', client_msg_id: draftId };
      if (replyTo) args.response_to = replyTo.message_id;
      if (file) {
        if (draftUpload?.file !== file) draftUpload = { file, up: await uploadFile(roomId, file) };
        args.file_url = draftUpload.up.file_url;
        args.file_type = draftUpload.up.file_type;
      }
      const { message } = await callTool('send_message', args);
      draftId = null;
      draftUpload = null;
      if (list.addLive(message, { mine: true }).gap) resync();
      seen();
      return true;
    } catch (err) {
      let text = errorText(err);
      if (err instanceof ApiError && err.code === 'forbidden') text = t('composer.forbidden');
      if (err instanceof ApiError && err.code === 'payload_too_large') text = t('composer.tooLarge');
      if (err instanceof ApiError && err.code === 'validation_error') text = t('composer.empty');
      composer.showError(t('composer.failed', { error: text }));
      return false;
    }
  };

  /** @param {any} m @param {string} text */
  const editMessage = async (m, text) => {
    if (!text.trim()) {
      toast(t('composer.empty'), 'error');
      return false;
    }
    try {
      const { message } = await callTool('edit_message', { message_id: m.message_id, text_content: text });
      list.editing = null;
      list.addLive(message);
      return true;
    } catch (err) {
      toast(t('msg.editFailed', { error: errorText(err) }), 'error');
      return false;
    }
  };

  /** @param {any} m */
  const deleteMessage = async (m) => {
    if (!(await confirmDialog({ title: t('msg.deleteTitle'), message: t('msg.deleteConfirm'), confirm: t('msg.delete'), danger: true }))) return;
    try {
      const { message } = await callTool('delete_message', { message_id: m.message_id });
      list.addLive(message);
    } catch (err) {
      toast(t('msg.deleteFailed', { error: errorText(err) }), 'error');
    }
  };

  /** @param {string} id */
  const jumpToId = async (id) => {
    try {
      const { message } = await callTool('get_full_message', { message_id: id });
      if (!(await list.jumpTo(message.seq))) toast(t('search.notFound'), 'error');
    } catch (err) {
      toast(errorText(err), 'error');
    }
  };

  /** @param {string} name */
  const removeMember = async (name) => {
    if (!(await confirmDialog({ title: t('members.remove', { name }), message: t('settings.removeConfirm', { name }), confirm: t('settings.remove'), danger: true }))) return;
    adminCall('remove_member', { name });
  };

  /** @param {string} tool @param {Record<string, any>} args @param {string} [okText] */
  const adminCall = async (tool, args, okText) => {
    const epoch = liveEpoch;
    try {
      const data = await callTool(tool, { room_id: roomId, ...args });
      if (data?.room && !destroyed) {
        if (epoch === liveEpoch) dispatch({ type: 'room', room: data.room });
        else scheduleRefresh();
      }
      if (okText) toast(okText);
      return data;
    } catch (err) {
      let text = errorText(err);
      if (tool === 'start_round' && /** @type {any} */ (err).code === 'conflict') {
        // The server says why (docs/turns.md): a person host starts rounds by mentioning agents.
        const reason = /** @type {any} */ (err).details?.reason;
        text = reason === 'person_host' ? t('room.startPersonHost') : reason === 'guard' ? t('room.startGuard') : t('room.startConflict');
      }
      toast(text, 'error');
      return null;
    }
  };

  pauseBtn.addEventListener('click', () => {
    const paused = room()?.system_status === 'paused';
    // No toast on success: the status chip, the button and the turn bar show the change.
    adminCall('set_room_status', { system_status: paused ? 'active' : 'paused' });
  });
  startBtn.addEventListener('click', () => adminCall('start_round', {}));
  const openAgents = () => {
    if (room()) openAgentDialog({ room: room() });
  };
  agentBtn.addEventListener('click', openAgents);
  settingsBtn.addEventListener('click', () => {
    if (!room()) return;
    if (narrow()) setSideOpen(false);
    // A snapshot the panel's calls answered may be older than events that came in meanwhile (a
    // resume's answer after the next agent_turn): like adminCall, apply it only if no event came.
    const epoch = liveEpoch;
    openSettings({
      room: room(),
      me: me(),
      isCreator: isCreator(),
      onRoom: (r) => {
        if (destroyed) return;
        if (epoch === liveEpoch) dispatch({ type: 'room', room: r });
        else scheduleRefresh();
      },
    });
  });

  /** @param {string} format @param {HTMLButtonElement} btn */
  const exportAs = async (format, btn) => {
    const label = btn.textContent;
    btn.disabled = true;
    btn.textContent = t('export.working');
    try {
      const data = await callTool('export_chat_history', { room_id: roomId, format });
      downloadUrl(data.url, data.filename);
    } catch (err) {
      toast(t('export.failed', { error: errorText(err) }), 'error');
    } finally {
      btn.disabled = false;
      btn.textContent = label;
    }
  };
  for (const btn of exportBtns) btn.addEventListener('click', () => exportAs(btn.dataset.format || 'markdown', /** @type {HTMLButtonElement} */ (btn)));

  leaveBtn.addEventListener('click', async () => {
    if (!(await confirmDialog({ title: t('room.leave'), message: t('room.leaveConfirm'), confirm: t('room.leave'), danger: true }))) return;
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
      searchStatus.textContent = t('search.empty');
      return;
    }
    searchStatus.textContent = t('search.working');
    try {
      const { messages } = await callTool('search_messages', { room_id: roomId, query, limit: SEARCH_LIMIT });
      // The server answers oldest first; people look for recent things first.
      const hits = [...messages].reverse();
      searchStatus.textContent = hits.length ? t('search.found', { n: hits.length }) : t('search.none');
      for (const m of hits) {
        const btn = h(
          'button',
          { type: 'button', class: 'search-hit', dataset: { seq: m.seq } },
          h('span', { class: 'search-hit-head' }, h('strong', {}, m.sender), ' ', h('time', { datetime: m.timestamp }, formatTime(m.timestamp, tz()))),
          h('span', { class: 'search-hit-text' }, highlight(plainText(m.text_content, 120), query)),
        );
        btn.addEventListener('click', async () => {
          if (narrow()) setSideOpen(false);
          if (!(await list.jumpTo(m.seq))) toast(t('search.notFound'), 'error');
        });
        searchResults.append(h('li', {}, btn));
      }
    } catch (err) {
      searchStatus.textContent = t('search.failed', { error: errorText(err) });
    }
  });

  // ── live events ──

  /** @param {any} frame */
  const onEvent = (frame) => {
    if (frame.room_id !== roomId || !room()) return;
    const d = frame.data || {};
    if (frame.event === 'message_new' || frame.event === 'message_update') {
      if (!d.message) return;
      dispatch({ type: 'event', event: frame.event, data: d });
      const { gap } = list.addLive(d.message);
      if (gap) resync();
      // Mentions of agents reorder the round (SPEC §6.1.5) without a new agent_turn while the
      // holder keeps the turn: fetch the stored round.
      const agentNames = new Set(room().members.filter((/** @type {any} */ m) => m.role === 'ai_agent').map((/** @type {any} */ m) => m.name.toLowerCase()));
      if (frame.event === 'message_new' && (d.message.mentions || []).some((/** @type {string} */ n) => agentNames.has(n.toLowerCase()))) scheduleRefresh();
      if (frame.event === 'message_new') seen();
      return;
    }
    liveEpoch += 1;
    if (frame.event === 'member_leave' && d.member?.name?.toLowerCase() === me().toLowerCase()) return kickedOut();
    dispatch({ type: 'event', event: frame.event, data: d });
    if (frame.event === 'member_join' && d.member?.role === 'ai_agent') void loadCapabilities();
    if (frame.event === 'member_join' || frame.event === 'member_leave') {
      list.refreshAll();
      // A join or leave changes the round's queue; the server's room is the truth.
      scheduleRefresh();
    }
    if (frame.event === 'round_end') stats.schedule();
  };

  load();

  return {
    onEvent,
    /** The socket (re)connected: the subscription resumes by itself; refresh the room state. */
    onLive() {
      if (room()) {
        scheduleRefresh();
        stats.schedule();
        // Edits and deletions made while the socket was down reach the page only this way.
        void list.refreshHeld();
      }
    },
    /** The server ended this socket's subscription to the room (removed, or left elsewhere). @param {string} id */
    onUnsubscribed(id) {
      // get_room answers not_a_member when the caller is out, and the page says so (kickedOut).
      if (id === roomId && room()) scheduleRefresh();
    },
    /** The connection went up or down: the turn bar and members show it. */
    onConnection() {
      renderTurn();
    },
    destroy() {
      destroyed = true;
      live.unwatch(roomId);
      clearTimeout(resyncTimer);
      clearTimeout(refreshTimer);
      document.removeEventListener('visibilitychange', onVisible);
      setViewing(null);
      turnbar.destroy();
      stats.destroy();
      dropImageCache();
      setBaseTitle(t('app.title'));
    },
  };
}

/** Text with the query marked (case-insensitive), as nodes. @param {string} text @param {string} query */
function highlight(text, query) {
  /** @type {(string|HTMLElement)[]} */
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
