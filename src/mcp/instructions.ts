// What an MCP client shows its model about this server (the `instructions` field), and the
// server's name and version. Shared by the Streamable HTTP endpoint and the stdio proxy.
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
