// Markdown export (SPEC §9): a header about the room, then every visible message in `seq`
// order, with a heading where each round starts. Message texts are Markdown already and are written as they are. The output is
// streamed in chunks with backpressure; only small maps are kept, never the messages.
import type { Message } from '../types.js';
import { cleanText, ExportWords, type ExportInput } from './format.js';
import { ChunkWriter } from './stream.js';
import { exportItems, type ReplyRef } from './walk.js';

export type { ExportInput } from './format.js';

/**
 * Writes the export to `out` and ends it; resolves once `out` has finished. Rejects (leaving
 * `out` to the caller to destroy) when `out` errors or closes early.
 */
export async function writeMarkdownExport(input: ExportInput, out: NodeJS.WritableStream): Promise<void> {
  const words = new ExportWords(input);
  const w = new ChunkWriter(out);
  w.push(renderHeader(words));
  for await (const item of exportItems(input.messages, { findEarlier: input.findEarlier })) {
    if (item.kind === 'round') w.push(`## ${words.labels.round(item.number)}\n\n`);
    else w.push(renderMessage(item.message, item.reply, words));
    await w.flush();
  }
  await w.end();
}

function renderHeader(words: ExportWords): string {
  const { labels, room, timezone } = words;
  const lines: string[] = [];
  const field = (name: string, value: string): void => {
    // An announcement is a member's text too: no line of it becomes a heading either.
    lines.push(`- **${name}**${labels.colon}${indentContinuation(escapeHtmlBlockStarts(value))}`);
  };
  lines.push(`# ${labels.title}${labels.colon}${escapeInline(room.room_name)}`, '');
  field(labels.description, room.room_description.trim() || labels.none);
  const announcement = words.announcement();
  field(labels.announcement, announcement ? announcement.text + announcement.by : labels.none);
  const system = words.systemAnnouncement();
  if (system) field(labels.systemAnnouncement, system);
  field(labels.mode, words.mode());
  field(labels.exportedAt, words.exportedAt());
  field(labels.timezone, timezone);
  field(labels.roomId, `\`${room.room_id}\``);
  lines.push('', `## ${labels.members}`, '');
  if (room.members.length === 0) lines.push(labels.none);
  for (const member of room.members) {
    lines.push(`- **${escapeInline(member.name)}** — ${words.remarks(member)}`);
  }
  lines.push('', '---', '', '');
  return lines.join('\n');
}

/** Continuation lines of a list item value are indented so they stay in the item. */
function indentContinuation(value: string): string {
  return value.replace(/\n/g, '\n  ');
}

function renderMessage(m: Message, reply: ReplyRef | 'unknown' | null, words: ExportWords): string {
  const { labels } = words;
  const parts: string[] = [];
  const meta = [`#${m.seq}`, escapeInline(m.sender), words.role(m.role), words.time(m.timestamp)];
  let heading = `### ${meta.join(' · ')}`;
  if (m.edited_at && !m.deleted) heading += ` ${labels.edited}`;
  parts.push(heading, '');
  if (reply) {
    parts.push(`> ${words.reply(reply)}`, '');
  }
  if (m.deleted) {
    parts.push(`*${labels.deleted}*`, '');
  } else {
    const text = closeOpenFence(escapeHtmlBlockStarts(cleanText(m.text_content))).trim();
    if (text) parts.push(text, '');
  }
  const att = words.attachment(m);
  if (att) {
    const type = att.type ? ` (${att.type})` : '';
    parts.push(`${labels.attachment}${labels.colon}[${escapeLinkText(att.name)}](${linkDestination(att.url)})${type}`, '');
  }
  parts.push('');
  return parts.join('\n');
}

