// Logs (pino). Message texts, tokens and passwords are never logged: log calls pass named fields
// only (ids, tool names, outcomes), never request arguments or records —
// test/integration/observability.test.ts checks the output. (pino's `redact` would cost ~10 µs on
// every line.)
//
// Two formats: JSON lines (the default when stdout is not a terminal, and always with
// LOG_FORMAT=json), and for a person (at a terminal, or always with LOG_FORMAT=human) a short
// start-up banner followed by one readable line per log entry.
import path from 'node:path';
import { pino, type Logger } from 'pino';
import { logFormatVar } from './config.js';
import { PACKAGE_ROOT } from './paths.js';

export type { Logger };

export type LogFormat = 'json' | 'human';

/** LOG_FORMAT's choice (validated by loadConfig); unset: `human` at a terminal, else `json`. */
export function logFormat(env: Record<string, string | undefined> = process.env, isTty: boolean = process.stdout.isTTY === true): LogFormat {
  return logFormatVar(env) ?? (isTty ? 'human' : 'json');
}

const humanLoggers = new WeakSet<Logger>();
const LEVELS: Record<number, string> = { 10: 'trace', 20: 'debug', 30: 'info', 40: 'warn', 50: 'error', 60: 'fatal' };

/** One JSON log line as a readable line: `12:00:01 warn  message key=value …`. */
export function humanLine(json: string): string {
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return json;
  }
  const { level, time, msg, ...rest } = entry;
  const clock = typeof time === 'number' ? new Date(time).toTimeString().slice(0, 8) : '';
  const fields = Object.entries(rest)
    .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
    .join(' ');
  return `${clock} ${(LEVELS[level as number] ?? String(level)).padEnd(5)} ${typeof msg === 'string' ? msg : ''}${fields ? `  ${fields}` : ''}\n`;
}

/**
 * JSON lines on stdout, written asynchronously (a write per call would slow every call); with
 * `human`, readable lines written as they come (a terminal is not a hot path).
 */
export function createLogger(level: string, format: LogFormat = 'json', out: { write(text: string): unknown } = process.stdout): Logger {
  if (format === 'human') {
    const logger = pino({ level, base: undefined }, { write: (line: string) => out.write(humanLine(line)) });
    humanLoggers.add(logger);
    return logger;
  }
  return pino({ level, base: undefined }, pino.destination({ dest: 1, sync: false }));
}

/** Writes out buffered log lines (before the process exits). */
export function flushLogger(logger: Logger): Promise<void> {
  return new Promise((resolve) => logger.flush(() => resolve()));
}

/** A logger that drops everything: for unit tests and tools that run in-process. */
export const silentLogger: Logger = pino({ level: 'silent' });

export interface ListeningInfo {
  port: number;
  host: string;
  url: string;
  dataDir: string;
  messages: number;
}

const DEFAULT_URL = 'http://127.0.0.1:3000';

/** The start-up banner: where the page and MCP are, and how to bring agents in. */
export function banner(info: ListeningInfo): string {
  const url = info.url;
  const flag = url === DEFAULT_URL ? '' : ` --url ${url}`;
  return [
    '',
    '  Agent Chatroom is running',
    '',
    `  Page   ${url}/`,
    `  MCP    ${url}/mcp        (stdio for IDEs: agent-chatroom mcp${flag || ` --url ${url}`})`,
    `  Data   ${info.dataDir} (${info.messages} messages)`,
    '',
    '  Bring agents into a room (its id is in the page address):',
    `    agent-chatroom cli-agent${flag} --room <room_id> --name Claude --preset claude`,
    `    agent-chatroom agent${flag} --room <room_id> --name Qwen --model qwen2.5`,
    `  More: ${path.join(PACKAGE_ROOT, 'docs', 'agents.md')}. Logs follow here; LOG_FORMAT=json for JSON lines.`,
    '',
    '',
  ].join('\n');
}

/**
 * Announces the bound URL: the banner for a person at a terminal, one JSON line otherwise. The
 * line is written at `LOG_LEVEL=warn` or `error` too (as `info`): with `PORT=0` it is the only
 * way to learn the port (SPEC §2). `silent` prints nothing.
 */
export function announceListening(logger: Logger, info: ListeningInfo, out: { write(text: string): unknown } = process.stdout): void {
  if (humanLoggers.has(logger)) out.write(banner(info));
  else if (logger.isLevelEnabled('info')) logger.info({ ...info }, `listening on ${info.url}`);
  else if (logger.level !== 'silent') logger.child({}, { level: 'info' }).info({ ...info }, `listening on ${info.url}`);
}
