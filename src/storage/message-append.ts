// Messages on their way into a room log: serialised as JSON Lines, appended, and put in the
// room's index once durable (file-store.ts runs it inside a room's commit or creation). Large
// appends (an import: thousands of messages) are serialised and indexed in time slices.
import { cloneJson } from '../clone.js';
import { TimeSlices } from '../time-slices.js';
import type { Message } from '../types.js';
import { metaOf } from './log-reader.js';
import type { MessageLogs } from './message-logs.js';
import { RoomIndex, type LineMeta } from './room-index.js';
import type { RoomMessages } from './room-messages.js';
import type { LogMark } from './state-journal.js';

const copy = cloneJson;

/**
 * Starts appending messages to the room's log. The copies are serialised before anything is
 * written (what is stored is what was committed), in time slices: an import brings thousands
 * of messages (SPEC §10: no import holds the event loop over 100 ms). The room's commit queue
 * (or, for a room being created, `creating`) keeps any other write to its log out meanwhile.
 * `apply` puts the lines in the indexes once the append is durable; `undo` takes a durable
 * append back off the log. A new room's index (`fresh`) is built off to the side, also in
 * slices, once the lines are durable and before `written` resolves, so `apply` only installs it.
 */
export async function appendMessages(logs: MessageLogs, index: RoomMessages, roomId: string, messages: readonly Message[], fresh = false): Promise<MessageAppend> {
  if (messages.length === 0) return NO_APPEND;
  const lines = await serialiseLines(messages);
  let offsets: number[] = [];
  let prepared: RoomIndex | undefined;
  const sizeBefore = logs.sizeOf(roomId);
  let logged = false;
  const written = logs.append(roomId, lines.bytes).then(async ({ start }) => {
    offsets = offsetsOf(start, lines.lengths);
    logged = true;
    if (fresh) prepared = await buildIndex(lines.metas, offsets, lines.lengths);
  });
  return {
    written,
    apply: () =>
      prepared
        ? index.install(roomId, prepared, lines.added, offsets, lines.lengths, lines.metas)
        : index.apply(roomId, lines.added, offsets, lines.lengths, lines.metas),
    undo: async () => {
      // The state write may fail while the append still runs beside it: let it finish first.
      await written.catch(() => undefined);
      if (logged) await logs.cutBack(roomId, sizeBefore);
    },
  };
}

/** The commit's message with the highest new seq (past `lastSeq`), or undefined if it adds none. */
export function lastAppended(messages: readonly Message[], lastSeq: number): LogMark | undefined {
  let top: Message | undefined;
  for (const m of messages) if (m.seq > lastSeq && (!top || m.seq >= top.seq)) top = m;
  return top && { seq: top.seq, id: top.message_id };
}

/** Messages on their way into a room log (appendMessages). */
export interface MessageAppend {
  /** Resolves once the append is durable. */
  written: Promise<void>;
  apply(): void;
  undo(): Promise<void>;
}

/** Messages as log lines: the stored copies, each line's bytes and index entry, the text to append. */
interface SerialisedLines {
  added: Message[];
  /** Bytes of each line without its newline. */
  lengths: number[];
  metas: LineMeta[];
  bytes: Buffer;
}

/**
 * Copies and serialises messages as JSON Lines, yielding the event loop between slices of about
 * 10 ms (a commit of one message never yields). Each slice's text is encoded once: a buffer per
 * line joined afterwards copied every byte twice. The lists are built by push, so they are packed
 * whatever kind of array the commit brought: optimised code meeting another elements kind (an
 * empty array, a holey one) deoptimised and was compiled again (see clone.ts).
 */
async function serialiseLines(messages: readonly Message[]): Promise<SerialisedLines> {
  const slices = new TimeSlices();
  const added: Message[] = [];
  const lengths: number[] = [];
  const metas: LineMeta[] = [];
  const pieces: Buffer[] = [];
  let text = '';
  for (const m of messages) {
    const stored = copy(m);
    added.push(stored);
    metas.push(metaOf(stored));
    const line = JSON.stringify(stored);
    lengths.push(Buffer.byteLength(line, 'utf8'));
    text += line + '\n';
    if (slices.due()) {
      pieces.push(Buffer.from(text, 'utf8'));
      text = '';
      await slices.pause();
    }
  }
  pieces.push(Buffer.from(text, 'utf8'));
  return { added, lengths, metas, bytes: pieces.length === 1 ? pieces[0]! : Buffer.concat(pieces) };
}

/** Where each line starts, the first at `start`. */
function offsetsOf(start: number, lengths: readonly number[]): number[] {
  const offsets: number[] = [];
  let at = start;
  for (const length of lengths) {
    offsets.push(at);
    at += length + 1;
  }
  return offsets;
}

/** A new room's index of durable lines, built in time slices before it is installed (RoomMessages.install). */
async function buildIndex(metas: readonly LineMeta[], offsets: readonly number[], lengths: readonly number[]): Promise<RoomIndex> {
  const slices = new TimeSlices();
  const index = new RoomIndex();
  for (let i = 0; i < metas.length; i++) {
    index.add(metas[i]!, offsets[i]!, lengths[i]!);
    if (i % 256 === 255) await slices.pause();
  }
  return index;
}

/** The append of a commit without messages. */
const NO_APPEND: MessageAppend = { written: Promise.resolve(), apply: () => undefined, undo: () => Promise.resolve() };
