// JSON request bodies. An ordinary tool call's body is small and parsed with one JSON.parse; a
// large one (import_chat_history carries a room's whole history: megabytes) is decoded and
// parsed a piece at a time, yielding the event loop between pieces, so that no parse holds it
// for long (SPEC §10: neither an import nor an export blocks the loop for more than 100 ms).
// Decoding alone (UTF-8 to a string) cost as much as the parse: both are sliced.
//
// The sliced parse is @discoveryjs/json-ext's parseChunked: it splits the text at structural
// points and hands each fragment to JSON.parse, so it accepts and refuses what JSON.parse does.
// The one difference is a key "__proto__": an object split across fragments is merged with
// Object.assign, which makes such a key's object the merged object's prototype (that object's
// only: nothing outside the body changes) where JSON.parse makes an own property. Such a body
// is refused (`refuseMergedProto`): every tool refuses a "__proto__" key anyway (imports by name,
// the others as an unknown key), so the answer is the validation_error it gets today.
import { StringDecoder } from 'node:string_decoder';
import { parseChunked } from '@discoveryjs/json-ext';
import { TimeSlices } from '../time-slices.js';

/** Bodies of this size or more are parsed in slices (smaller ones take a few ms at most). */
export const SLICED_PARSE_BYTES = 256 * 1024;
/** Bytes decoded and handed to the parser at a time, between two time checks. */
const PIECE_BYTES = 64 * 1024;

/**
 * The body's JSON value (`sizes`: tests parse small bodies in small pieces). Throws JSON.parse's SyntaxError on malformed JSON, and
 * `MergedProtoKeyError` for a large body whose objects had a "__proto__" key merged.
 */
export async function parseJsonBody(raw: Buffer, sizes: { slicedFrom?: number; pieceBytes?: number } = {}): Promise<unknown> {
  if (raw.length < (sizes.slicedFrom ?? SLICED_PARSE_BYTES)) return JSON.parse(raw.toString('utf8'));
  const slices = new TimeSlices();
  // The value counts once its root closed: parseChunked (1.1.0) returns an unclosed root such as
  // `[` or `{"a":[1]` as if it were closed, where JSON.parse refuses it.
  let root: { value: unknown } | undefined;
  await parseChunked(pieces(raw, sizes.pieceBytes ?? PIECE_BYTES, slices), { onRootValue: (value) => (root = { value }) });
  if (!root) throw new SyntaxError('Unexpected end of JSON input');
  await refuseMergedProto(root.value, slices);
  return root.value;
}

/**
 * The body as text, a piece at a time (a character split between pieces is kept whole). No piece
 * starts with white space: parseChunked (1.1.0) drops white space at the start of a piece that
 * follows an unfinished token, so `1 2` cut after `1` would read as 12.
 */
async function* pieces(raw: Buffer, pieceBytes: number, slices: TimeSlices): AsyncGenerator<string> {
  // StringDecoder decodes as Buffer#toString does (a byte-order mark stays, as JSON.parse wants).
  const decoder = new StringDecoder('utf8');
  for (let at = 0; at < raw.length; ) {
    let end = Math.min(raw.length, at + pieceBytes);
    while (end < raw.length && isJsonSpace(raw[end]!)) end++;
    yield decoder.write(raw.subarray(at, end));
    at = end;
    await slices.pause();
  }
  const rest = decoder.end();
  if (rest !== '') yield rest;
}

/** JSON's white space (ASCII bytes: never part of a multi-byte character). */
function isJsonSpace(byte: number): boolean {
  return byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09;
}

/** A large body in which a key "__proto__" became an object's prototype while it was parsed. */
export class MergedProtoKeyError extends Error {
  constructor() {
    super('Key "__proto__" is not allowed in a request body');
  }
}

/** Throws MergedProtoKeyError if any object of the value has another prototype than Object's. Iterative, in time slices. */
async function refuseMergedProto(value: unknown, slices: TimeSlices): Promise<void> {
  const stack: unknown[] = [value];
  let visited = 0;
  while (stack.length > 0) {
    const node = stack.pop();
    if (node === null || typeof node !== 'object') continue;
    if (++visited % 4096 === 0) await slices.pause();
    if (Array.isArray(node)) {
      for (const item of node) stack.push(item);
      continue;
    }
    if (Object.getPrototypeOf(node) !== Object.prototype) throw new MergedProtoKeyError();
    for (const key of Object.keys(node)) stack.push((node as Record<string, unknown>)[key]);
  }
}
