// @ts-check
// Page entry: restores the session, keeps one live connection, routes between the views
// (#/rooms, #/room/{id}), shows the connection banner, and owns the top bar's switches:
// language (zh-CN / English), theme (system / light / dark) and mention notifications.
import { callTool, onUnauthorized, session } from './api.js';
import { h, toast } from './dom.js';
import { DICTIONARIES, getLang, setLang, t } from './i18n.js';
import { icon } from './icons.js';
import { LiveConnection } from './live.js';
import { mountLogin } from './login.js';
import { mountRoom } from './room.js';
import { mountRooms } from './rooms.js';
import { applyTheme, nextTheme, storedTheme } from './theme.js';
import { forgetSeeds, noteMessage, setBaseTitle } from './unread.js';

const byId = (/** @type {string} */ id) => /** @type {HTMLElement} */ (document.getElementById(id));
const main = byId('main');
const topbarUser = byId('topbar-user');
const meName = byId('me-name');
const connDot = byId('conn-dot');
const banner = byId('conn-banner');
const bannerText = byId('conn-banner-text');
const retryBtn = byId('conn-retry-btn');
const logoutBtn = byId('logout-btn');
const tools = byId('topbar-tools');

/** Rooms the signed-in person belongs to (from auth_ok, joins and creates). */
const myRooms = new Set();
/** @type {Map<string, string>} room id → name, for notifications */
const roomNames = new Map();
/** @type {LiveConnection|null} */
let live = null;
/** @type {any} */
let view = null;
/** @type {ReturnType<typeof setTimeout>|undefined} */
let bannerTimer;

// ── top bar switches ──

const langBtn = h('button', { type: 'button', class: 'btn btn-ghost btn-small', id: 'lang-btn' });
const themeBtn = h('button', { type: 'button', class: 'btn btn-ghost btn-small btn-icon', id: 'theme-btn' });
const notifyBtn = h('button', { type: 'button', class: 'btn btn-ghost btn-small btn-icon', id: 'notify-btn' }, icon('bell', { size: 16 }));
tools.append(notifyBtn, themeBtn, langBtn);

function paintStatic() {
  document.documentElement.lang = getLang();
  // The button offers the other language, named in that language, its accessible name too
  // ("Switch to English" / "切换到中文"), so a screen reader reads it with the right voice.
  const other = getLang() === 'en' ? 'zh-CN' : 'en';
  langBtn.textContent = DICTIONARIES[other]['app.languageName'];
  langBtn.setAttribute('aria-label', DICTIONARIES[other]['app.switchToThisLanguage']);
  langBtn.setAttribute('lang', other);
  const theme = storedTheme();
  themeBtn.replaceChildren(icon(theme === 'dark' ? 'moon' : theme === 'light' ? 'sun' : 'monitor', { size: 16 }));
  themeBtn.setAttribute('aria-label', t('app.theme', { theme: t(`theme.${theme}`) }));
  themeBtn.title = t('app.theme', { theme: t(`theme.${theme}`) });
  themeBtn.dataset.theme = theme;
  const perm = 'Notification' in window ? Notification.permission : 'denied';
  notifyBtn.hidden = perm === 'granted' || !('Notification' in window);
  notifyBtn.setAttribute('aria-label', t('app.enableNotifications'));
  notifyBtn.title = t('app.enableNotifications');
  byId('skip-link').textContent = t('app.skipLink');
  const brand = byId('brand');
  brand.setAttribute('aria-label', t('app.home'));
  byId('brand-text').textContent = t('app.title');
  logoutBtn.textContent = t('app.logout');
  retryBtn.textContent = t('conn.retryNow');
  const loading = document.getElementById('boot-loading');
  if (loading) loading.textContent = t('app.loading');
  setBaseTitle(t('app.title'));
}

langBtn.addEventListener('click', () => {
  setLang(getLang() === 'en' ? 'zh-CN' : 'en');
  paintStatic();
  route();
});
themeBtn.addEventListener('click', () => {
  applyTheme(nextTheme(storedTheme()), true);
  paintStatic();
});
notifyBtn.addEventListener('click', async () => {
  const answer = await Notification.requestPermission();
  toast(answer === 'granted' ? t('app.notificationsOn') : t('app.notificationsOff'), answer === 'granted' ? 'info' : 'error');
  paintStatic();
});

/** @param {string} hash */
function navigate(hash) {
  if (location.hash === hash) route();
  else location.hash = hash;
}

/** @param {(el: HTMLElement) => any} mount */
function setView(mount) {
  view?.destroy?.();
  view = null;
  main.replaceChildren();
  main.className = '';
  view = mount(main);
}

/**
 * Why the person is at the sign-in form again (a dictionary key, so a language switch repaints
 * it): a saved session the server no longer knows, or one that ended while the page was open.
 * @type {string}
 */
let loginNotice = '';

