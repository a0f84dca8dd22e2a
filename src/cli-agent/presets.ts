// How each agent CLI is run headless and how its output is read. The flags and formats are the
// CLIs' documented ones:
// - Claude Code: `claude -p --output-format json [--resume <session_id>]`, prompt on stdin; prints
//   one JSON object `{type:"result", subtype, is_error, result, session_id, …}`.
// - Codex: `codex exec --json [resume <thread_id>] -` (`-`: prompt on stdin); prints JSON lines:
//   `thread.started {thread_id}`, `turn.started`, `item.completed {item:{type:"agent_message", text}}`,
//   `turn.completed`, or `turn.failed {error:{message}}` / `error {message}`.
// - Gemini CLI: `gemini --output-format json -p <instruction>`, the prompt on stdin (Gemini puts
//   stdin before the -p text); prints `{response, stats, error?}` (older versions: plain text).
// - Any other command: prompt on stdin, its stdout is the answer.

export type PresetName = 'claude' | 'codex' | 'gemini';

export interface RunPlan {
  /** Arguments appended to the user's command (program and its own flags). */
  args: string[];
}

export interface ParsedOutput {
  /** The answer; '' when the CLI printed none. */
  text: string;
  /** The CLI's session/thread id, to resume next turn. */
  sessionId?: string;
  /** The CLI reported a failure (its own words). */
  error?: string;
}

export interface McpPlan {
  /** Path of a JSON file in Claude Code's `--mcp-config` format (servers under "mcpServers"). */
  configPath: string;
  /** Command and arguments that start the stdio proxy (`agent-chatroom mcp --url …`). */
  command: string;
  args: string[];
  /** Environment of the proxy (CHATROOM_TOKEN). */
  env: Record<string, string>;
}

export interface Preset {
  name: PresetName;
  /** The program run when no command follows `--`. */
  program: string;
  /** What to install when the program is missing (named at start, src/agent/program.ts). */
  install: string;
  /** Whether the CLI can continue a session between turns. */
  resumes: boolean;
  plan(options: { sessionId: string | null; mcp: McpPlan | null }): RunPlan;
  parse(stdout: string): ParsedOutput;
}

/** Room tools a CLI may call through the MCP server (names as Claude Code exposes them). */
export const MCP_ROOM_TOOLS = ['send_message', 'get_context', 'get_full_message', 'search_messages', 'get_messages'];

/** The JSON objects in a text that holds one object, or one per line. */
function jsonObjects(stdout: string): Array<Record<string, unknown>> {
  const trimmed = stdout.trim();
  if (!trimmed) return [];
  try {
    const whole = JSON.parse(trimmed) as unknown;
    if (whole && typeof whole === 'object' && !Array.isArray(whole)) return [whole as Record<string, unknown>];
    if (Array.isArray(whole)) return whole.filter((x): x is Record<string, unknown> => !!x && typeof x === 'object');
  } catch {
    // JSON lines, or JSON after a banner line: read line by line.
  }
  const objects: Array<Record<string, unknown>> = [];
  for (const line of trimmed.split(/\r?\n/)) {
    const l = line.trim();
    if (!l.startsWith('{')) continue;
    try {
      objects.push(JSON.parse(l) as Record<string, unknown>);
    } catch {
      // not a JSON line (progress text): ignore
    }
  }
  return objects;
}

const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

