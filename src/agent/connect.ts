// Getting an agent into a room without surprises, shared by `agent` and `cli-agent`:
// 1. the server is checked first (GET /api/v1/health) so a wrong --url is one clear line;
// 2. a token comes from --token, else from the state file, else from register_agent — and a
//    token the agent registered is written to the state file and printed at once, so a retry
//    after a later failure (a mistyped --room) reuses the name instead of hitting name_taken;
// 3. joining names the room and the server when the room does not exist.
// (A room cannot be checked before registering: every room tool needs a token.)
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ChatroomClient } from '../client/index.js';
import { ChatroomError, restCall } from '../client/rest.js';
import type { Participant } from '../types.js';

/** A one-line error meant for the person starting the agent. */
export class StartError extends Error {
  override name = 'StartError';
}

/** Why a fetch failed, in words: "connection refused", "host not found", … */
export function networkReason(err: unknown): string {
  const cause = (err as { cause?: { code?: string; message?: string } })?.cause;
  const code = cause?.code ?? (err as { code?: string })?.code;
  switch (code) {
    case 'ECONNREFUSED':
      return 'connection refused';
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return 'host not found';
    case 'ECONNRESET':
      return 'connection reset';
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return 'host unreachable';
    case 'UND_ERR_CONNECT_TIMEOUT':
    case 'ETIMEDOUT':
      return 'connection timed out';
    default:
      break;
  }
  if ((err as Error)?.name === 'TimeoutError' || (err as Error)?.name === 'AbortError') return 'no answer within 5 s';
  return cause?.message ?? (err as Error)?.message ?? String(err);
}

/** http(s)://host:port without a trailing slash; a bad URL is a StartError naming the flag. */
export function serverBase(url: string, flag = '--url'): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new StartError(`${flag}: "${url}" is not a URL like http://127.0.0.1:3000`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new StartError(`${flag}: "${url}" must start with http:// or https://`);
  return `${parsed.protocol}//${parsed.host}`;
}

/** Checks that an Agent Chatroom server answers at `url`. */
export async function checkServer(url: string): Promise<void> {
  const base = serverBase(url);
  let res: Response;
  try {
    res = await fetch(`${base}/api/v1/health`, { signal: AbortSignal.timeout(5000) });
  } catch (err) {
    throw new StartError(`Cannot reach the server at ${base} (${networkReason(err)})`);
  }
  const body = (await res.json().catch(() => null)) as { ok?: boolean } | null;
  if (!res.ok || body?.ok !== true) {
    throw new StartError(`The server at ${base} is not an Agent Chatroom server (GET /api/v1/health answered HTTP ${res.status})`);
  }
}

// ── saved tokens ──

/** Where agents keep the tokens they registered: $CHATROOM_STATE_DIR, else ~/.config/agent-chatroom. */
export function stateDir(env: Record<string, string | undefined> = process.env): string {
  if (env.CHATROOM_STATE_DIR) return path.resolve(env.CHATROOM_STATE_DIR);
  const config = env.XDG_CONFIG_HOME || path.join(os.homedir(), '.config');
  return path.join(config, 'agent-chatroom');
}

interface TokenFile {
  /** `${server base}|${lowercased name}` → token. */
  agents: Record<string, string>;
}

function tokenKey(url: string, name: string): string {
  return `${serverBase(url)}|${name.normalize('NFC').toLowerCase()}`;
}

async function readTokens(dir: string): Promise<TokenFile> {
  try {
    const parsed = JSON.parse(await readFile(path.join(dir, 'agents.json'), 'utf8')) as Partial<TokenFile>;
    return { agents: parsed.agents && typeof parsed.agents === 'object' ? parsed.agents : {} };
  } catch {
    return { agents: {} };
  }
}

export async function savedToken(dir: string, url: string, name: string): Promise<string | null> {
  return (await readTokens(dir)).agents[tokenKey(url, name)] ?? null;
}

/** Stores (or with null, forgets) an agent's token; the file is readable by its owner only. */
export async function saveToken(dir: string, url: string, name: string, token: string | null): Promise<string> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const file = await readTokens(dir);
  if (token) file.agents[tokenKey(url, name)] = token;
  else delete file.agents[tokenKey(url, name)];
  const target = path.join(dir, 'agents.json');
  const temp = `${target}.${process.pid}.tmp`;
  await writeFile(temp, `${JSON.stringify(file, null, 2)}\n`, { mode: 0o600 });
  await rename(temp, target);
  return target;
}

export interface Identity {
  token: string;
  participant: Participant;
  /** Where the token came from. */
  source: 'flag' | 'state' | 'registered';
}

/**
 * The agent's token: `token` (checked with login), else the saved one for (url, name), else a new
 * registration, saved and reported through `log` before anything else can fail.
 */
