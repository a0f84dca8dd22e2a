// Reads room logs (SPEC §5), always streaming or by position: a log may be larger than 2 GiB
// (Node's limit for one Buffer read) and larger than memory.
//
// scanRoomLog, at open: reads the file once in chunks and recovers it — a torn last line (no
// trailing newline, or a last non-blank line that does not parse) is cut off the file with a
// warning — and builds the room's index (room-index.ts): offset and length of each seq's latest
// line, ids, senders, client ids, flags. Lines the server wrote start
// `{"message_id":"<id>","room_id":<room>,"seq":<n>,` and end with `}`: their fields are read
// from the raw bytes without decoding or JSON.parse (a quote inside a JSON string is always
// escaped, so a key pattern like `"visible":` can only be a key). Any other line is parsed in
// full (hand-edited logs, other key orders), so a line that is clearly bad stops open, naming
// the file and line. The last non-blank line is always parsed in full. A line that passed the
// cheap checks but is not valid JSON is found when it is read (readMessageAt), and reported.
import { createReadStream } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import type { Logger } from '../logger.js';
import type { Message } from '../types.js';
import { defaultFsOps, truncateDurably, type FsOps } from './fs-ops.js';
import { RoomIndex, type LineMeta } from './room-index.js';

const NEWLINE = 0x0a;
const CR = 0x0d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const CLOSE_BRACE = 0x7d;
const ZERO = 0x30;
const NINE = 0x39;
/** Read size of the streaming scans. */
const CHUNK = 1024 * 1024;

const ID_PREFIX = '{"message_id":"';
const SENDER_ID = '"sender_id":"';
const ROLE_USER = '"role":"user"';
const VISIBLE = '"visible":';
const DELETED = '"deleted":';
const CLIENT = '"client_msg_id":"';

export interface ScannedLog {
  index: RoomIndex;
  /** Non-blank lines (messages and versions). */
  lines: number;
  /** File size after recovery: where the next append lands. */
  size: number;
}

interface BadLine {
  lineNo: number;
  byteOffset: number;
  reason: string;
}

/**
 * Calls `onLine` for every complete line of the file's first `size` bytes, streaming. `text` is
 * the chunk decoded as Latin-1 (one character per byte, so string positions are byte
 * positions; searching a string avoids a native call per search), the line is
 * [start, stop) of both `chunk` and `text`. Returns the bytes after the last newline.
 */
export async function forEachLine(
  path: string,
  from: number,
  size: number,
  onLine: (chunk: Buffer, text: string, start: number, stop: number, offset: number, lineNo: number) => void,
): Promise<{ tail: Buffer; lines: number }> {
  let carry: Buffer = Buffer.alloc(0);
  let base = from; // file offset of carry[0]
  let lineNo = 0;
  if (size > from) {
    for await (const chunk of createReadStream(path, { start: from, end: size - 1, highWaterMark: CHUNK }) as AsyncIterable<Buffer>) {
      const data = carry.length > 0 ? Buffer.concat([carry, chunk]) : chunk;
      const last = data.lastIndexOf(NEWLINE);
      if (last < 0) {
        carry = Buffer.from(data);
        continue;
      }
      const text = data.toString('latin1', 0, last + 1);
      let start = 0;
      for (let nl = text.indexOf('\n'); nl >= 0; nl = text.indexOf('\n', start)) {
        lineNo++;
        onLine(data, text, start, nl, base + start, lineNo);
        start = nl + 1;
      }
      base += start;
      carry = Buffer.from(data.subarray(start)); // a copy: the chunk is not kept alive
    }
  }
  return { tail: carry, lines: lineNo };
}

/**
 * Scans a log (from `resume.from`, with the index that covers the bytes before it, when a
 * persisted index was loaded) and recovers its tail. With `repair` false (rebuilding part of an
 * index over bytes already checked, of a log in use) a bad last line throws instead of being cut.
 */
