// The start of every agent command (`agent`, `cli-agent`, `hook claude-init`): the flags they
// share, parsing or printing the usage, and running until a signal.
import { statSync } from 'node:fs';
import path from 'node:path';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import type { ChatroomClient } from '../client/index.js';
import { warnTokenOnCommandLine } from './secrets.js';

/** The chat server when neither --url nor CHATROOM_URL names one. */
export const DEFAULT_SERVER_URL = 'http://127.0.0.1:3000';

/** Flags of every command that signs in to a chat server (node:util parseArgs options). */
export const SIGN_IN_FLAGS = {
  url: { type: 'string' },
  name: { type: 'string' },
  token: { type: 'string' },
  introduce: { type: 'string' },
  'room-password': { type: 'string' },
} as const;

/** Flags of both turn runners (`agent`, `cli-agent`): sign-in, rooms, history, deadline margin, help. */
export const RUNNER_FLAGS = {
  ...SIGN_IN_FLAGS,
  room: { type: 'string', multiple: true },
  history: { type: 'string' },
  'margin-ms': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** The rooms of --room (repeatable); throws when there is none. */
export function requiredRooms(room: string[] | undefined): string[] {
  if (!room?.length) throw new Error('--room <room_id> is required');
  return room;
}

/**
 * The sign-in options from those flags: the URL from --url, CHATROOM_URL or the default; the
 * token from --token or CHATROOM_TOKEN (--token warns: other local users can read it). Throws
 * when there is neither a name nor a token.
 */
export function signInOptions(
  values: { url?: string; name?: string; token?: string; introduce?: string; 'room-password'?: string },
  env: Record<string, string | undefined>,
): { url: string; name?: string; token?: string; introduce?: string; roomPassword?: string } {
  const token = values.token ?? env.CHATROOM_TOKEN;
  if (!token && !values.name) throw new Error('--name (to register) or --token is required');
  // Works, but other local users can read a command line (SPEC §10).
  warnTokenOnCommandLine(values.token);
  return {
    url: values.url ?? env.CHATROOM_URL ?? DEFAULT_SERVER_URL,
    ...(values.name ? { name: values.name } : {}),
    ...(token ? { token } : {}),
    ...(values.introduce ? { introduce: values.introduce } : {}),
    ...(values['room-password'] ? { roomPassword: values['room-password'] } : {}),
  };
}

/**
 * A number flag within [min, max], or undefined when absent; throws, naming what it must be
 * (`what`: 'number', 'number of seconds', or 'whole number', which also refuses fractions).
 */
export function numberFlag(flag: string, raw: string | undefined, min: number, max: number, what = 'number'): number | undefined {
  if (raw === undefined) return undefined;
  const n = Number(raw);
  if (!(what === 'whole number' ? Number.isInteger(n) : Number.isFinite(n)) || n < min || n > max) {
    throw new Error(`--${flag} must be a ${what} between ${min} and ${max}`);
  }
  return n;
}

type StrictFlags<O extends NonNullable<ParseArgsConfig['options']>> = ReturnType<
  typeof parseArgs<{ args: string[]; options: O; strict: true; allowPositionals: false }>
>['values'];

/** The flag values of `argv`; unknown flags and stray arguments throw. */
export function parseFlags<O extends NonNullable<ParseArgsConfig['options']>>(argv: string[], options: O): StrictFlags<O> {
  return parseArgs({ args: argv, options, strict: true, allowPositionals: false }).values;
}

/** Parsed options, or undefined after printing the usage for --help; exits 2 on bad flags. */
export function parseOrExit<T>(parse: (argv: string[]) => T | 'help', argv: string[], usage: string): T | undefined {
  let options: T | 'help';
  try {
    options = parse(argv);
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n\n${usage}\n`);
    process.exit(2);
  }
  if (options === 'help') {
    process.stdout.write(`${usage}\n`);
    return undefined;
  }
  return options;
}

/** Timestamped lines on stderr, tagged with the agent's name. */
export function stderrLog(tag: string): (line: string) => void {
  return (line) => process.stderr.write(`${new Date().toISOString()} [${tag}] ${line}\n`);
}

/**
 * Starts the agent and keeps the process until SIGINT/SIGTERM (then `stop`, exit 0; a second
 * signal while stopping exits at once) or until the connection closes for good (exit 1).
 * A failed start is one line on stderr and exit 1.
 */
export async function runUntilSignal<A extends { client: ChatroomClient }>(
  start: () => Promise<A>,
  stop: (agent: A, signal: NodeJS.Signals) => Promise<void>,
  log: (line: string) => void,
): Promise<void> {
  let agent: A;
  try {
    agent = await start();
  } catch (err) {
    process.stderr.write(`Cannot start the agent: ${(err as Error).message}\n`);
    process.exit(1);
  }
  // Ctrl-C disconnects; it never calls leave_room (the agent keeps its membership and its place).
  log('ready: waiting for turns (Ctrl-C stops the agent: it stays a member of its rooms, shown offline until it runs again)');
  const onSignal = (signal: NodeJS.Signals) => {
    log(`${signal}: stopping`);
    process.once(signal, () => process.exit(1));
    stop(agent, signal).then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once('SIGINT', () => onSignal('SIGINT'));
  process.once('SIGTERM', () => onSignal('SIGTERM'));
  agent.client.onStatus((status, error) => {
    if (status === 'closed' && error) {
      log(`stopped: ${error.message}`);
      process.exit(1);
    }
  });
}

/** A runner's own flags, and the program with its arguments after `--` (the CLI runners). */
export function splitCommand(argv: string[]): { own: string[]; command: string[] } {
  const dash = argv.indexOf('--');
  return { own: dash === -1 ? argv : argv.slice(0, dash), command: dash === -1 ? [] : argv.slice(dash + 1) };
}

/** `--preset`: one of `presets`' names, or null; without one, the command after `--` is needed. */
export function presetFlag<N extends string>(value: string | undefined, presets: Record<N, unknown>, command: readonly string[]): N | null {
  if (value !== undefined && !(value in presets)) throw new Error(`--preset must be one of ${Object.keys(presets).join(', ')}`);
  const preset = (value as N | undefined) ?? null;
  if (!preset && command.length === 0) throw new Error('give a --preset or the command after "--"');
  return preset;
}

/**
 * `--cwd`, checked now: a missing directory would otherwise fail every turn with spawn's ENOENT,
 * which names the program, not the directory.
 */
export function cwdFlag(value: string | undefined): void {
  if (value !== undefined && !statSync(value, { throwIfNoEntry: false })?.isDirectory()) {
    throw new Error(`--cwd ${path.resolve(value)} is not a directory`);
  }
}

/** Flags of the runners of another program (`cli-agent`, `acp-agent`), besides RUNNER_FLAGS. */
export const PROGRAM_RUNNER_FLAGS = {
  preset: { type: 'string' },
  mcp: { type: 'boolean' },
  cwd: { type: 'string' },
} as const;

/** What the runners of another program (`cli-agent`, `acp-agent`) share of their options. */
export interface ProgramRunnerOptions<P extends string> {
  url: string;
  rooms: string[];
  name?: string;
  token?: string;
  introduce?: string;
  roomPassword?: string;
  preset: P | null;
  /** The program and its arguments after `--`; empty: the preset's. */
  command: string[];
  /** Give the program the room's tools as an MCP server. */
  mcp: boolean;
  /** Longest answer posted (characters). */
  maxChars: number;
  /** Time kept before a turn's deadline (default: the client's). */
  marginMs?: number;
  /** Where a registered token is kept. */
  stateDir: string;
  log?: (line: string) => void;
}

/**
 * The shared options from the parsed flags of a program runner (RUNNER_FLAGS and
 * PROGRAM_RUNNER_FLAGS) and the command after `--`; throws on a bad flag (`--cwd` is checked
 * here, each runner resolves it its own way).
 */
export function programRunnerOptions<P extends string>(
  values: { room?: string[]; url?: string; name?: string; token?: string; introduce?: string; 'room-password'?: string; preset?: string; mcp?: boolean; cwd?: string; 'margin-ms'?: string },
  command: string[],
  presets: Record<P, unknown>,
  defaults: { maxChars: number; stateDir: string },
  env: Record<string, string | undefined>,
): Omit<ProgramRunnerOptions<P>, 'log'> {
  const rooms = requiredRooms(values.room);
  const signIn = signInOptions(values, env);
  const preset = presetFlag<P>(values.preset, presets, command);
  cwdFlag(values.cwd);
  const marginMs = numberFlag('margin-ms', values['margin-ms'], 0, 600_000, 'whole number');
  return {
    ...signIn,
    rooms,
    preset,
    command,
    mcp: values.mcp ?? false,
    maxChars: defaults.maxChars,
    stateDir: defaults.stateDir,
    ...(marginMs !== undefined ? { marginMs } : {}),
  };
}
