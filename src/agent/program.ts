// The program a runner starts on each turn (`cli-agent`, and the ACP runner's agent), checked
// once at start: a CLI that is not installed is one line naming what to install, before the agent
// registers or joins, instead of "ready" followed by a skip on every turn (`spawn … ENOENT`).
import path from 'node:path';
import which from 'which';
import { StartError } from './connect.js';

export interface ProgramCheck {
  /** What to install when the program is missing, e.g. "Claude Code (npm install -g @anthropic-ai/claude-code)". */
  install?: string;
  /** The directory the program will run in: a relative path is found from there, as spawn does. */
  cwd?: string;
  /** The PATH searched (default: this process's). */
  pathEnv?: string;
}

/**
 * The absolute path `command` runs as: a name is looked up on PATH, a path (with a slash) must
 * be an executable file. Throws a StartError naming the program and what to install.
 */
export function requireProgram(command: string, check: ProgramCheck = {}): string {
  const pathEnv = check.pathEnv ?? process.env.PATH ?? '';
  const isPath = command.includes('/') || command.includes(path.sep);
  const target = isPath ? path.resolve(check.cwd ?? process.cwd(), command) : command;
  const found = which.sync(target, { nothrow: true, path: pathEnv });
  if (found) return found;
  const how = check.install ? `: install ${check.install}` : '';
  if (isPath) throw new StartError(`Cannot run ${target}: not an executable file${how}`);
  throw new StartError(`Cannot find the program "${command}" on PATH${how}${check.install ? ', or give its path after "--"' : ''}`);
}