export async function scanRoomLog(
  path: string,
  roomId: string,
  logger: Logger,
  fileSize: number,
  resume?: { index: RoomIndex; from: number },
  repair = true,
): Promise<ScannedLog> {
  // Lines after the persisted index are added to it: its id and client tables must be in.
  if (resume && resume.from < fileSize) await resume.index.loadTables();
  // What follows the id on a server line, as the Latin-1 view of its UTF-8 bytes.
  const afterId = Buffer.from(`","room_id":${JSON.stringify(roomId)},"seq":`, 'utf8').toString('latin1');
  const from = resume?.from ?? 0;
  const index = resume?.index ?? new RoomIndex();
  let lines = 0;
  let bad: BadLine | undefined;
  // The last non-blank line if it was only shape-checked: parsed in full at the end (its index
  // entry is added only then).
  let lastFast: { offset: number; length: number; lineNo: number; meta: LineMeta } | undefined;
  let lastLineEnd = from;
  const cursors: Cursors = { text: '', client: -1, role: -1 };
  const { tail } = await forEachLine(path, from, fileSize, (chunk, text, start, stop, offset, lineNo) => {
    const length = stop - start;
    lastLineEnd = offset + length + 1;
    if (length === 0) return;
    if (bad) {
      if (isBlank(chunk.subarray(start, stop))) return;
      throw corruptLine(path, bad); // a bad line with more lines after it
    }
    if (text !== cursors.text) Object.assign(cursors, { text, client: -1, role: -1 });
    const fast = fastMeta(chunk, text, start, stop, afterId, cursors);
    if (fast !== undefined) {
      if (lastFast) index.add(lastFast.meta, lastFast.offset, lastFast.length);
      lastFast = { offset, length, lineNo, meta: fast };
      lines++;
      return;
    }
    const parsed = parseLine(chunk.toString('utf8', start, stop), roomId);
    if (parsed === BLANK) return;
    if (typeof parsed === 'string') {
      bad = { lineNo, byteOffset: offset, reason: parsed };
      if (lastFast) index.add(lastFast.meta, lastFast.offset, lastFast.length); // not the last line after all
      lastFast = undefined;
      return;
    }
    if (lastFast) index.add(lastFast.meta, lastFast.offset, lastFast.length);
    lastFast = undefined;
    index.add(metaOf(parsed), offset, length);
    lines++;
  });

  let end = fileSize;
  let cutReason: string | undefined;
  if (tail.length > 0) {
    end = lastLineEnd;
    cutReason = 'last line has no trailing newline';
  }
  if (!bad && lastFast) {
    // The last line is where a crash leaves damage: check it for real.
    const handle = await open(path, 'r');
    let bytes: Buffer;
    try {
      bytes = await readAt(handle, lastFast.offset, lastFast.length);
    } finally {
      await handle.close();
    }
    const parsed = parseLine(bytes.toString('utf8'), roomId);
    if (typeof parsed === 'string' || parsed === BLANK) {
      bad = { lineNo: lastFast.lineNo, byteOffset: lastFast.offset, reason: typeof parsed === 'string' ? parsed : 'blank' };
      lines--;
    } else {
      index.add(metaOf(parsed), lastFast.offset, lastFast.length);
    }
  }
  if (bad) {
    end = bad.byteOffset;
    cutReason = `last line ${bad.lineNo} is unreadable (${bad.reason})`;
  }
  if (end < fileSize) {
    if (!repair) throw new Error(`room log ${path}: ${cutReason}`);
    await truncateDurably(path, end);
    logger.warn({ file: path, reason: cutReason, kept_bytes: end, cut_bytes: fileSize - end }, 'room log had a torn last line; cut it off');
  }
  return { index, lines, size: end };
}

function isBlank(line: Buffer): boolean {
  for (const b of line) if (b !== 0x20 && b !== 0x09 && b !== CR) return false;
  return true;
}

export function metaOf(m: Message): LineMeta {
  return {
    messageId: m.message_id,
    seq: m.seq,
    senderId: m.sender_id ?? '', // imported messages are nobody's (SPEC §10)
    clientMsgId: m.client_msg_id,
    visible: m.visible,
    person: m.role === 'user' && m.visible && !m.deleted,
  };
}

/**
 * Where the next `"client_msg_id":"` and `"role":"user"` are in a chunk's text: keys that may be
 * missing from a line are searched once per occurrence, not once per line (a search that finds
 * nothing in its line would otherwise run on to the end of the chunk, for every line).
 */
interface Cursors {
  text: string;
  client: number;
  role: number;
}

function nextAt(text: string, key: string, from: number, cached: number): number {
  if (cached >= from) return cached;
  const at = text.indexOf(key, from);
  return at < 0 ? Infinity : at;
}

/**
 * Index fields of a line shaped like the server writes it, read from the chunk's Latin-1 view
 * `text[start, stop)` (same positions in `chunk`); undefined if the line is not that shape (it
 * is then parsed in full).
 */
