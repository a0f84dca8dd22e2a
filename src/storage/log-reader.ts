// Reads one room log at open and recovers it (SPEC §5): a torn last line — no trailing newline,
// or a last line that does not parse — is cut off the file with a warning; a bad line anywhere
// else means the log is corrupt and open fails naming the file and line.
//
// Speed matters (1M messages must load in seconds): one readFile per log, lines found with
// indexOf on the decoded text, one JSON.parse per line. Decoding goes in chunks of whole lines
// because V8 strings top out around 512 MB.
import { open, readFile } from 'node:fs/promises';
import type { Logger } from '../logger.js';
import type { Message } from '../types.js';

const CHUNK_BYTES = 64 * 1024 * 1024;
const NEWLINE = 0x0a;

export interface LoadedLog {
  messages: Message[];
  /** File size after recovery: where the next append lands. */
  size: number;
}

interface BadLine {
  lineNo: number;
  byteOffset: number;
  reason: string;
}

export async function readRoomLog(path: string, roomId: string, logger: Logger): Promise<LoadedLog> {
  const buf = await readFile(path);
  let end = buf.length;
  let cutReason: string | undefined;
  const lastNewline = buf.lastIndexOf(NEWLINE);
  if (lastNewline !== buf.length - 1) {
    end = lastNewline + 1;
    cutReason = 'last line has no trailing newline';
  }

  const messages: Message[] = [];
  let bad: BadLine | undefined;
  let lineNo = 0;
  for (let start = 0; start < end; ) {
    const chunkEnd = chunkBoundary(buf, start, end);
    const text = buf.toString('utf8', start, chunkEnd);
    for (let pos = 0; pos < text.length; ) {
      const nl = text.indexOf('\n', pos);
      const line = text.slice(pos, nl);
      lineNo++;
      if (line.length > 0) {
        const parsed = parseLine(line, roomId);
        if (parsed === BLANK) {
          // whitespace only: ignored like an empty line
        } else if (bad) {
          throw corruptLine(path, bad); // a bad line with more lines after it
        } else if (typeof parsed === 'string') {
          bad = { lineNo, byteOffset: start + Buffer.byteLength(text.slice(0, pos)), reason: parsed };
        } else {
          messages.push(parsed);
        }
      }
      pos = nl + 1;
    }
    start = chunkEnd;
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
  return { messages, size: end };
}

// The end of a chunk of whole lines starting at `start` (end is a line boundary itself).
function chunkBoundary(buf: Buffer, start: number, end: number): number {
  if (end - start <= CHUNK_BYTES) return end;
  const back = buf.lastIndexOf(NEWLINE, start + CHUNK_BYTES - 1);
  if (back >= start) return back + 1;
  return buf.indexOf(NEWLINE, start + CHUNK_BYTES) + 1; // one line longer than a chunk
}

const BLANK = Symbol('blank line');

/** The message, or why the line is not one. Blank lines are checked for only on failure: this
 *  runs a million times at start-up. */
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