function route() {
  if (!session.token) {
    stopLive();
    topbarUser.hidden = true;
    setView((el) => mountLogin(el, signedIn, { notice: loginNotice ? t(loginNotice) : '' }));
    return;
  }
  topbarUser.hidden = false;
  meName.textContent = session.name || '';
  const connection = startLive();
  const match = /^#\/room\/(.+)$/.exec(location.hash);
  if (match) {
    const roomId = decodeURIComponent(match[1]);
    setView((el) => {
      main.className = 'main-room';
      return mountRoom(el, { roomId, live: connection, me: () => session.name || '', navigate, myRooms });
    });
  } else {
    if (location.hash !== '#/rooms') history.replaceState(null, '', '#/rooms');
    setBaseTitle(t('app.title'));
    setView((el) => mountRooms(el, { myRooms, navigate }));
  }
  main.focus({ preventScroll: true });
}

/** @param {string} token @param {any} participant */
function signedIn(token, participant) {
  loginNotice = '';
  session.save(token, participant);
  toast(t('app.welcome', { name: session.name || '' }));
  navigate(location.hash.startsWith('#/room/') ? location.hash : '#/rooms');
}

/** @param {string} [noticeKey] the dictionary key of the sign-in form's notice, if any */
function signOut(noticeKey) {
  stopLive();
  session.clear();
  myRooms.clear();
  loginNotice = noticeKey || '';
  history.replaceState(null, '', '#/rooms');
  route();
}

// ── live connection and banner ──

/** @returns {LiveConnection} */
function startLive() {
  if (live) return live;
  const connection = new LiveConnection({
    token: session.token || '',
    onEvent: (frame) => {
      const f = /** @type {any} */ (frame);
      if (f.event === 'message_new' && f.data?.message) noteMessage(f.room_id, f.data.message, { me: session.name || '', roomName: roomNames.get(f.room_id) });
      if ((f.event === 'room_update' || f.event === 'member_join') && f.data?.room?.room_name) roomNames.set(f.room_id, f.data.room.room_name);
      view?.onEvent?.(frame);
    },
    onAuth: (frame) => {
      const f = /** @type {any} */ (frame);
      for (const r of f.rooms || []) {
        myRooms.add(r.room_id);
        if (r.room_name) roomNames.set(r.room_id, r.room_name);
      }
      if (f.participant?.name && f.participant.name !== session.name) {
        session.name = f.participant.name;
        meName.textContent = session.name;
      }
      forgetSeeds();
      view?.onLive?.();
      view?.refresh?.();
    },
    onStatus: showStatus,
    onFatal: () => signOut('app.sessionExpired'),
    onUnsubscribed: (roomId) => {
      myRooms.delete(roomId);
      view?.onUnsubscribed?.(roomId);
    },
  });
  live = connection;
  connection.start();
  return connection;
}

function stopLive() {
  live?.stop();
  live = null;
  banner.hidden = true;
  clearInterval(bannerTimer);
}

/** @param {any} status */
function showStatus(status) {
  const label = t(`conn.${status.state}`);
  connDot.dataset.state = status.state;
  connDot.setAttribute('aria-label', t('conn.label', { state: label }));
  connDot.title = label;
  clearInterval(bannerTimer);
  view?.onConnection?.();
  if (status.state === 'reconnecting') {
    banner.hidden = false;
    banner.dataset.state = 'down';
    const paint = () => {
      const wait = Math.max(0, Math.ceil(((status.retryAt || 0) - Date.now()) / 1000));
      bannerText.textContent = wait > 0 ? t('conn.retryIn', { s: wait, n: status.attempt }) : t('conn.down');
    };
    paint();
    bannerTimer = setInterval(paint, 500);
    retryBtn.hidden = false;
  } else if (status.state === 'open' && status.everConnected && !banner.hidden && banner.dataset.state === 'down') {
    banner.dataset.state = 'up';
    bannerText.textContent = t('conn.back');
    retryBtn.hidden = true;
    bannerTimer = setTimeout(() => {
      if (banner.dataset.state === 'up') banner.hidden = true;
    }, 2000);
  } else if (status.state !== 'reconnecting' && banner.dataset.state !== 'up') {
    banner.hidden = true;
  }
}

retryBtn.addEventListener('click', () => live?.reconnectNow());
logoutBtn.addEventListener('click', async () => {
  const { confirmDialog } = await import('./dialog.js');
  if (await confirmDialog({ title: t('app.logout'), message: t('app.logoutConfirm'), confirm: t('app.logout'), danger: true })) signOut();
});
onUnauthorized(() => signOut('app.sessionExpired'));

async function boot() {
  applyTheme(storedTheme(), false);
  paintStatic();
  session.load();
  if (session.token) {
    try {
      const data = await callTool('login', { token: session.token }, { token: null });
      session.save(data.token || session.token, data.participant);
    } catch (err) {
      // A token the server no longer knows (rotated, or another DATA_DIR): say so at the form.
      if (/** @type {any} */ (err).code === 'unauthorized') {
        session.clear();
        loginNotice = 'login.savedSessionInvalid';
      }
      // Other errors (server down): keep the token and let the live connection retry.
    }
  }
  window.addEventListener('hashchange', route);
  route();
}

boot().catch((err) => {
  main.replaceChildren(h('p', { class: 'form-error' }, t('app.loadFailed', { error: err?.message || String(err) })));
});