function fastMeta(chunk: Buffer, text: string, start: number, stop: number, afterId: string, cursors: Cursors): LineMeta | undefined {
  let last = stop - 1;
  if (text.charCodeAt(last) === CR) last--;
  if (text.charCodeAt(last) !== CLOSE_BRACE || !text.startsWith(ID_PREFIX, start)) return undefined;
  const idStart = start + ID_PREFIX.length;
  const idEnd = plainString(text, idStart, stop);
  if (idEnd <= idStart || !text.startsWith(afterId, idEnd)) return undefined;
  const seqStart = idEnd + afterId.length;
  const first = text.charCodeAt(seqStart);
  if (!(first > ZERO && first <= NINE)) return undefined; // seq >= 1, no leading zero
  let seq = 0;
  let i = seqStart;
  for (; i < stop && i - seqStart < 10; i++) {
    const c = text.charCodeAt(i);
    if (c < ZERO || c > NINE) break;
    seq = seq * 10 + (c - ZERO);
  }
  if (text.charCodeAt(i) !== COMMA || seq > 2 ** 31 - 1) return undefined;

  // Keys every message has: found in this line, or the line is not the expected shape.
  const senderAt = text.indexOf(SENDER_ID, i);
  if (senderAt < 0 || senderAt >= stop) return undefined;
  const senderEnd = plainString(text, senderAt + SENDER_ID.length, stop);
  const visibleAt = text.indexOf(VISIBLE, senderAt);
  const deletedAt = text.indexOf(DELETED, senderAt);
  if (senderEnd < 0 || visibleAt < 0 || visibleAt >= stop || deletedAt < 0 || deletedAt >= stop) return undefined;
  const visible = text.charCodeAt(visibleAt + VISIBLE.length) === 0x74; // t
  const deleted = text.charCodeAt(deletedAt + DELETED.length) === 0x74;
  let clientMsgId: string | undefined;
  cursors.client = nextAt(text, CLIENT, i, cursors.client);
  if (cursors.client < stop) {
    const from = cursors.client + CLIENT.length;
    const clientEnd = plainString(text, from, stop);
    if (clientEnd < 0) return undefined; // escapes: let JSON.parse read it
    clientMsgId = utf8(chunk, text, from, clientEnd);
  }
  cursors.role = nextAt(text, ROLE_USER, i, cursors.role);
  const person = visible && !deleted && cursors.role < stop;
  return {
    messageId: utf8(chunk, text, idStart, idEnd),
    seq,
    senderId: utf8(chunk, text, senderAt + SENDER_ID.length, senderEnd),
    clientMsgId,
    visible,
    person,
  };
}

/**
 * The UTF-8 text of chunk[from, to), as a string of its own: a substring of the chunk's text
 * would keep the whole chunk alive wherever it is stored (a sender id in a room index).
 */
function utf8(chunk: Buffer, _text: string, from: number, to: number): string {
  return chunk.toString('utf8', from, to);
}

/** The index of the closing quote of a string starting at `from` with no escapes; -1 otherwise. */
function plainString(text: string, from: number, stop: number): number {
  for (let i = from; i < stop; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) return i;
    if (c === BACKSLASH || c < 0x20) return -1;
  }
  return -1;
}

const BLANK = Symbol('blank line');

/** The message, or why the line is not one. */
export function parseLine(line: string, roomId: string): Message | string | typeof BLANK {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch (err) {
    return line.trim() === '' ? BLANK : (err as Error).message;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return 'not a JSON object';
  const m = value as Partial<Message>;
  if (typeof m.message_id !== 'string' || m.message_id === '') return 'no message_id';
  if (typeof m.seq !== 'number' || !Number.isInteger(m.seq) || m.seq < 1 || m.seq > 2 ** 31 - 1) return 'no valid seq';
  if (m.room_id !== roomId) return `room_id ${JSON.stringify(m.room_id)} does not match the file`;
  return m as Message;
}

function corruptLine(path: string, bad: BadLine): Error {
  return new Error(
    `Room log ${path} is corrupt at line ${bad.lineNo} (${bad.reason}); only a torn last line is repaired automatically. ` +
      'Repair or restore the file, then start again.',
  );
}

/** A log line that cannot be a message (told apart from a read that failed: that may pass). */
export class CorruptLogError extends Error {}

/** The error for a line found unreadable when it is read (after open). */
export function corruptAt(path: string, offset: number, reason: string): Error {
  return new CorruptLogError(
    `Room log ${path} is corrupt at byte ${offset} (${reason}); the message there cannot be read. Repair or restore the file.`,
  );
}

/**
 * Reads `length` bytes at `position` (positional read; any file size), through `read` (the
 * store's FsOps seam for reads a test must be able to fail).
 */
export async function readAt(handle: FileHandle, position: number, length: number, read: FsOps['read'] = defaultFsOps.read): Promise<Buffer> {
  const buf = Buffer.allocUnsafe(length);
  let done = 0;
  while (done < length) {
    const bytesRead = await read(handle, buf, done, length - done, position + done);
    if (bytesRead === 0) throw new Error(`unexpected end of file at ${position + done}`);
    done += bytesRead;
  }
  return buf;
}