function escapeLinkText(text: string): string {
  return text.replace(/([\\[\]*_`<>])/g, '\\$1');
}

/** A name or title shown as written: `_bob_` or `__init__` must not turn into emphasis. */
function escapeInline(text: string): string {
  return escapeLinkText(text).replace(/\n/g, ' ');
}

/**
 * Container markers a line may start with: block quotes (`>`) and list items (`-`, `+`, `*`,
 * `1.`, `1)`), nested any number of times. A heading inside them is still a heading.
 */
const CONTAINERS = /^(?:[ \t]{0,3}>[ \t]?|[ \t]{0,3}(?:[-+*]|\d{1,9}[.)])[ \t]+)*/;
/** An ATX heading opener after the containers: 1–6 `#` then a space, a tab or the line's end. */
const ATX = /^([ \t]*)(#{1,6}(?:[ \t]|$))/;
/** A setext underline after the containers: a run of `=` or of `-` alone on its line. */
const SETEXT = /^([ \t]{0,3})([=-]+[ \t]*)$/;
/** A thematic break (`* * *`, `- - -`): a rule, never a heading (an unbroken `---` may underline one). */
const THEMATIC_BREAK = /^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$/;
/** Raw HTML heading tags (`<h1>` … `</h6>`), which Markdown passes through as HTML. */
const HTML_HEADING = /<(?=\/?h[1-6](?:[\s/>]|$))/gi;

/**
 * A message's text made safe to embed in the Markdown export (SPEC §10: an export cannot be
 * forged from inside a message). Outside code fences:
 * - no line becomes a heading, whatever its spelling: an ATX opener (`#`…`######` followed by
 *   a space or a tab, also inside quotes and list items) gets its `#` escaped, a setext
 *   underline (`===`, `---` under a paragraph line) gets its first character escaped, and raw
 *   `<h1>`…`<h6>` tags are escaped; so `###\t#77 · Bob`, `### \#78`, `### &#35;79` and an
 *   underlined line all show as the text they are, never as a message heading;
 * - HTML blocks that only their own end marker closes (CommonMark types 1–5: `<script`, `<pre`,
 *   `<style`, `<textarea`, `<!--`, `<?`, `<!X`, `<![CDATA[`) would swallow every later message
 *   of the document: their `<` is escaped, so the line shows as written. (Other HTML blocks end
 *   at the blank line after each message.)
 * Indented lines are treated alike (inside a list item an indented line may be a heading): in
 * an indented code block the escape shows, a small price for an export that cannot be forged.
 */
export function escapeHtmlBlockStarts(text: string): string {
  const fences = new FenceTracker();
  return text
    .split('\n')
    .map((line) => (fences.inCode(line) ? line : neutraliseLine(line)))
    .join('\n');
}

function neutraliseLine(line: string): string {
  const line1 = line
    .replace(/^( {0,3})<(?=(?:script|pre|style|textarea)(?:[\s>]|$)|!--|\?|![A-Za-z]|!\[CDATA\[)/i, '$1\\<')
    .replace(HTML_HEADING, '\\<');
  // `* * *` and `- - -` are thematic breaks, not list markers (and never setext underlines).
  if (THEMATIC_BREAK.test(line1) && !/^[ \t]*-+[ \t]*$/.test(line1)) return line1;
  const prefix = CONTAINERS.exec(line1)?.[0] ?? '';
  const rest = line1.slice(prefix.length);
  const atx = ATX.exec(rest);
  if (atx) return `${prefix}${atx[1]}\\${rest.slice(atx[1]!.length)}`;
  const setext = SETEXT.exec(rest);
  if (setext) return `${prefix}${setext[1]}\\${setext[2]}`;
  return line1;
}

/** Follows a text's code fences line by line (CommonMark: ``` or ~~~, closed by a run at least as long). */
class FenceTracker {
  open: { char: string; len: number } | null = null;

  /** Takes the next line; true when it is a fence line or inside a fenced block. */
  inCode(line: string): boolean {
    const m = /^ {0,3}(`{3,}|~{3,})(.*)$/.exec(line);
    if (!m) return this.open !== null;
    const fence = m[1] ?? '';
    const rest = m[2] ?? '';
    if (!this.open) {
      if (fence[0] === '`' && rest.includes('`')) return false; // inline code, not a fence opener
      this.open = { char: fence[0] ?? '`', len: fence.length };
    } else if (fence[0] === this.open.char && fence.length >= this.open.len && rest.trim() === '') {
      this.open = null;
    }
    return true;
  }
}

function linkDestination(url: string): string {
  return `<${url.replace(/[<>\n\r]/g, (c) => encodeURIComponent(c))}>`;
}

/**
 * A message with a code fence it never closes would swallow the rest of the document:
 * close it at the end of the message.
 */
export function closeOpenFence(text: string): string {
  const fences = new FenceTracker();
  for (const line of text.split('\n')) fences.inCode(line);
  return fences.open ? `${text}\n${fences.open.char.repeat(fences.open.len)}` : text;
}
