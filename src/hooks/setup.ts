// `hook claude-init`: puts the Claude Code project in the current directory into a room with one
// command. It registers the agent (or reuses --token / the saved token), joins the room, writes
// `.agent-chatroom.json` (url, token, room_id; owner-only, added to .gitignore), adds the
// SessionStart and Stop hooks to `.claude/settings.local.json` and the room's MCP server to
// `.mcp.json`. Existing settings are kept; running it again replaces only our entries.
import { existsSync } from 'node:fs';
import { appendFile, mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { checkServer, signInAndJoin } from '../agent/connect.js';
import { PROJECT_FILE } from './config.js';

export interface InitOptions {
  url: string;
  room: string;
  name?: string;
  token?: string;
  introduce?: string;
  roomPassword?: string;
  dir: string;
  stateDir: string;
  /** Longest wait of the Stop hook for a turn, seconds. */
  maxWaitS: number;
  log: (line: string) => void;
}

/** How hooks and the MCP server start this package: node + this CLI, absolute paths. */
export function selfInvocation(): string[] {
  return [process.execPath, ...process.execArgv, process.argv[1]!];
}

function shellQuote(arg: string): string {
  return /^[A-Za-z0-9_\-./:=@]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`;
}

async function readJson(file: string): Promise<Record<string, any>> {
  if (!existsSync(file)) return {};
  const text = await readFile(file, 'utf8');
  try {
    const parsed = JSON.parse(text) as unknown;
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) return parsed as Record<string, any>;
  } catch {
    // fall through
  }
  throw new Error(`${file} is not a JSON object; fix or remove it and run again`);
}

const OUR_HOOK = /\bhook claude-(stop|session-start)\b/;

/** Adds our command to `hooks[event]`, replacing an earlier one of ours. */
function setHook(settings: Record<string, any>, event: string, command: string, timeout: number): void {
  settings.hooks ??= {};
  const groups: Array<{ matcher?: string; hooks?: Array<{ type?: string; command?: string }> }> = Array.isArray(settings.hooks[event]) ? settings.hooks[event] : [];
  const kept = groups
    .map((g) => ({ ...g, hooks: (g.hooks ?? []).filter((h) => !(typeof h.command === 'string' && OUR_HOOK.test(h.command))) }))
    .filter((g) => g.hooks.length > 0);
  kept.push({ hooks: [{ type: 'command', command, timeout } as { type: string; command: string }] });
  settings.hooks[event] = kept;
}

export async function claudeInit(options: InitOptions): Promise<{ projectFile: string; settingsFile: string; mcpFile: string; name: string }> {
  await checkServer(options.url);
  const { base, identity, rooms } = await signInAndJoin(options, [options.room]);
  const room = rooms[0]!;

  const projectFile = path.join(options.dir, PROJECT_FILE);
  await writeFile(projectFile, `${JSON.stringify({ url: base, room_id: room.room_id, name: identity.participant.name, token: identity.token }, null, 2)}\n`, { mode: 0o600 });
  const gitignore = path.join(options.dir, '.gitignore');
  // The token file must never be committed: .gitignore names it, created when there is none.
  if (existsSync(gitignore)) {
    const text = await readFile(gitignore, 'utf8');
    if (!text.split(/\r?\n/).includes(PROJECT_FILE)) await appendFile(gitignore, `${text.endsWith('\n') || text === '' ? '' : '\n'}${PROJECT_FILE}\n`);
  } else {
    await writeFile(gitignore, `${PROJECT_FILE}\n`, { flag: 'wx' });
  }

  const self = selfInvocation().map(shellQuote).join(' ');
  const settingsFile = path.join(options.dir, '.claude', 'settings.local.json');
  await mkdir(path.dirname(settingsFile), { recursive: true });
  const settings = await readJson(settingsFile);
  setHook(settings, 'SessionStart', `${self} hook claude-session-start`, 30);
  // The hook's own limit stays under Claude Code's timeout for it.
  setHook(settings, 'Stop', `${self} hook claude-stop --max-wait ${options.maxWaitS}`, options.maxWaitS + 60);
  await writeFile(settingsFile, `${JSON.stringify(settings, null, 2)}\n`);

  const mcpFile = path.join(options.dir, '.mcp.json');
  const mcp = await readJson(mcpFile);
  mcp.mcpServers ??= {};
  const [command, ...args] = selfInvocation();
  mcp.mcpServers.chatroom = { command, args: [...args, 'mcp', '--config', projectFile] };
  await writeFile(mcpFile, `${JSON.stringify(mcp, null, 2)}\n`);
  return { projectFile, settingsFile, mcpFile, name: identity.participant.name };
}
