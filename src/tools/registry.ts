// One tool registry, served by REST, WebSocket and MCP alike: each tool is a name, a
// description, an input schema and a handler that takes the caller's context.
import { z } from 'zod';
import { AppError } from '../errors.js';
import { localizeError } from '../i18n/errors.js';
import { schemaMessage, schemaTexts } from '../i18n/schema-errors.js';
import { callerLang, type Lang } from '../i18n/language.js';
import { NOT_A_MESSAGE_ID, NOT_A_ROOM_ID } from '../protocol/schemas.js';
import type { Caller } from '../types.js';

export type Transport = 'rest' | 'ws' | 'mcp' | 'a2a' | 'internal';

export interface CallOptions {
  /** Bearer token (REST, MCP header) or the socket's authenticated token. */
  token?: string | null;
  /** Already-authenticated caller (WebSocket sessions, MCP sessions bound by register/login). */
  caller?: Caller | null;
  transport: Transport;
  /** Client address, for per-address rate limits. */
  address?: string | null;
  /**
   * The transport already counted this call against its address (`chargeAddress`), before it
   * looked up a token itself (MCP's header): the registry does not count it twice.
   */
  addressCharged?: true;
  requestId?: string;
  signal?: AbortSignal;
  onProgress?: (elapsedMs: number, totalMs: number) => void;
  /**
   * The raw `Accept-Language` header of the request (REST, the WebSocket's upgrade request, MCP
   * over HTTP), or null: error messages are written in the language it asks for (SPEC §7).
   */
  acceptLanguage?: string | null;
}

export interface ToolContext extends Omit<CallOptions, 'caller' | 'token'> {
  caller: Caller | null;
}

export interface AuthedContext extends ToolContext {
  caller: Caller;
}

interface ToolBase<S extends z.ZodType> {
  name: string;
  description: string;
  input: S;
  /**
   * The call blocks until something happens (wait_for_turn): transports give it an abort signal
   * that fires when the client goes away. Other calls get none (it costs on every call).
   */
  waits?: true;
  /**
   * Runs before the arguments are checked, so a call refused for its arguments pays too
   * (registrations: SPEC §10 counts successful or refused ones per address).
   */
  admit?: (ctx: ToolContext) => Promise<void>;
}

export type ToolDefinition<S extends z.ZodType = z.ZodType> =
  | (ToolBase<S> & { public?: false; handler: (args: z.infer<S>, ctx: AuthedContext) => Promise<unknown> | unknown })
  /** Callable without a token (register, login). */
  | (ToolBase<S> & { public: true; handler: (args: z.infer<S>, ctx: ToolContext) => Promise<unknown> | unknown });

/** A tool with its argument type erased: sound because `call` parses with `input` first. */
export type RegisteredTool = ToolDefinition<z.ZodType>;

export function defineTool<S extends z.ZodType>(def: ToolDefinition<S>): RegisteredTool {
  return def as unknown as RegisteredTool;
}

export interface RegistryHooks {
  authenticate(token: string): Caller | undefined;
  /** Brings the token's participant up to date when other nodes share the store (no-op otherwise). */
  prime?(token: string): Promise<void>;
  /** Any authenticated call counts as activity (presence). */
  touched(caller: Caller): void;
  /**
   * An authenticated call has ended (answered or failed): bookkeeping that must not delay the
   * call's own writes goes here (the stored last_active).
   */
  settled?(caller: Caller): void;
  /** Throws `rate_limited` when the client address is over its limit (counted for every call). */
  limitAddress(address: string | null): Promise<void>;
  /** Throws `rate_limited` when the (authenticated) caller is over its limit. */
  limitCaller(caller: Caller): Promise<void>;
  /** Told the outcome of every call (metrics, logs): `ok` or the error code. */
  observe?(call: CallRecord): void;
  /** Told every successful call with its parsed arguments and answer (audit lines, SPEC §10). */
  succeeded?(tool: string, args: unknown, answer: unknown, ctx: ToolContext): void;
  /** DEFAULT_LANGUAGE: errors' language when neither the request nor a room names one. */
  defaultLanguage?: string;
  /** The language of a room (undefined when there is no such room), for errors of calls about it. */
  roomLanguage?(roomId: string): Promise<string | undefined>;
}

export interface CallRecord {
  tool: string;
  transport: Transport;
  outcome: string;
  ms: number;
  requestId?: string | undefined;
  callerId?: string | undefined;
}

export class ToolRegistry {
  private readonly tools = new Map<string, RegisteredTool>();

  constructor(private readonly hooks: RegistryHooks) {}

  /** True for a tool that blocks and takes an abort signal (ToolBase.waits). */
  waits(name: string): boolean {
    return this.tools.get(name)?.waits === true;
  }

  register(...defs: RegisteredTool[]): void {
    for (const def of defs) {
      if (this.tools.has(def.name)) throw new Error(`tool ${def.name} registered twice`);
      this.tools.set(def.name, def);
    }
  }

