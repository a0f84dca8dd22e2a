// Page entry: restores the session, keeps one live connection, routes between the views
// (#/rooms, #/room/{id}) and shows the connection banner.
import { callTool, onUnauthorized, session } from './api.js';
import { h, toast } from './dom.js';
import { LiveConnection } from './live.js';
import { mountLogin } from './login.js';
import { mountRoom } from './room.js';
import { mountRooms } from './rooms.js';

const main = document.getElementById('main');
const topbarUser = document.getElementById('topbar-user');
const meName = document.getElementById('me-name');
const connDot = document.getElementById('conn-dot');
const banner = document.getElementById('conn-banner');
const bannerText = document.getElementById('conn-banner-text');
const retryBtn = document.getElementById('conn-retry-btn');
const logoutBtn = document.getElementById('logout-btn');

/** Rooms the signed-in person belongs to (from auth_ok, joins and creates). */
const myRooms = new Set();
let live = null;
let view = null;
let bannerTimer = null;

function navigate(hash) {
  if (location.hash === hash) route();
  else location.hash = hash;
}

function setView(mount) {
  view?.destroy?.();
  view = null;
  main.replaceChildren();
  main.className = '';
  view = mount(main);
}

function route() {
  if (!session.token) {
    stopLive();
    topbarUser.hidden = true;
    setView((el) => mountLogin(el, signedIn));
    return;
  }
  topbarUser.hidden = false;
  meName.textContent = session.name || '';
  startLive();
  const match = /^#\/room\/(.+)$/.exec(location.hash);
  if (match) {
    const roomId = decodeURIComponent(match[1]);
    setView((el) => {
      main.className = 'main-room';
      return mountRoom(el, { roomId, live, me: () => session.name, navigate, myRooms });
    });
  } else {
    if (location.hash !== '#/rooms') history.replaceState(null, '', '#/rooms');
    document.title = 'Agent 聊天室';
    setView((el) => mountRooms(el, { myRooms, navigate }));
  }
  main.focus({ preventScroll: true });
}

function signedIn(token, participant) {
  session.save(token, participant);
  toast(`欢迎，${session.name}！`);
  navigate(location.hash.startsWith('#/room/') ? location.hash : '#/rooms');
}

function signOut(message) {
  stopLive();
  session.clear();
  myRooms.clear();
  if (message) toast(message, 'error');
  history.replaceState(null, '', '#/rooms');
  route();
}

// ── live connection and banner ──

function startLive() {
  if (live) return;
  live = new LiveConnection({
    token: session.token,
    onEvent: (frame) => view?.onEvent?.(frame),
    onAuth: (frame) => {
      for (const r of frame.rooms || []) myRooms.add(r.room_id);
      if (frame.participant?.name && frame.participant.name !== session.name) {
        session.name = frame.participant.name;
        meName.textContent = session.name;
      }
      view?.onLive?.();
      view?.refresh?.();
    },
    onStatus: showStatus,
    onFatal: () => signOut('登录已失效，请重新登录'),
  });
  live.start();
}

function stopLive() {
  live?.stop();
  live = null;
  banner.hidden = true;
  clearInterval(bannerTimer);
}

function showStatus(status) {
  const labels = { open: '已连接', connecting: '正在连接', reconnecting: '连接中断，正在重连', stopped: '未连接' };
  connDot.dataset.state = status.state;
  connDot.setAttribute('aria-label', `连接状态：${labels[status.state] || status.state}`);
  connDot.title = labels[status.state] || status.state;
  clearInterval(bannerTimer);
  if (status.state === 'reconnecting') {
    banner.hidden = false;
    banner.dataset.state = 'down';
    const paint = () => {
      const wait = Math.max(0, Math.ceil(((status.retryAt || 0) - Date.now()) / 1000));
      bannerText.textContent = wait > 0 ? `连接已断开，${wait} 秒后重连（第 ${status.attempt} 次）…` : '连接已断开，正在重连…';
    };
    paint();
    bannerTimer = setInterval(paint, 500);
    retryBtn.hidden = false;
  } else if (status.state === 'open' && status.everConnected && !banner.hidden && banner.dataset.state === 'down') {
    banner.dataset.state = 'up';
    bannerText.textContent = '已重新连接';
    retryBtn.hidden = true;
    bannerTimer = setTimeout(() => {
      if (banner.dataset.state === 'up') banner.hidden = true;
    }, 2000);
  } else if (status.state !== 'reconnecting' && banner.dataset.state !== 'up') {
    banner.hidden = true;
  }
}

retryBtn.addEventListener('click', () => live?.reconnectNow());
logoutBtn.addEventListener('click', () => {
  if (window.confirm('确定退出吗？如果没有设置密码，退出后将无法再用这个名字登录。')) signOut();
});
onUnauthorized(() => signOut('登录已失效，请重新登录'));

async function boot() {
  session.load();
  if (session.token) {
    try {
      const data = await callTool('login', { token: session.token }, { token: null });
      session.save(data.token || session.token, data.participant);
    } catch (err) {
      if (err.code === 'unauthorized') session.clear();
      // Other errors (server down): keep the token and let the live connection retry.
    }
  }
  window.addEventListener('hashchange', route);
  route();
}

boot().catch((err) => {
  main.replaceChildren(h('p', { class: 'form-error' }, `页面加载失败：${err?.message || err}`));
});
