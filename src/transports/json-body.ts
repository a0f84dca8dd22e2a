// JSON request bodies. An ordinary tool call's body is small and parsed with one JSON.parse; a
// large one (import_chat_history carries a room's whole history: megabytes) is decoded and
// parsed a piece at a time, yielding the event loop between pieces, so that no parse holds it
// for long (SPEC §10: neither an import nor an export blocks the loop for more than 100 ms).
// Decoding alone (UTF-8 to a string) cost as much as JSON.parse: the parser decodes piece by piece.
//
// The sliced parse is @streamparser/json's JSONParser, a tokenizer and parser driven byte by
// byte, so a piece may end anywhere (inside a string, a number, an escape). It is
// slower than JSON.parse (about 50 ms of CPU a MB against 3), which only large bodies pay. It
// accepts and refuses what JSON.parse does (test/unit/json-body.test.ts fuzzes the two against
// each other), and keeps a key "__proto__" as an own property, as JSON.parse does.
// (@discoveryjs/json-ext's parseChunked, tried first, hands fragments to JSON.parse and mends
// them at the cuts: it accepted `[1,` + `]`, `1` + ` 2` as 12, and an unclosed `[`.)
import { isUtf8 } from 'node:buffer';
import { StringDecoder } from 'node:string_decoder';
import { JSONParser } from '@streamparser/json';
import { TimeSlices } from '../time-slices.js';

/** Bodies of this size or more are parsed in slices (smaller ones take a few ms at most). */
export const SLICED_PARSE_BYTES = 256 * 1024;
/** Bytes decoded and parsed at a time, between two time checks (a few ms each). */
const PIECE_BYTES = 32 * 1024;
/** U+FEFF as the body may carry it: in UTF-8, or escaped with its hex digits in any letter case. */
const BYTE_ORDER_MARKS: readonly Buffer[] = [Buffer.from([0xef, 0xbb, 0xbf]), ...letterCases('\\ufeff').map((escape) => Buffer.from(escape))];

/**
 * The body's JSON value (`sizes`: tests parse small bodies in small pieces). Throws a
 * SyntaxError on malformed JSON, as JSON.parse does.
 */
export async function parseJsonBody(raw: Buffer, sizes: { slicedFrom?: number; pieceBytes?: number } = {}): Promise<unknown> {
  if (raw.length < (sizes.slicedFrom ?? SLICED_PARSE_BYTES)) return JSON.parse(raw.toString('utf8'));
  const pieceBytes = sizes.pieceBytes ?? PIECE_BYTES;
  const slices = new TimeSlices();
  // U+FEFF (a byte-order mark) is where the parser and JSON.parse part: its tokenizer skips one
  // after `{` or `[`, and its string decoder drops one that begins a decoded run. A body holding
  // one (rare: an invisible character) is decoded in slices, then parsed by one JSON.parse:
  // about 3 ms a MB, so under the 100 ms up to bodies of some 25 MB.
  if (BYTE_ORDER_MARKS.some((mark) => raw.includes(mark))) return JSON.parse(await decodeInSlices(raw, pieceBytes, slices));
  // Only the root value is emitted: the parser keeps no copies of the values inside it.
  const parser = new JSONParser({ paths: ['$'], keepStack: false });
  let root: { value: unknown } | undefined;
  let failure: unknown;
  parser.onValue = ({ value, stack }) => {
    if (stack.length === 0) root = { value };
  };
  parser.onError = (err) => (failure ??= err);
  // Valid UTF-8 (every real body) goes in as bytes: the tokenizer decodes it as JSON.parse's
  // text would read, a character cut between pieces included, and decoding it to a string first
  // doubled the garbage (it encodes strings back to bytes). Invalid UTF-8 goes in as text decoded
  // as Buffer#toString decodes it (invalid bytes become U+FFFD; the tokenizer would refuse them).
  const decoder = isUtf8(raw) ? undefined : new StringDecoder('utf8');
  for (let at = 0; at < raw.length && failure === undefined; at += pieceBytes) {
    const piece = raw.subarray(at, at + pieceBytes);
    write(parser, decoder ? decoder.write(piece) : piece);
    await slices.pause();
  }
  if (decoder && failure === undefined) write(parser, decoder.end());
  if (failure === undefined && !parser.isEnded) parser.end(); // reports a value cut short
  if (failure !== undefined || root === undefined) throw new SyntaxError(`Malformed JSON: ${failure instanceof Error ? failure.message : 'no value'}`);
  return root.value;
}

/** `text` in every mix of upper and lower case of its hex letters (the `u` of an escape stays lower case). */
function letterCases(text: string): string[] {
  let out = [''];
  for (const [i, c] of [...text].entries()) {
    const cases = i > 1 && /[a-f]/.test(c) ? [c, c.toUpperCase()] : [c];
    out = out.flatMap((prefix) => cases.map((x) => prefix + x));
  }
  return out;
}

/** The body as text, decoded a piece at a time as Buffer#toString decodes it. */
async function decodeInSlices(raw: Buffer, pieceBytes: number, slices: TimeSlices): Promise<string> {
  const decoder = new StringDecoder('utf8');
  let text = '';
  for (let at = 0; at < raw.length; at += pieceBytes) {
    text += decoder.write(raw.subarray(at, at + pieceBytes));
    await slices.pause();
  }
  return text + decoder.end();
}

/** Text after the root value ended is refused, as JSON.parse refuses it, unless it is white space. */
function write(parser: JSONParser, piece: string | Buffer): void {
  if (piece.length === 0) return;
  if (!parser.isEnded) return parser.write(piece);
  const rest = typeof piece === 'string' ? piece : piece.toString('latin1');
  if (rest.replace(/[ \t\n\r]/g, '') !== '') throw new SyntaxError('Malformed JSON: text after the value');
}
