// Which room an interactive IDE session belongs to. In order:
// 1. the session's state file, written by `hook claude-session-start` (<state dir>/claude-sessions/<session_id>.json);
// 2. the environment: CHATROOM_URL (default http://127.0.0.1:3000), CHATROOM_TOKEN, CHATROOM_ROOM_ID;
// 3. a project file `.agent-chatroom.json` {url, token, room_id} in the session's directory or
//    one above it up to the repository root or $HOME, owned by the user and writable by no one
//    else (written by `hook claude-init`).
// Nothing found: the session is not in a room and every hook lets it be.
import { existsSync, lstatSync, type Stats } from 'node:fs';
import os from 'node:os';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { stateDir } from '../agent/connect.js';

export const PROJECT_FILE = '.agent-chatroom.json';

export interface RoomBinding {
  url: string;
  token: string;
  room_id: string;
  /** Where it came from (for messages). */
  source: string;
}

function valid(value: unknown): value is { url?: unknown; token: string; room_id: string } {
  const v = value as { token?: unknown; room_id?: unknown } | null;
  return !!v && typeof v.token === 'string' && v.token !== '' && typeof v.room_id === 'string' && v.room_id !== '';
}

async function readBinding(file: string): Promise<RoomBinding | null> {
  try {
    const parsed = JSON.parse(await readFile(file, 'utf8')) as unknown;
    if (!valid(parsed)) return null;
    return { url: typeof parsed.url === 'string' && parsed.url ? parsed.url : 'http://127.0.0.1:3000', token: parsed.token, room_id: parsed.room_id, source: file };
  } catch {
    return null;
  }
}

/**
 * `.agent-chatroom.json` in `dir` or the nearest directory above it, within the project only
 * (SPEC §10): the walk stops at the repository's root (the directory holding `.git`) or at the
 * user's home directory, whichever comes first, so a file planted in a shared parent (a 1777
 * folder) is never reached from inside a project. A file found is used only when it is a regular
 * file of the current user that neither the group nor others may write; otherwise the walk stops
 * there with nothing (a refused file never lets one further up stand in for it).
 */
export function findProjectFile(dir: string, home: string | undefined = os.homedir()): string | null {
  let current = path.resolve(dir);
  const stopAt = home ? path.resolve(home) : null;
  for (;;) {
    const candidate = path.join(current, PROJECT_FILE);
    const info = lstatSync(candidate, { throwIfNoEntry: false });
    if (info) return trustedBinding(info) ? candidate : null;
    if (current === stopAt || existsSync(path.join(current, '.git'))) return null;
    const parent = path.dirname(current);
    if (parent === current) return null;
    current = parent;
  }
}

/** A binding file to trust: a regular file (not a link), the current user's, written by no one else. */
function trustedBinding(info: Stats): boolean {
  const uid = process.getuid?.();
  return info.isFile() && (uid === undefined || info.uid === uid) && (info.mode & 0o022) === 0;
}

function sessionFile(env: Record<string, string | undefined>, sessionId: string): string {
  // Session ids are UUIDs; anything else is reduced to a safe file name.
  return path.join(stateDir(env), 'claude-sessions', `${sessionId.replace(/[^A-Za-z0-9_-]/g, '_')}.json`);
}

export async function resolveBinding(input: { session_id?: string; cwd?: string }, env: Record<string, string | undefined> = process.env): Promise<RoomBinding | null> {
  if (input.session_id) {
    const saved = await readBinding(sessionFile(env, input.session_id));
    if (saved) return saved;
  }
  return configuredBinding(input, env);
}

/** From the environment or the project file (not the session state). */
export async function configuredBinding(input: { cwd?: string }, env: Record<string, string | undefined> = process.env): Promise<RoomBinding | null> {
  if (env.CHATROOM_TOKEN && env.CHATROOM_ROOM_ID) {
    return { url: env.CHATROOM_URL || 'http://127.0.0.1:3000', token: env.CHATROOM_TOKEN, room_id: env.CHATROOM_ROOM_ID, source: 'environment' };
  }
  const dir = input.cwd || env.CLAUDE_PROJECT_DIR || process.cwd();
  const file = findProjectFile(dir);
  return file ? readBinding(file) : null;
}

export async function saveSessionBinding(env: Record<string, string | undefined>, sessionId: string, binding: RoomBinding): Promise<string> {
  const file = sessionFile(env, sessionId);
  await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  const { url, token, room_id } = binding;
  await writeFile(file, `${JSON.stringify({ url, token, room_id, saved_at: new Date().toISOString() }, null, 2)}\n`, { mode: 0o600 });
  return file;
}

export async function forgetSession(env: Record<string, string | undefined>, sessionId: string): Promise<void> {
  await rm(sessionFile(env, sessionId), { force: true });
}
