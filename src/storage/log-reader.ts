// Reads room logs (SPEC §5) in two steps, so that start-up does not parse a million messages:
//
// 1. scanRoomLog, at open: reads the file once and recovers it — a torn last line (no trailing
//    newline, or a last non-blank line that does not parse) is cut off the file with a warning.
//    It learns what the store must know before the room is parsed: the message ids (for
//    getMessage and messageCount) and the highest seq (for nextSeq). Lines the server wrote
//    start `{"message_id":"<id>","room_id":<room>,"seq":<n>,` and end with `}`: those are
//    checked and read from the raw bytes, without decoding or JSON.parse. Any other line is
//    decoded and parsed in full (hand-edited logs, other key orders), so a line that is clearly
//    bad — not that shape and not a message — still stops open, naming the file and line. The
//    last non-blank line is always parsed in full. The raw bytes are dropped when the scan ends.
// 2. parseRoomLog, on first use of the room (or during background warm-up): reads the recovered
//    part of the file again and parses every line. A line that passed the cheap shape check at
//    open but is not valid JSON / not a valid message is only found here; it makes the room
//    corrupt (the caller decides what that means, see message-index.ts).
//
// Decoding goes in chunks of whole lines because V8 strings top out around 512 MB.
import { readFileSync } from 'node:fs';
import { open, readFile } from 'node:fs/promises';
import type { Logger } from '../logger.js';
import type { Message } from '../types.js';

const CHUNK_BYTES = 64 * 1024 * 1024;
const NEWLINE = 0x0a;
const CR = 0x0d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const CLOSE_BRACE = 0x7d;
const ZERO = 0x30;
const NINE = 0x39;

const ID_PREFIX = Buffer.from('{"message_id":"', 'latin1');
/** Length of a server-made message id (a UUID); other lengths take the slow path. */
const ID_LENGTH = 36;

export interface ScannedLog {
  /** Distinct message_ids of the log (a re-used id is a new version of that message). */
  ids: Set<string>;
  /** Highest seq in the log (0 when empty). */
  lastSeq: number;
  /** Non-blank lines (messages and versions). */
  lines: number;
  /** File size after recovery: where the next append lands, and how much parseRoomLog reads. */
  size: number;
}

interface BadLine {
  lineNo: number;
  byteOffset: number;
  reason: string;
}

export async function scanRoomLog(path: string, roomId: string, logger: Logger): Promise<ScannedLog> {
  const buf = await readFile(path);
  let end = buf.length;
  let cutReason: string | undefined;
  const lastNewline = buf.lastIndexOf(NEWLINE);
  if (lastNewline !== buf.length - 1) {
    end = lastNewline + 1;
    cutReason = 'last line has no trailing newline';
  }

  // What follows the id on a fast-path line: `","room_id":"<room>","seq":`.
  const afterId = Buffer.from(`","room_id":${JSON.stringify(roomId)},"seq":`, 'utf8');
  const ids = new Set<string>();
  let lastSeq = 0;
  let lines = 0;
  let bad: BadLine | undefined;
  // The last non-blank line if it was only shape-checked: it is parsed in full at the end.
  let lastFast: { start: number; stop: number; lineNo: number; seqBefore: number; id: string | undefined } | undefined;
  let lineNo = 0;
  for (let start = 0; start < end; ) {
    const nl = buf.indexOf(NEWLINE, start);
    lineNo++;
    const stop = nl; // exclusive; the line is buf[start, stop)
    if (stop > start) {
      const fast = fastLine(buf, start, stop, afterId);
      if (fast !== undefined) {
        if (bad) throw corruptLine(path, bad);
        lastFast = { start, stop, lineNo, seqBefore: lastSeq, id: ids.has(fast.id) ? undefined : fast.id };
        ids.add(fast.id);
        if (fast.seq > lastSeq) lastSeq = fast.seq;
        lines++;
      } else {
        const parsed = parseLine(buf.toString('utf8', start, stop), roomId);
        if (parsed === BLANK) {
          // whitespace only: ignored like an empty line
        } else if (bad) {
          throw corruptLine(path, bad); // a bad line with more lines after it
        } else if (typeof parsed === 'string') {
          bad = { lineNo, byteOffset: start, reason: parsed };
        } else {
          ids.add(parsed.message_id);
          if (parsed.seq > lastSeq) lastSeq = parsed.seq;
          lines++;
          lastFast = undefined;
        }
      }
    }
    start = nl + 1;
  }

  if (!bad && lastFast) {
    // The last line is where a crash leaves damage: check it for real.
    const parsed = parseLine(buf.toString('utf8', lastFast.start, lastFast.stop), roomId);
    if (typeof parsed === 'string') {
      bad = { lineNo: lastFast.lineNo, byteOffset: lastFast.start, reason: parsed };
      if (lastFast.id !== undefined) ids.delete(lastFast.id); // unless an earlier line has it too
      lines--;
      lastSeq = lastFast.seqBefore;
    }
  }
  if (bad) {
    end = bad.byteOffset;
    cutReason = `last line ${bad.lineNo} is unreadable (${bad.reason})`;
  }

  if (end < buf.length) {
    await truncateDurably(path, end);
    logger.warn(
      { file: path, reason: cutReason, kept_bytes: end, cut_bytes: buf.length - end },
      'room log had a torn last line; cut it off',
    );
  }
  return { ids, lastSeq, lines, size: end };
}