export const claudePreset: Preset = {
  name: 'claude',
  program: 'claude',
  install: 'Claude Code (npm install -g @anthropic-ai/claude-code)',
  resumes: true,
  plan({ sessionId, mcp }) {
    return {
      args: [
        '-p',
        '--output-format',
        'json',
        ...(sessionId ? ['--resume', sessionId] : []),
        ...(mcp ? ['--mcp-config', mcp.configPath, '--allowedTools', MCP_ROOM_TOOLS.map((t) => `mcp__chatroom__${t}`).join(',')] : []),
      ],
    };
  },
  parse(stdout) {
    const objects = jsonObjects(stdout);
    // `--output-format json` prints one object; stream-json ends with the same `result` object.
    const result = [...objects].reverse().find((o) => o.type === 'result') ?? objects.at(-1);
    if (!result) return stdout.trim() ? { text: '', error: `no JSON in the output: ${stdout.trim().slice(0, 120)}` } : { text: '' };
    const sessionId = str(result.session_id);
    const text = str(result.result) ?? '';
    if (result.is_error === true || (str(result.subtype) && result.subtype !== 'success')) {
      return { text: '', error: text || str(result.subtype) || 'reported an error', ...(sessionId ? { sessionId } : {}) };
    }
    return { text, ...(sessionId ? { sessionId } : {}) };
  },
};

export const codexPreset: Preset = {
  name: 'codex',
  program: 'codex',
  install: 'the Codex CLI (npm install -g @openai/codex)',
  resumes: true,
  plan({ sessionId, mcp }) {
    // -c overrides are TOML values: strings and arrays in JSON syntax are valid TOML.
    const mcpArgs = mcp
      ? [
          '-c',
          `mcp_servers.chatroom.command=${JSON.stringify(mcp.command)}`,
          '-c',
          `mcp_servers.chatroom.args=${JSON.stringify(mcp.args)}`,
          ...Object.entries(mcp.env).flatMap(([k, v]) => ['-c', `mcp_servers.chatroom.env.${k}=${JSON.stringify(v)}`]),
        ]
      : [];
    return { args: ['exec', '--json', '--skip-git-repo-check', ...mcpArgs, ...(sessionId ? ['resume', sessionId] : []), '-'] };
  },
  parse(stdout) {
    let text = '';
    let sessionId: string | undefined;
    let error: string | undefined;
    for (const event of jsonObjects(stdout)) {
      const type = str(event.type);
      if (type === 'thread.started') sessionId = str(event.thread_id) ?? sessionId;
      else if (type === 'item.completed') {
        const item = (event.item ?? {}) as Record<string, unknown>;
        // `type` in current releases, `item_type` in early ones.
        const kind = str(item.type) ?? str(item.item_type);
        if ((kind === 'agent_message' || kind === 'assistant_message') && typeof item.text === 'string') text = item.text;
      } else if (type === 'turn.failed') error = str((event.error as { message?: unknown } | undefined)?.message) ?? 'turn failed';
      else if (type === 'error') error = str(event.message) ?? 'error';
    }
    return { text: error && !text ? '' : text, ...(sessionId ? { sessionId } : {}), ...(error && !text ? { error } : {}) };
  },
};

/** What Gemini gets with -p; the room prompt itself comes on stdin, before it. */
export const GEMINI_INSTRUCTION = 'Write your next message for the chat room described above. Reply with the message text only.';

export const geminiPreset: Preset = {
  name: 'gemini',
  program: 'gemini',
  install: 'the Gemini CLI (npm install -g @google/gemini-cli)',
  resumes: false,
  plan() {
    return { args: ['--output-format', 'json', '-p', GEMINI_INSTRUCTION] };
  },
  parse(stdout) {
    const trimmed = stdout.trim();
    if (!trimmed) return { text: '' };
    if (trimmed.startsWith('{')) {
      const [object] = jsonObjects(trimmed);
      if (object) {
        const error = object.error as { message?: unknown } | string | undefined;
        const text = str(object.response) ?? '';
        if (!text && error) return { text: '', error: typeof error === 'string' ? error : (str(error.message) ?? 'reported an error') };
        return { text };
      }
    }
    return { text: trimmed }; // a version without --output-format json prints the answer as text
  },
};

export const PRESETS: Record<PresetName, Preset> = { claude: claudePreset, codex: codexPreset, gemini: geminiPreset };

/** A command without a preset: prompt on stdin, stdout is the answer. */
export function parsePlainOutput(stdout: string): ParsedOutput {
  return { text: stdout.trim() };
}
