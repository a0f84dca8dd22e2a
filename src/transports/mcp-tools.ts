// The tool registry as MCP tools, shared by both protocol eras (SPEC §7.1): same names,
// descriptions and arguments as REST and WebSocket, plus the optional `token` argument on every
// tool that needs a caller (SPEC §3), for clients that cannot set the Authorization header.
import type { CallToolResult, Tool } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { toWireError } from '../errors.js';
import type { RegisteredTool, ToolRegistry } from '../tools/registry.js';

/** What the `token` argument's schema and every authed tool's description say about it. */
export const TOKEN_ARGUMENT_NOTE =
  'Optional token: your token, for clients that cannot send the header "Authorization: Bearer <token>" (used only when the request has neither that header nor an identified session; never logged).';

const toolCache = new WeakMap<ToolRegistry, Tool[]>();

/** The registry as MCP tools: same names, descriptions and (JSON Schema) arguments. */
export function mcpTools(registry: ToolRegistry): Tool[] {
  let tools = toolCache.get(registry);
  if (!tools) {
    tools = registry.list().map(toMcpTool);
    toolCache.set(registry, tools);
  }
  return tools;
}

function toMcpTool(tool: RegisteredTool): Tool {
  const schema = z.toJSONSchema(tool.input, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
  delete schema.$schema;
  if (tool.public) {
    return { name: tool.name, description: tool.description, inputSchema: { ...schema, type: 'object' } as Tool['inputSchema'] };
  }
  const properties = { ...((schema.properties as Record<string, unknown> | undefined) ?? {}) };
  properties.token = { type: 'string', minLength: 1, maxLength: 512, description: TOKEN_ARGUMENT_NOTE };
  return {
    name: tool.name,
    description: `${tool.description}\n${TOKEN_ARGUMENT_NOTE}`,
    inputSchema: { ...schema, type: 'object', properties } as Tool['inputSchema'],
  };
}

/**
 * Splits the MCP-only `token` argument off an authed tool's arguments (the registry's schemas
 * never see it, so it can never be echoed in a validation error). A public tool keeps its own
 * `token` argument (`login {token}`).
 */
export function takeTokenArgument(tool: RegisteredTool | undefined, args: Record<string, unknown>): { args: Record<string, unknown>; token: string | null } {
  if (!tool || tool.public || !('token' in args)) return { args, token: null };
  const { token, ...rest } = args;
  return { args: rest, token: typeof token === 'string' && token.trim() !== '' ? token.trim() : null };
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A success: the data as JSON text and as structured content. */
export function successResult(data: unknown): CallToolResult {
  const structured = isPlainObject(data) ? data : { result: data ?? null };
  return { content: [{ type: 'text', text: JSON.stringify(data ?? null) }], structuredContent: structured };
}

/** An error of the registry as a tool result (`isError: true`), code in the text and the structure. */
export function errorResult(err: unknown): CallToolResult {
  const error = toWireError(err);
  const body = { ok: false, error };
  return { isError: true, content: [{ type: 'text', text: JSON.stringify(body) }], structuredContent: body };
}

/** The token a tool's answer carries (register_*, login, rotate_token), or null. */
export function tokenInResult(data: unknown): string | null {
  return isPlainObject(data) && typeof data.token === 'string' ? data.token : null;
}