export async function obtainIdentity(options: {
  url: string;
  name?: string;
  token?: string;
  introduce?: string;
  stateDir: string;
  log: (line: string) => void;
}): Promise<Identity> {
  const base = serverBase(options.url);
  const login = async (token: string) => (await restCall<{ participant: Participant }>(base, 'login', { token })).participant;
  if (options.token) {
    try {
      return { token: options.token, participant: await login(options.token), source: 'flag' };
    } catch (err) {
      if (err instanceof ChatroomError && err.code === 'unauthorized') throw new StartError(`The server at ${base} does not know the token given with --token`);
      throw err;
    }
  }
  if (!options.name) throw new StartError('--name (to register) or --token is required');
  const saved = await savedToken(options.stateDir, base, options.name);
  if (saved) {
    try {
      const participant = await login(saved);
      options.log(`using the saved token of "${participant.name}" (${path.join(options.stateDir, 'agents.json')})`);
      return { token: saved, participant, source: 'state' };
    } catch (err) {
      if (!(err instanceof ChatroomError && err.code === 'unauthorized')) throw err;
      options.log(`the saved token of "${options.name}" is no longer valid; registering again`);
      await saveToken(options.stateDir, base, options.name, null);
    }
  }
  let registered: { token: string; agent: Participant };
  try {
    registered = await restCall(base, 'register_agent', { name: options.name, ...(options.introduce ? { introduce: options.introduce } : {}) });
  } catch (err) {
    if (err instanceof ChatroomError && err.code === 'name_taken') {
      throw new StartError(`The name "${options.name}" is taken on ${base}. Pass its --token (or CHATROOM_TOKEN), or pick another --name.`);
    }
    if (err instanceof ChatroomError && err.code === 'validation_error') throw new StartError(`--name "${options.name}": ${err.message}`);
    throw err;
  }
  let where = '';
  try {
    where = ` (saved in ${await saveToken(options.stateDir, base, options.name, registered.token)})`;
  } catch (err) {
    where = ` (could not save it: ${(err as Error).message})`;
  }
  options.log(`registered "${registered.agent.name}"; its token: ${registered.token}${where}. A restart reuses it; elsewhere pass --token.`);
  return { token: registered.token, participant: registered.agent, source: 'registered' };
}

/** Joins a room (joining again is harmless); names the room and server when it does not exist. */
export async function joinRoom(base: string, token: string, roomId: string, password?: string): Promise<{ room_id: string; room_name: string }> {
  try {
    const { room } = await restCall<{ room: { room_id: string; room_name: string } }>(
      base,
      'join_room',
      { room_id: roomId, ...(password ? { password } : {}) },
      token,
    );
    return room;
  } catch (err) {
    if (err instanceof ChatroomError) {
      // A malformed id (validation_error) is as absent as an unknown one.
      if (err.code === 'room_not_found' || err.code === 'not_found' || err.code === 'validation_error') throw new StartError(`There is no room "${roomId}" on ${serverBase(base)} (check --room; the room id is in the page's address)`);
      if (err.code === 'wrong_password') throw new StartError(`Room "${roomId}" needs its password: pass --room-password`);
      throw new StartError(`Cannot join room "${roomId}" on ${serverBase(base)}: ${err.code}: ${err.message}`);
    }
    throw err;
  }
}

export interface SignInOptions {
  url: string;
  name?: string;
  token?: string;
  introduce?: string;
  roomPassword?: string;
  stateDir: string;
  log: (line: string) => void;
}

/** The agent's identity (obtainIdentity) and the rooms it joined with it, in the order given. */
export async function signInAndJoin(
  options: SignInOptions,
  roomIds: readonly string[],
): Promise<{ base: string; identity: Identity; rooms: Array<{ room_id: string; room_name: string }> }> {
  const base = serverBase(options.url);
  const identity = await obtainIdentity({
    url: base,
    stateDir: options.stateDir,
    log: options.log,
    ...(options.name ? { name: options.name } : {}),
    ...(options.token ? { token: options.token } : {}),
    ...(options.introduce ? { introduce: options.introduce } : {}),
  });
  const rooms: Array<{ room_id: string; room_name: string }> = [];
  for (const roomId of roomIds) rooms.push(await joinRoom(base, identity.token, roomId, options.roomPassword));
  return { base, identity, rooms };
}

/** The agent's client (not yet connected): its warnings and connection changes go to `log`. */
export function agentClient(
  base: string,
  token: string,
  options: { marginMs?: number; turnTimeoutReason: string; log: (line: string) => void },
): ChatroomClient {
  const { log } = options;
  const client = new ChatroomClient({
    url: base,
    token,
    ...(options.marginMs !== undefined ? { turnMarginMs: options.marginMs } : {}),
    turnTimeoutReason: options.turnTimeoutReason,
    logger: (level, message, details) => {
      if (level !== 'debug') log(`${level}: ${message}${details ? ` ${JSON.stringify(details)}` : ''}`);
    },
  });
  client.onStatus((status, error) => log(`connection ${status}${error ? ` (${error.message})` : ''}`));
  return client;
}
