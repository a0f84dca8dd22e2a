// Search over a room log without parsing it (room-messages.ts `search`): the log is streamed
// through one reused buffer (no allocation per chunk: fresh 4 MiB buffers cost more in page
// faults than the read itself), and in each block of whole lines only the lines that may hold
// the query are handed on to be parsed and checked exactly. A line is a candidate when its
// raw bytes may contain the query lowered:
//
// - a printable ASCII query (no quote or backslash): a case-insensitive regular expression over
//   the block's Latin-1 view, decoded 64 KiB at a time (small strings stay in V8's young
//   generation; one 4 MiB string costs a fresh allocation per block). Without the `u` flag, /i
//   folds ASCII letters only to ASCII letters, which is what `toLowerCase` does except for two
//   characters (İ → i̇, K → k): a block holding either sends every line on.
// - a query without cased letters (Chinese, Japanese, Korean, digits, punctuation): its UTF-8
//   bytes (nothing else lowers to those characters).
// - anything else (other cased scripts, emoji, and queries with characters JSON escapes — a
//   quote, a backslash, a control character — which the raw bytes hold escaped): a block whose
//   text lowered cannot contain the query is skipped; otherwise every line is a candidate.
//
// The exact check (the caller's) decides; this only has to never drop a line that matches.
import { open } from 'node:fs/promises';
import { defaultFsOps, type FsOps } from './fs-ops.js';

/** Block and piece sizes (tests make them tiny to put matches across every boundary). */
export const searchTuning = { blockBytes: 4 * 1024 * 1024, pieceBytes: 64 * 1024 };

// Characters outside Latin-1 whose lower case contains an ASCII letter (İ → i̇, K → k), as UTF-8.
const ASCII_LOWERING = [Buffer.from('İ', 'utf8'), Buffer.from('\u212a', 'utf8')];
/** Characters no other character lowers to, and that have no case themselves. */
const CASELESS = /^[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}\u3000-\u303f\uff01-\uff0f\uff1a-\uff20\u0020-\u0021\u0023-\u0040\u005b\u005d-\u0060\u007b-\u007e]+$/u;
const NEWLINE = 0x0a;

/** Calls `visit(start, end)` for each line of `block` (without its newline) that may match. */
export type CandidateLines = (block: Buffer, visit: (start: number, end: number) => void) => void;

/** Whether the query appears as it is in a line's raw bytes (JSON escapes none of its characters). */
export const rawSafe = (needle: string): boolean => !/["\\\u0000-\u001f]/.test(needle);

/** The candidate-line finder for a query already lowered (`toLowerCase`). */
export function candidateLines(needle: string): CandidateLines {
  if (needle === '' || !rawSafe(needle)) return everyLine;
  if (/^[\x20-\x7e]+$/.test(needle)) {
    const pattern = new RegExp(needle.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&'), 'gi');
    return (block, visit) => {
      if (ASCII_LOWERING.some((b) => block.includes(b))) return everyLine(block, visit);
      asciiMatches(block, pattern, needle.length, visit);
    };
  }
  if (CASELESS.test(needle)) {
    const bytes = Buffer.from(needle, 'utf8');
    return (block, visit) => {
      for (let at = block.indexOf(bytes); at >= 0; at = block.indexOf(bytes, at)) at = visitLineAt(block, at, visit);
    };
  }
  return (block, visit) => {
    if (block.toString('utf8').toLowerCase().includes(needle)) everyLine(block, visit);
  };
}

function everyLine(block: Buffer, visit: (start: number, end: number) => void): void {
  for (let start = 0; start < block.length; ) {
    let nl = block.indexOf(NEWLINE, start);
    if (nl < 0) nl = block.length;
    if (nl > start) visit(start, nl);
    start = nl + 1;
  }
}

/** Visits the line holding byte `at`; returns where to look next (the following line). */
function visitLineAt(block: Buffer, at: number, visit: (start: number, end: number) => void): number {
  const start = at === 0 ? 0 : block.lastIndexOf(NEWLINE, at - 1) + 1;
  let end = block.indexOf(NEWLINE, at);
  if (end < 0) end = block.length;
  visit(start, end);
  return end + 1;
}

/**
 * ASCII case-insensitive matches over the block's Latin-1 view, a piece at a time: a piece is
 * decoded with `needleLength - 1` bytes more, so a match starting in it is seen whole.
 */
function asciiMatches(block: Buffer, pattern: RegExp, needleLength: number, visit: (start: number, end: number) => void): void {
  const piece = Math.max(1, searchTuning.pieceBytes);
  for (let from = 0; from < block.length; ) {
    const to = Math.min(block.length, from + piece);
    const text = block.toString('latin1', from, Math.min(block.length, to + needleLength - 1));
    pattern.lastIndex = 0;
    let next = to;
    for (let m = pattern.exec(text); m !== null && from + m.index < to; m = pattern.exec(text)) {
      next = visitLineAt(block, from + m.index, visit);
      if (next >= to) break;
      pattern.lastIndex = next - from;
    }
    from = Math.max(to, next);
  }
}

/**
 * Streams the log's first `size` bytes as blocks of whole lines (`base`: the file offset of
 * block[0]); the block is only valid during the call (the buffer is reused). A last line without
 * its newline is not passed on (a durable size always ends one). Awaits between blocks, so other
 * requests run in between.
 */
export async function forEachBlock(
  path: string,
  size: number,
  onBlock: (block: Buffer, base: number) => boolean | void,
  read: FsOps['read'] = defaultFsOps.read,
): Promise<void> {
  if (size <= 0) return;
  const handle = await open(path, 'r');
  try {
    let buf = Buffer.allocUnsafe(Math.max(64, Math.min(searchTuning.blockBytes, size)));
    let base = 0; // file offset of buf[0]
    let filled = 0;
    while (base + filled < size) {
      if (filled === buf.length) {
        // A line longer than the buffer: grow it (rare; lines are at most a few hundred KB).
        const bigger = Buffer.allocUnsafe(buf.length * 2);
        buf.copy(bigger, 0, 0, filled);
        buf = bigger;
      }
      const want = Math.min(buf.length - filled, size - base - filled);
      const bytesRead = await read(handle, buf, filled, want, base + filled);
      if (bytesRead === 0) break; // the file was cut back under us: what was read is all there is
      filled += bytesRead;
      const last = buf.lastIndexOf(NEWLINE, filled - 1);
      if (last < 0) continue;
      if (onBlock(buf.subarray(0, last + 1), base) === false) return;
      buf.copy(buf, 0, last + 1, filled);
      filled -= last + 1;
      base += last + 1;
    }
  } finally {
    await handle.close();
  }
}
