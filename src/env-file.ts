// `agent-chatroom start --env-file FILE` (SPEC §2): settings read from dotenv files, one per
// environment if you like. Strict on purpose: a line that is not `KEY=VALUE`, a comment or blank
// stops start-up with one line naming the file and the line, as a bad variable does.
import { readFileSync } from 'node:fs';

export class EnvFileError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'EnvFileError';
  }
}

const LINE = /^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*?)\s*$/;

/** The value as written after `=`: 'single' is literal, "double" knows \n \t \" \\, bare ends at " #". */
function value(raw: string): string | null {
  if (raw.startsWith("'")) {
    const end = raw.indexOf("'", 1);
    return end > 0 && /^\s*(#.*)?$/.test(raw.slice(end + 1)) ? raw.slice(1, end) : null;
  }
  if (raw.startsWith('"')) {
    let out = '';
    for (let i = 1; i < raw.length; i++) {
      const c = raw[i]!;
      if (c === '"') return /^\s*(#.*)?$/.test(raw.slice(i + 1)) ? out : null;
      if (c === '\\' && i + 1 < raw.length) {
        const next = raw[++i]!;
        out += next === 'n' ? '\n' : next === 't' ? '\t' : next === 'r' ? '\r' : next;
      } else out += c;
    }
    return null; // not closed on this line
  }
  return raw.replace(/\s+#.*$/, '');
}

/** The variables of one dotenv file; throws EnvFileError naming the file (and line) on a fault. */
export function parseEnvFile(file: string, text: string): Record<string, string> {
  const vars: Record<string, string> = {};
  const lines = text.replace(/^\uFEFF/, '').split(/\r?\n/);
  lines.forEach((line, index) => {
    if (/^\s*(#.*)?$/.test(line)) return;
    const match = LINE.exec(line);
    const parsed = match ? value(match[2]!) : null;
    if (!match || parsed === null) {
      throw new EnvFileError(`--env-file ${file}, line ${index + 1}: expected KEY=VALUE (a comment starts with #), got ${JSON.stringify(line.slice(0, 80))}`);
    }
    vars[match[1]!] = parsed;
  });
  return vars;
}

/**
 * The settings of `files`, in order (a later file overrides an earlier one), under the process
 * environment: a variable the environment already has keeps its value.
 */
export function environmentWithFiles(files: readonly string[], env: Record<string, string | undefined>): Record<string, string | undefined> {
  const fromFiles: Record<string, string> = {};
  for (const file of files) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (err) {
      throw new EnvFileError(`--env-file ${file}: cannot read it (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
    }
    Object.assign(fromFiles, parseEnvFile(file, text));
  }
  const merged: Record<string, string | undefined> = { ...fromFiles };
  for (const [key, val] of Object.entries(env)) if (val !== undefined) merged[key] = val;
  return merged;
}
