// @ts-check
// REST client (POST /api/v1/tools/{name}) and the signed-in session kept in localStorage.

const STORAGE_KEY = 'agent-chatroom.session';

export class ApiError extends Error {
  constructor(code, message, status = 0, details = undefined) {
    super(message);
    this.name = 'ApiError';
    this.code = code;
    this.status = status;
    this.details = details;
  }

  /** Validation issues as { path → message } (path like "room_name"). */
  fieldIssues() {
    const out = {};
    const issues = this.details && Array.isArray(this.details.issues) ? this.details.issues : [];
    for (const issue of issues) {
      const path = typeof issue.path === 'string' ? issue.path : Array.isArray(issue.path) ? issue.path.join('.') : '';
      if (!(path in out)) out[path] = issue.message || '';
    }
    if (this.details && typeof this.details.field === 'string' && !(this.details.field in out)) out[this.details.field] = this.message;
    return out;
  }
}

/** The signed-in person: token, name and participant record. */
export const session = {
  token: null,
  name: null,
  participant: null,

  load() {
    try {
      const saved = JSON.parse(localStorage.getItem(STORAGE_KEY) || 'null');
      if (saved && typeof saved.token === 'string') {
        this.token = saved.token;
        this.name = saved.name || null;
      }
    } catch {
      // unreadable storage: start signed out
    }
  },

  save(token, participant) {
    this.token = token;
    this.participant = participant;
    this.name = participant?.name ?? this.name;
    try {
      localStorage.setItem(STORAGE_KEY, JSON.stringify({ token, name: this.name }));
    } catch {
      // private mode: the session lasts as long as the tab
    }
  },

  clear() {
    this.token = null;
    this.name = null;
    this.participant = null;
    try {
      localStorage.removeItem(STORAGE_KEY);
    } catch {
      // ignore
    }
  },
};

/** Listeners told when a call comes back `unauthorized` (the page then signs out). */
const unauthorizedListeners = new Set();
export function onUnauthorized(listener) {
  unauthorizedListeners.add(listener);
  return () => unauthorizedListeners.delete(listener);
}

function authHeaders(token) {
  return token ? { authorization: `Bearer ${token}` } : {};
}

async function readAnswer(res) {
  let body = null;
  try {
    body = await res.json();
  } catch {
    throw new ApiError(res.ok ? 'internal_error' : 'network', `HTTP ${res.status}`, res.status);
  }
  if (body && body.ok === true) return body.data;
  const error = (body && body.error) || {};
  throw new ApiError(error.code || 'internal_error', error.message || `HTTP ${res.status}`, res.status, error.details);
}

/** Calls a tool; resolves with `data` or throws ApiError. */
export async function callTool(name, args = {}, { token = session.token } = {}) {
  let res;
  try {
    res = await fetch(`/api/v1/tools/${encodeURIComponent(name)}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...authHeaders(token) },
      body: JSON.stringify(args),
    });
  } catch {
    throw new ApiError('network', '无法连接服务器');
  }
  try {
    return await readAnswer(res);
  } catch (err) {
    if (err instanceof ApiError && err.code === 'unauthorized' && token) for (const l of unauthorizedListeners) l(err);
    throw err;
  }
}

/** Uploads one file to a room → { file_url, file_type, bytes, filename, signed_url }. */
export async function uploadFile(roomId, file) {
  const form = new FormData();
  form.append('file', file, file.name);
  let res;
  try {
    res = await fetch(`/api/v1/rooms/${encodeURIComponent(roomId)}/uploads`, {
      method: 'POST',
      headers: authHeaders(session.token),
      body: form,
    });
  } catch {
    throw new ApiError('network', '无法连接服务器');
  }
  return readAnswer(res);
}

/** Fetches an attachment with the token (downloads need it) → Blob. */
export async function fetchFile(url) {
  let res;
  try {
    res = await fetch(url, { headers: authHeaders(session.token) });
  } catch {
    throw new ApiError('network', '无法连接服务器');
  }
  if (!res.ok) {
    await readAnswer(res);
    throw new ApiError('not_found', `HTTP ${res.status}`, res.status);
  }
  return res.blob();
}

/** A random id for send_message retries (client_msg_id). */
export function clientMessageId() {
  if (crypto.randomUUID) return crypto.randomUUID();
  return `${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`;
}
