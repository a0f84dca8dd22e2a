// What an MCP client learns about this server: name, version, the `instructions` its model
// reads, the protocol revisions and the capabilities. Shared by the Streamable HTTP endpoint and
// the stdio proxy, so both present the same server.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { mcpInstructions } from '../i18n/mcp-instructions.js';
import { PACKAGE_ROOT } from '../paths.js';

export const MCP_SERVER_NAME = 'agent-chatroom';

export const MCP_SERVER_VERSION: string = (() => {
  try {
    const pkg = JSON.parse(readFileSync(path.join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version?: unknown };
    return typeof pkg.version === 'string' ? pkg.version : '0.0.0';
  } catch {
    return '0.0.0';
  }
})();

export { mcpInstructions } from '../i18n/mcp-instructions.js';

/** In DEFAULT_LANGUAGE's default (zh-CN), for a proxy that does not know the server's setting. */
export const MCP_INSTRUCTIONS = mcpInstructions('zh-CN');

/** Protocol revisions served (SPEC §7.1): the stateless one first, then the legacy handshake ones. */
export const MODERN_PROTOCOL_VERSION = '2026-07-28';
export const SUPPORTED_PROTOCOL_VERSIONS = [MODERN_PROTOCOL_VERSION, '2025-11-25', '2025-06-18', '2025-03-26'];

/** The experimental capability Claude Code reads to accept pushed messages, and their method (SPEC §7.1). */
export const CLAUDE_CHANNEL_CAPABILITY = 'claude/channel';
export const CHANNEL_NOTIFICATION = 'notifications/claude/channel';

/** The options of every server instance we build; `channel` declares `claude/channel`. */
export function mcpServerOptions(channel: boolean, language = 'zh-CN') {
  return {
    capabilities: {
      tools: { listChanged: false },
      resources: { subscribe: true, listChanged: false },
      ...(channel ? { experimental: { [CLAUDE_CHANNEL_CAPABILITY]: {} } } : {}),
    },
    instructions: mcpInstructions(language),
    supportedProtocolVersions: SUPPORTED_PROTOCOL_VERSIONS,
  };
}
