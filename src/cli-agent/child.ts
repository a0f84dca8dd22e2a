// Runs one agent CLI to completion: the prompt on stdin, stdout and stderr collected (bounded),
// and the whole process group killed when the turn's time is up. The child leads its own process
// group (detached), so the tools it starts (shells, MCP servers, language servers) go with it:
// SIGTERM first, SIGKILL after a short grace, and a final SIGKILL to the group once the leader
// has exited so nothing it left behind keeps running.
import { spawn } from 'node:child_process';

export interface ChildResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** Killed because `signal` aborted (the turn's deadline, or shutdown). */
  killed: boolean;
  /** The command could not be started (not found, not executable). */
  spawnError?: string;
  durationMs: number;
}

export interface ChildOptions {
  command: string;
  args: string[];
  stdin: string;
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** Aborting kills the process group. */
  signal?: AbortSignal;
  /** Time between SIGTERM and SIGKILL (default 1 s). */
  graceMs?: number;
  /** Output kept per stream (default 4 MiB); the rest is dropped. */
  maxOutputBytes?: number;
  /** Called with the child's pid once it runs. */
  onSpawn?: (pid: number) => void;
}

/** Sends a signal to a whole process group; false when the group is gone. */
export function killGroup(pid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(-pid, signal);
    return true;
  } catch {
    return false;
  }
}

export function runChild(options: ChildOptions): Promise<ChildResult> {
  const started = Date.now();
  const limit = options.maxOutputBytes ?? 4 * 1024 * 1024;
  return new Promise((resolve) => {
    let child: ReturnType<typeof spawn>;
    try {
      child = spawn(options.command, options.args, {
        cwd: options.cwd,
        env: options.env ?? process.env,
        stdio: ['pipe', 'pipe', 'pipe'],
        detached: true,
      });
    } catch (err) {
      resolve({ code: null, signal: null, stdout: '', stderr: '', killed: false, spawnError: (err as Error).message, durationMs: 0 });
      return;
    }
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let outBytes = 0;
    let errBytes = 0;
    let killed = false;
    let spawnError: string | undefined;
    let graceTimer: NodeJS.Timeout | undefined;
    child.stdout!.on('data', (chunk: Buffer) => {
      if (outBytes < limit) out.push(chunk);
      outBytes += chunk.length;
    });
    child.stderr!.on('data', (chunk: Buffer) => {
      if (errBytes < limit) err.push(chunk);
      errBytes += chunk.length;
    });
    // A CLI that exits without reading its stdin makes the write fail with EPIPE: not our error.
    child.stdin!.on('error', () => undefined);
    child.stdin!.end(options.stdin);

    const kill = () => {
      if (killed || child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
      killed = true;
      killGroup(child.pid, 'SIGTERM');
      graceTimer = setTimeout(() => killGroup(child.pid!, 'SIGKILL'), options.graceMs ?? 1000);
    };
    if (options.signal?.aborted) queueMicrotask(kill);
    options.signal?.addEventListener('abort', kill, { once: true });
    child.once('spawn', () => {
      if (child.pid !== undefined) options.onSpawn?.(child.pid);
    });
    let done = false;
    const finish = (code: number | null, signal: NodeJS.Signals | null) => {
      if (done) return;
      done = true;
      clearTimeout(graceTimer);
      options.signal?.removeEventListener('abort', kill);
      resolve({
        code,
        signal,
        stdout: Buffer.concat(out).toString('utf8'),
        stderr: Buffer.concat(err).toString('utf8'),
        killed,
        ...(spawnError ? { spawnError } : {}),
        durationMs: Date.now() - started,
      });
    };
    child.once('error', (e) => {
      spawnError = e.message;
      if (child.pid === undefined) finish(null, null); // never started: no 'close' to wait for
    });
    // Whatever the leader left in its group (a tool it started) goes with it; that also closes
    // the pipes a straggler inherited, so 'close' comes.
    child.once('exit', () => {
      if (child.pid !== undefined) killGroup(child.pid, 'SIGKILL');
    });
    child.once('close', (code, signal) => finish(code, signal));
  });
}

/** The last non-empty line of a stream, cut for a skip reason. */
export function lastLine(text: string, max = 120): string {
  const lines = text.split(/\r?\n/).map((l) => l.trim()).filter(Boolean);
  const line = lines.at(-1) ?? '';
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}