  list(): readonly RegisteredTool[] {
    return [...this.tools.values()];
  }

  get(name: string): RegisteredTool | undefined {
    return this.tools.get(name);
  }

  /** Resolves the caller; throws `unauthorized` for an unknown token. */
  resolveCaller(options: Pick<CallOptions, 'token' | 'caller'>): Caller | null {
    const caller = this.knownCaller(options);
    if (!caller && options.token) throw new AppError('unauthorized', 'Unknown or revoked token');
    return caller;
  }

  /** The caller when the token is known, else null (no error). */
  private knownCaller(options: Pick<CallOptions, 'token' | 'caller'>): Caller | null {
    if (options.caller) return options.caller;
    return options.token ? (this.hooks.authenticate(options.token) ?? null) : null;
  }

  /**
   * Counts a call against the client address, like `call` does first, for a transport that
   * must do it before its own token lookup (throws `rate_limited` over the limit); it then
   * passes `addressCharged` to `call`.
   */
  chargeAddress(address: string | null): Promise<void> {
    return this.hooks.limitAddress(address);
  }

  async call(name: string, rawArgs: unknown, options: CallOptions): Promise<unknown> {
    const started = performance.now();
    const record = (outcome: string) =>
      this.hooks.observe?.({
        tool: this.tools.has(name) ? name : 'unknown',
        transport: options.transport,
        outcome,
        ms: Math.round((performance.now() - started) * 10) / 10,
        requestId: options.requestId,
        callerId: options.caller?.id,
      });
    try {
      const result = await this.dispatch(name, rawArgs, options);
      record('ok');
      return result;
    } catch (err) {
      record(err instanceof AppError ? err.code : 'internal_error');
      throw err instanceof AppError ? localizeError(err, await this.errorLanguage(rawArgs, options)) : err;
    }
  }

  /**
   * The language of a call's error message (SPEC §7): the request's Accept-Language when it asks
   * for zh or en, else the language of the room the call is about, else DEFAULT_LANGUAGE.
   */
  async errorLanguage(rawArgs: unknown, options: Pick<CallOptions, 'acceptLanguage'>): Promise<Lang> {
    const roomId = typeof rawArgs === 'object' && rawArgs !== null ? (rawArgs as { room_id?: unknown }).room_id : undefined;
    const roomLanguage = typeof roomId === 'string' && roomId.length <= 200 ? await this.hooks.roomLanguage?.(roomId).catch(() => undefined) : undefined;
    return callerLang(options.acceptLanguage, roomLanguage, this.hooks.defaultLanguage ?? 'zh-CN');
  }

  private async dispatch(name: string, rawArgs: unknown, options: CallOptions): Promise<unknown> {
    // The address pays for every call, before the name or token is checked: probing for tools
    // or guessing tokens is rate limited like any other call.
    if (!options.addressCharged) await this.hooks.limitAddress(options.address ?? null);
    const tool = this.tools.get(name);
    if (!tool) throw new AppError('unknown_tool', `No tool named "${name.slice(0, 64)}"`);
    if (options.token && !options.caller) await this.hooks.prime?.(options.token);
    // A tool callable without a token (register, login) ignores a token it does not know: a
    // client still sending a rotated token can log in again instead of being refused.
    const caller = tool.public ? this.knownCaller(options) : this.resolveCaller(options);
    if (caller) await this.hooks.limitCaller(caller);
    if (!tool.public && !caller) throw new AppError('unauthorized', 'This tool needs a token (Authorization: Bearer <token>)');
    const ctx: ToolContext = { ...options, caller };
    if (tool.admit) await tool.admit(ctx);
    const parsed = tool.input.safeParse(rawArgs ?? {});
    if (!parsed.success) {
      const error = validationError(parsed.error);
      if (error.code === 'validation_error') error.texts = schemaTexts(tool.input, rawArgs ?? {}, parsed.error);
      throw error;
    }
    if (caller) this.hooks.touched(caller);
    try {
      const answer = await (tool.public ? tool.handler(parsed.data, ctx) : tool.handler(parsed.data, ctx as AuthedContext));
      this.hooks.succeeded?.(name, parsed.data, answer, ctx);
      return answer;
    } finally {
      if (caller) this.hooks.settled?.(caller);
    }
  }
}

/**
 * The error for arguments that failed their schema: `validation_error`, except when the only
 * fault is an id that cannot exist (a string that is no room or message id): that id names
 * nothing, so the answer is the same as for a well-formed unknown id.
 */
export function validationError(error: z.ZodError): AppError {
  const issues = error.issues.map((issue) => ({
    path: issue.path.join('.'),
    message: issue.message,
  }));
  if (issues.length > 0 && issues.every((issue) => issue.message === NOT_A_ROOM_ID)) return new AppError('room_not_found', 'No room with this id');
  if (issues.length > 0 && issues.every((issue) => issue.message === NOT_A_MESSAGE_ID)) return new AppError('message_not_found', 'No message with this id');
  return new AppError('validation_error', schemaMessage(error, 'en'), { issues });
}
