#!/usr/bin/env node
// Entry point: `start` runs the server; other subcommands are added by their modules. A bare
// `agent-chatroom` prints the help and starts nothing (a server is never started by accident).
// Each command loads only its own modules: a hook or an agent starts in a fraction of the time
// the server's modules (PDF fonts, express, …) would take.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig, type Config } from './config.js';

/**
 * A command's own arguments, strictly (an unknown flag or a stray argument is a one-line error,
 * exit 2, never silently ignored); `--help` prints `usage` and exits 0.
 */
function argsOrExit(usage: string, positionals: number): string[] {
  let parsed;
  try {
    parsed = parseArgs({ args: process.argv.slice(3), options: { help: { type: 'boolean', short: 'h' } }, allowPositionals: positionals > 0, strict: true });
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n${usage}`);
    process.exit(2);
  }
  if (parsed.values.help) {
    process.stdout.write(usage);
    process.exit(0);
  }
  if (parsed.positionals.length > positionals) {
    process.stderr.write(`Unexpected argument "${parsed.positionals[positionals]}".\n${usage}`);
    process.exit(2);
  }
  return parsed.positionals;
}

const START_USAGE = `Usage: agent-chatroom start
  Runs the server. Settings come from the environment (README, "Configuration"): PORT (3000),
  HOST (127.0.0.1), DATA_DIR (./data), TURN_TIMEOUT_MS, STORE/DATABASE_URL, …
`;
const BACKUP_USAGE = `Usage: agent-chatroom backup <target-dir>
  Copies DATA_DIR (default ./data) into <target-dir> (new or empty), also while the server runs.
`;

/** The environment as Config; an invalid variable ends the process with its one-line error. */
function configOrExit(): Config {
  try {
    return loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(1);
    }
    throw err;
  }
}

async function start(): Promise<void> {
  argsOrExit(START_USAGE, 0);
  const { createLogger, flushLogger, logFormat } = await import('./logger.js');
  const { startServer } = await import('./server.js');
  const config = configOrExit();
  const logger = createLogger(config.logLevel, logFormat());
  // A promise rejection nobody handled is a bug in one call, not a reason to drop every
  // connection: log it and keep serving (Node's default would end the process).
  process.on('unhandledRejection', (reason) => {
    logger.error({ err: reason }, 'unhandled promise rejection');
  });
  // A signal while the store opens (a long scan of the logs after a crash): nothing has been
  // served or acknowledged yet, and every step of opening survives a stop at any point (it is
  // built to survive SIGKILL), so the process ends at once, reporting success (SPEC §2).
  const duringStartUp = (signal: string) => {
    logger.info({ signal }, 'stopped during start-up');
    void flushLogger(logger).finally(() => process.exit(0));
  };
  process.on('SIGTERM', duringStartUp).on('SIGINT', duringStartUp);
  let running;
  try {
    running = await startServer(config, logger);
  } catch (err) {
    process.stderr.write(`Cannot start: ${(err as Error).message}\n`);
    process.exit(1);
  }
  process.off('SIGTERM', duringStartUp).off('SIGINT', duringStartUp);
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    running.close().then(
      async () => {
        await flushLogger(logger);
        process.exit(0);
      },
      async (err: unknown) => {
        logger.error({ err }, 'shutdown failed');
        await flushLogger(logger);
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

const command = process.argv[2] ?? 'help';
async function backup(): Promise<void> {
  const [target] = argsOrExit(BACKUP_USAGE, 1);
  if (!target) {
    process.stderr.write(BACKUP_USAGE);
    process.exit(2);
  }
  const { dataDir } = configOrExit();
  const { backupDataDir } = await import('./backup.js');
  try {
    const result = await backupDataDir(dataDir, path.resolve(target));
    process.stdout.write(`Backed up ${dataDir} to ${path.resolve(target)}: ${JSON.stringify(result)}\n`);
  } catch (err) {
    process.stderr.write(`Backup failed: ${(err as Error).message}\n`);
    process.exit(1);
  }
}

const HELP = `agent-chatroom <command>   (Agent Chatroom: AI agents and people in rooms, taking turns)

  start                              run the server (PORT, HOST, DATA_DIR, … from the environment)
  mcp [--url URL] [--token T]        stdio MCP server for IDE agents, forwarding to a running server
  agent --room R --name N --model M  the ready-to-run agent (an OpenAI-compatible model)
  cli-agent --room R --name N --preset claude|codex|gemini [-- command…]
                                     an agent CLI run once per turn
  a2a-agent --room R --name N --card CARD_URL [--header 'Name: value'] [--bearer-env VAR]
                                     a remote A2A agent as a member (docs/a2a.md)
  acp-agent --room R --name N --preset claude|codex|gemini [-- command…]
                                     an ACP agent (Claude Code, Codex, Gemini CLI) in one
                                     long-lived session per room, its progress as activity
  hook claude-init|claude-session-start|claude-stop|codex-notify
                                     keep an interactive Claude Code session in a room (docs/agents.md)
  backup DIR                         copy DATA_DIR

Without a command this help is printed and nothing starts: run \`agent-chatroom start\` (or
\`npm start\` in a checkout) to serve. Every command takes --help (agent-chatroom --version prints
the version). The server URL defaults to http://127.0.0.1:3000. Guides: the docs/ folder of the package (docs/agents.md).
`;

async function printVersion(): Promise<void> {
  const { PACKAGE_ROOT } = await import('./paths.js');
  const manifest = JSON.parse(readFileSync(path.join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version: string };
  process.stdout.write(`${manifest.version}\n`);
}


const commands: Record<string, () => Promise<void>> = {
  start,
  backup,
  mcp: async () => (await import('./mcp/stdio.js')).runMcpStdio(process.argv.slice(3)),
  agent: async () => (await import('./agent/run.js')).agentCommand(process.argv.slice(3)),
  'cli-agent': async () => (await import('./cli-agent/run.js')).cliAgentCommand(process.argv.slice(3)),
  'a2a-agent': async () => (await import('./a2a-agent/run.js')).a2aAgentCommand(process.argv.slice(3)),
  'acp-agent': async () => (await import('./acp-agent/run.js')).acpAgentCommand(process.argv.slice(3)),
  hook: async () => (await import('./hooks/index.js')).hookCommand(process.argv.slice(3)),
  help: async () => {
    process.stdout.write(HELP);
  },
  '--help': async () => {
    process.stdout.write(HELP);
  },
  '-h': async () => {
    process.stdout.write(HELP);
  },
  '--version': printVersion,
  '-v': printVersion,
};

const run = commands[command];
if (!run) {
  process.stderr.write(`Unknown command "${command}".\n\n${HELP}`);
  process.exit(2);
}
await run();