/**
 * The id and seq of a line shaped like the server writes it, read from the bytes; undefined if
 * the line is not exactly that shape (the caller then parses it in full).
 */
function fastLine(buf: Buffer, start: number, stop: number, afterId: Buffer): { id: string; seq: number } | undefined {
  const idStart = start + ID_PREFIX.length;
  const idEnd = idStart + ID_LENGTH;
  const seqStart = idEnd + afterId.length;
  if (seqStart + 3 > stop) return undefined; // room for a digit, a comma and the closing brace
  let last = stop - 1;
  if (buf[last] === CR) last--;
  if (buf[last] !== CLOSE_BRACE) return undefined;
  for (let i = 0; i < ID_PREFIX.length; i++) if (buf[start + i] !== ID_PREFIX[i]) return undefined;
  for (let i = idStart; i < idEnd; i++) {
    const b = buf[i]!;
    // Plain printable ASCII only, so the bytes are the string (no escapes, no multi-byte).
    if (b < 0x20 || b > 0x7e || b === QUOTE || b === BACKSLASH) return undefined;
  }
  for (let i = 0; i < afterId.length; i++) if (buf[idEnd + i] !== afterId[i]) return undefined;
  let seq = 0;
  let i = seqStart;
  const first = buf[i];
  if (first === undefined || first <= ZERO || first > NINE) return undefined; // seq >= 1, no leading zero
  for (; i < stop && i - seqStart < 15; i++) {
    const b = buf[i]!;
    if (b < ZERO || b > NINE) break;
    seq = seq * 10 + (b - ZERO);
  }
  if (buf[i] !== COMMA) return undefined;
  return { id: buf.toString('latin1', idStart, idEnd), seq };
}

/**
 * Parses every message of a log already recovered by scanRoomLog, reading its first `size`
 * bytes. Throws an Error naming the file and line if any non-blank line is not a message.
 */
export function parseRoomLog(path: string, roomId: string, size: number): Message[] {
  const buf = readFileSync(path);
  const end = Math.min(size, buf.length);
  const messages: Message[] = [];
  let lineNo = 0;
  for (let start = 0; start < end; ) {
    const chunkEnd = chunkBoundary(buf, start, end);
    const text = buf.toString('utf8', start, chunkEnd);
    for (let pos = 0; pos < text.length; ) {
      let nl = text.indexOf('\n', pos);
      if (nl < 0) nl = text.length;
      const line = text.slice(pos, nl);
      lineNo++;
      if (line.length > 0) {
        const parsed = parseLine(line, roomId);
        if (typeof parsed === 'string') throw corruptLine(path, { lineNo, byteOffset: -1, reason: parsed });
        if (parsed !== BLANK) messages.push(parsed);
      }
      pos = nl + 1;
    }
    start = chunkEnd;
  }
  return messages;
}

// The end of a chunk of whole lines starting at `start` (end is a line boundary itself).
function chunkBoundary(buf: Buffer, start: number, end: number): number {
  if (end - start <= CHUNK_BYTES) return end;
  const back = buf.lastIndexOf(NEWLINE, start + CHUNK_BYTES - 1);
  if (back >= start) return back + 1;
  const fwd = buf.indexOf(NEWLINE, start + CHUNK_BYTES);
  return fwd < 0 || fwd >= end ? end : fwd + 1; // one line longer than a chunk
}

const BLANK = Symbol('blank line');

/** The message, or why the line is not one. Blank lines are checked for only on failure: this
 *  runs a million times during warm-up. */
function parseLine(line: string, roomId: string): Message | string | typeof BLANK {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch (err) {
    return line.trim() === '' ? BLANK : (err as Error).message;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return 'not a JSON object';
  const m = value as Partial<Message>;
  if (typeof m.message_id !== 'string' || m.message_id === '') return 'no message_id';
  if (typeof m.seq !== 'number' || !Number.isInteger(m.seq) || m.seq < 1) return 'no valid seq';
  if (m.room_id !== roomId) return `room_id ${JSON.stringify(m.room_id)} does not match the file`;
  return m as Message;
}

function corruptLine(path: string, bad: BadLine): Error {
  return new Error(
    `Room log ${path} is corrupt at line ${bad.lineNo} (${bad.reason}); only a torn last line is repaired automatically. ` +
      'Repair or restore the file, then start again.',
  );
}

async function truncateDurably(path: string, length: number): Promise<void> {
  const handle = await open(path, 'r+');
  try {
    await handle.truncate(length);
    await handle.sync();
  } finally {
    await handle.close();
  }
}
