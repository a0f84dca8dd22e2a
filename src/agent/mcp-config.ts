// The room's MCP server for an agent program a runner starts (`cli-agent --mcp`, `acp-agent
// --mcp`): this package's stdio proxy (`agent-chatroom mcp --config FILE`) reading the URL and
// token from a private file, so the token is on no command line, in no environment and in no
// config of the agent program (SPEC §10).
import { mkdtemp, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { serverBase } from './connect.js';

export interface RoomMcpServer {
  /** The private directory holding the files (remove it when the runner stops). */
  dir: string;
  /** A JSON file in Claude Code's `--mcp-config` format (servers under "mcpServers"). */
  configPath: string;
  /** Command and arguments that start the proxy. */
  command: string;
  args: string[];
}

/** The command that starts this package's CLI, however this process was started. */
function selfCommand(): { command: string; args: string[] } {
  return { command: process.execPath, args: [...process.execArgv, process.argv[1]!] };
}

export async function writeMcpConfig(url: string, token: string): Promise<RoomMcpServer> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'chatroom-mcp-'));
  const self = selfCommand();
  const credentials = path.join(dir, 'chatroom.json');
  await writeFile(credentials, JSON.stringify({ url: serverBase(url), token }), { mode: 0o600 });
  const args = [...self.args, 'mcp', '--config', credentials];
  const configPath = path.join(dir, 'mcp.json');
  await writeFile(configPath, JSON.stringify({ mcpServers: { chatroom: { command: self.command, args } } }, null, 2), { mode: 0o600 });
  return { dir, configPath, command: self.command, args };
}
