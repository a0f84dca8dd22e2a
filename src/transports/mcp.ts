// MCP (Streamable HTTP) at /mcp. Placeholder until the endpoint lands.
import type { MountFactory } from './mount.js';

export const mcpMount: MountFactory = () => ({});
