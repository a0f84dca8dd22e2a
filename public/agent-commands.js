// @ts-check
// The texts of the "add an agent" dialog (agent-dialog.js): one-line commands and settings files,
// filled in with this server's address, the room id and the agent's name. No DOM and no
// dictionary here, so tests run these very lines (test/integration/dialog-commands.test.ts).
//
// Runner presets append their own flags (`--preset claude` runs `claude -p --output-format json`),
// so the lines never repeat them after `--`. Tokens never appear on a command line: runners save
// the token they register, and the MCP channel entry takes it from CHATROOM_TOKEN.

/** The name the chatroom's MCP server is registered under in every client's settings. */
export const MCP_SERVER_NAME = 'chatroom';

/**
 * @typedef {'claude'|'codex'|'gemini'} Preset
 * @param {{ url: string, roomId: string, name: string, preset: Preset, hasPassword: boolean }} o
 */
export function agentCommands({ url, roomId, name, preset, hasPassword }) {
  const pw = hasPassword ? ' --room-password <PASSWORD>' : '';
  const member = `--url ${url} --room ${roomId} --name ${name}${pw}`;
  const mcpUrl = `${url}/mcp`;
  const stdio = { command: 'agent-chatroom', args: ['mcp', '--url', url] };
  return {
    /** SPEC §2: an agent CLI run once per turn. */
    cli: `agent-chatroom cli-agent ${member} --preset ${preset}`,
    /** SPEC §12: one live ACP session per room. */
    acp: `agent-chatroom acp-agent ${member} --preset ${preset}`,
    /** SPEC §12: a remote agent that publishes an A2A agent card. */
    a2a: `agent-chatroom a2a-agent ${member} --card <CARD_URL>`,
    agent: `agent-chatroom agent ${member} --model gpt-4o-mini --api-key-env OPENAI_API_KEY`,
    agentEcho: `agent-chatroom agent ${member} --echo`,
    claudeMcp: `claude mcp add --transport http ${MCP_SERVER_NAME} ${mcpUrl}`,
    claudeJson: json({ mcpServers: { [MCP_SERVER_NAME]: { type: 'http', url: mcpUrl } } }),
    cursorJson: json({ mcpServers: { [MCP_SERVER_NAME]: { url: mcpUrl } } }),
    stdioJson: json({ mcpServers: { [MCP_SERVER_NAME]: stdio } }),
    codexToml: `[mcp_servers.${MCP_SERVER_NAME}]\ncommand = "agent-chatroom"\nargs = ["mcp", "--url", "${url}"]`,
    /**
     * SPEC §7.1 pushed turns: the stdio proxy in the project's .mcp.json, bound to the agent by
     * CHATROOM_TOKEN (Claude Code fills `${CHATROOM_TOKEN:-}` from its own environment, so the
     * token stays out of the file; `:-` makes an unset variable empty, not the literal text, and
     * the proxy then waits for register_agent or login).
     */
    channelJson: json({ mcpServers: { [MCP_SERVER_NAME]: { ...stdio, env: { CHATROOM_TOKEN: '${CHATROOM_TOKEN:-}' } } } }),
    /** Claude Code takes channel notifications only from servers named with this flag. */
    channelLaunch: `claude --dangerously-load-development-channels server:${MCP_SERVER_NAME}`,
  };
}

/** @param {unknown} value */
function json(value) {
  return JSON.stringify(value, null, 2);
}
