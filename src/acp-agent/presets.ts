// The ACP entry point of each agent CLI (checked against the adapters' npm packages, 2026):
// - Claude Code: the adapter `claude-agent-acp` (npm @agentclientprotocol/claude-agent-acp; the
//   older @zed-industries/claude-agent-acp installs the same program name);
// - Codex: the adapter `codex-acp` (npm @agentclientprotocol/codex-acp, formerly
//   @zed-industries/codex-acp, same program name);
// - Gemini CLI: `gemini --acp` (the CLI speaks ACP itself; `--experimental-acp` is the
//   deprecated spelling of versions before 0.33).
import { accessSync, constants, statSync } from 'node:fs';
import path from 'node:path';

export type AcpPresetName = 'claude' | 'codex' | 'gemini';

export interface AcpPreset {
  program: string;
  args: string[];
  /** What to run to get the program, for the "not installed" line. */
  install: string;
}

export const ACP_PRESETS: Record<AcpPresetName, AcpPreset> = {
  claude: {
    program: 'claude-agent-acp',
    args: [],
    install: 'npm install -g @agentclientprotocol/claude-agent-acp (it uses your Claude Code login)',
  },
  codex: {
    program: 'codex-acp',
    args: [],
    install: 'npm install -g @agentclientprotocol/codex-acp (it uses your Codex login)',
  },
  gemini: {
    program: 'gemini',
    args: ['--acp'],
    install: 'npm install -g @google/gemini-cli (0.33 or later for --acp)',
  },
};

function executable(file: string): boolean {
  try {
    if (!statSync(file).isFile()) return false;
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * Where `program` would be found: itself when it names a path (has a slash), else the first
 * executable of that name on PATH; null when there is none.
 */
export function findProgram(program: string, env: Record<string, string | undefined> = process.env, cwd = process.cwd()): string | null {
  if (program.includes('/') || program.includes(path.sep)) {
    const file = path.resolve(cwd, program);
    return executable(file) ? file : null;
  }
  for (const dir of (env.PATH ?? '').split(path.delimiter)) {
    if (!dir) continue;
    const file = path.join(dir, program);
    if (executable(file)) return file;
  }
  return null;
}
