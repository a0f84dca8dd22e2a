// When did process N start? Used by the lock to tell "the owner is still running" from "its
// pid now belongs to someone else" — common in containers, where every run of the server gets
// the same small pid and a stale lock's pid is alive again.
//
// Only Linux exposes this cheaply (/proc). Elsewhere, or when the numbers do not check out
// against our own process, the answer is "unknown" and the lock falls back to pid liveness.
import { readFile } from 'node:fs/promises';

// Linux reports starttime in clock ticks; USER_HZ is 100 on every mainstream architecture, and
// `selfCheck` refuses to use the method if our own start time does not come out right with it.
const TICKS_PER_SECOND = 100;

let bootTimeMs: Promise<number | undefined> | undefined;
let trusted: Promise<boolean> | undefined;

async function readBootTimeMs(): Promise<number | undefined> {
  try {
    const stat = await readFile('/proc/stat', 'utf8');
    const m = /^btime (\d+)$/m.exec(stat);
    return m ? Number(m[1]) * 1000 : undefined;
  } catch {
    return undefined;
  }
}

async function rawStartMs(pid: number): Promise<number | undefined> {
  if (process.platform !== 'linux') return undefined;
  bootTimeMs ??= readBootTimeMs();
  const boot = await bootTimeMs;
  if (boot === undefined) return undefined;
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    // Field 2 (comm) may contain spaces and parentheses; the fields after it follow the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[19]); // field 22 (starttime), counted from field 3
    return Number.isFinite(ticks) ? boot + (ticks * 1000) / TICKS_PER_SECOND : undefined;
  } catch {
    return undefined;
  }
}

// btime has whole-second precision and node starts its uptime clock a little after exec, so the
// two views of our own start differ by up to ~1.5 s; a wrong USER_HZ would be off by far more.
async function selfCheck(): Promise<boolean> {
  const fromProc = await rawStartMs(process.pid);
  if (fromProc === undefined) return false;
  return Math.abs(fromProc - (Date.now() - process.uptime() * 1000)) < 2500;
}

/** Start time of a process in ms since the epoch, or undefined when it cannot be known. */
export async function processStartMs(pid: number): Promise<number | undefined> {
  trusted ??= selfCheck();
  if (!(await trusted)) return undefined;
  return rawStartMs(pid);
}

/** Our own start time, as recorded in the lock file. */
export async function ownStartMs(): Promise<number> {
  return (await processStartMs(process.pid)) ?? Math.round(Date.now() - process.uptime() * 1000);
}
