// The ACP entry point of each agent CLI (checked against the adapters' npm packages, 2026):
// - Claude Code: the adapter `claude-agent-acp` (npm @agentclientprotocol/claude-agent-acp; the
//   older @zed-industries/claude-agent-acp installs the same program name);
// - Codex: the adapter `codex-acp` (npm @agentclientprotocol/codex-acp, formerly
//   @zed-industries/codex-acp, same program name);
// - Gemini CLI: `gemini --acp` (the CLI speaks ACP itself; `--experimental-acp` is the
//   deprecated spelling of versions before 0.33).
export type AcpPresetName = 'claude' | 'codex' | 'gemini';

export interface AcpPreset {
  program: string;
  args: string[];
  /** What to install when the program is missing (named at start, src/agent/program.ts). */
  install: string;
}

export const ACP_PRESETS: Record<AcpPresetName, AcpPreset> = {
  claude: {
    program: 'claude-agent-acp',
    args: [],
    install: 'the Claude Code ACP adapter (npm install -g @agentclientprotocol/claude-agent-acp; it uses your Claude Code login)',
  },
  codex: {
    program: 'codex-acp',
    args: [],
    install: 'the Codex ACP adapter (npm install -g @agentclientprotocol/codex-acp; it uses your Codex login)',
  },
  gemini: {
    program: 'gemini',
    args: ['--acp'],
    install: 'the Gemini CLI, 0.33 or later for --acp (npm install -g @google/gemini-cli)',
  },
};
