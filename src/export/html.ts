// HTML export (SPEC §9): one self-contained file that opens offline and looks like the page.
// The page's own stylesheet (public/styles.css) is inlined, messages use the page's markup
// (avatar, name, role badge, time, Markdown body, attachment), images of the room's own uploads
// are embedded as data URLs up to a size limit (linked above it), and a strict CSP (no script,
// no request of any kind, only the one inline stylesheet by its hash) guards whoever opens it.
// Message Markdown is rendered with marked, raw HTML in it shown as text except bare formatting
// tags, and the result passes sanitize-html's allowlist.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Marked, type Token, type Tokens, type TokensList } from 'marked';
import sanitizeHtml from 'sanitize-html';
import { TimeSlices } from '../time-slices.js';
import { PUBLIC_DIR } from '../paths.js';
import type { Message, Room } from '../types.js';
import { cleanText, ExportWords, type ExportInput } from './format.js';
import { imageDataUrl } from './images.js';
import { closeOpenFence } from './markdown.js';
import { isPlainText } from './pdf-markdown.js';
import { ChunkWriter } from './stream.js';
import { exportItems, type ReplyRef } from './walk.js';

/** An image upload up to this size is embedded; a larger one is linked only. */
export const HTML_IMAGE_MAX_BYTES = 2 * 1024 * 1024;
/** Embedded images of one export together; later ones are linked only. */
export const HTML_IMAGES_TOTAL_MAX_BYTES = 64 * 1024 * 1024;

export interface HtmlExportOptions {
  imageMaxBytes?: number;
  imagesTotalMaxBytes?: number;
}

const ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
const SPECIAL = /[&<>"']/;

export function escapeHtml(s: string): string {
  return SPECIAL.test(s) ? s.replace(/[&<>"']/g, (c) => ENTITIES[c] ?? c) : s;
}

const BARE_TAG = /<\/?(?:br|b|i|u|s|em|strong|del|ins|sub|sup|kbd|mark|small|details|summary|hr|p)\s*\/?>/gi;
const SAFE_HREF = /^(?:https?:|mailto:)/i;

/** Raw HTML in a message: kept only when it is nothing but bare formatting tags (as the page does). */
function htmlToken(text: string): string {
  const rest = text.replace(BARE_TAG, '');
  return /<[a-z!?/]/i.test(rest) ? escapeHtml(text) : text;
}

function makeMarked(imageLabel: string): Marked {
  return new Marked({
    gfm: true,
    breaks: true,
    async: false,
    renderer: {
      html(token: Tokens.HTML | Tokens.Tag) {
        return htmlToken(token.text ?? token.raw ?? '');
      },
      // An image in a message's text would be a request (the CSP refuses it): a link instead.
      image(token: Tokens.Image) {
        const label = `[${imageLabel}${token.text ? `: ${token.text}` : ''}]`;
        return SAFE_HREF.test(token.href) ? `<a href="${escapeHtml(token.href)}">${escapeHtml(label)}</a>` : escapeHtml(label);
      },
    },
  });
}

const SANITIZE: sanitizeHtml.IOptions = {
  allowedTags: [
    'p', 'br', 'b', 'i', 'u', 's', 'em', 'strong', 'del', 'ins', 'sub', 'sup', 'kbd', 'mark', 'small', 'details', 'summary', 'hr',
    'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'ul', 'ol', 'li', 'blockquote', 'pre', 'code', 'a', 'table', 'thead', 'tbody', 'tr', 'th', 'td', 'input', 'span',
  ],
  allowedAttributes: { a: ['href', 'target', 'rel'], ol: ['start'], input: ['type', 'checked', 'disabled'], th: ['align'], td: ['align'], code: ['class'] },
  allowedClasses: { code: [/^language-[\w-]+$/] },
  allowedSchemes: ['http', 'https', 'mailto'],
  allowedSchemesAppliedToAttributes: ['href'],
  allowProtocolRelative: false,
  disallowedTagsMode: 'escape',
  transformTags: {
    a: (tagName, attribs): sanitizeHtml.Tag => {
      const href = attribs.href?.trim();
      if (!href || !SAFE_HREF.test(href)) return { tagName: 'a', attribs: {} as Record<string, string> };
      return { tagName, attribs: { href, target: '_blank', rel: 'noopener noreferrer nofollow' } };
    },
    // Task list boxes only, never a form control that does anything.
    input: (_tagName, attribs) =>
      attribs.type === 'checkbox' ? { tagName: 'input', attribs: { type: 'checkbox', disabled: '', ...(attribs.checked !== undefined ? { checked: '' } : {}) } } : { tagName: 'span', attribs: {} },
  },
};

/** Plain text (no Markdown) as paragraphs: escaped, so it needs no sanitiser. */
function plainHtml(text: string): string {
  return text
    .split(/\n[ \t]*\n+/)
    .map((block) => `<p>${escapeHtml(block.trim()).replace(/\n/g, '<br>')}</p>`)
    .join('');
}

/** A message's Markdown as HTML straight from marked: still to be sanitised. */
function markdownHtml(text: string, marked: Marked): string {
  try {
    return marked.parse(closeOpenFence(text)) as string;
  } catch {
    return `<p>${escapeHtml(text)}</p>`;
  }
}

/** A message whose Markdown is longer than this is rendered and sanitised in pieces. */
const PIECE_CHARS = 4000;

/**
 * A long message's Markdown as HTML pieces, still to be sanitised each on its own: its top-level
 * blocks (marked's lexer) grouped up to about PIECE_CHARS of source each. One sanitiser pass over
 * a 32,000-character message takes tens of milliseconds; pieces let the export yield between them
 * (SPEC §10). Each piece is sanitised separately, so each comes out balanced and clean, and so
 * does their concatenation. Reference links resolve across pieces (the lexer's `links` travel
 * with each).
 */
function markdownPieces(text: string, marked: Marked): string[] {
  if (text.length <= PIECE_CHARS) return [markdownHtml(text, marked)];
  try {
    const tokens = marked.lexer(closeOpenFence(text));
    const pieces: string[] = [];
    let group: Token[] = [];
    let size = 0;
    const flush = () => {
      if (group.length === 0) return;
      pieces.push(marked.parser(Object.assign(group, { links: tokens.links }) as TokensList));
      group = [];
      size = 0;
    };
    for (const token of tokens) {
      group.push(token);
      size += token.raw.length;
      if (size >= PIECE_CHARS) flush();
    }
    flush();
    return pieces;
  } catch {
    return [`<p>${escapeHtml(text)}</p>`];
  }
}

const SANITIZE_BATCH: sanitizeHtml.IOptions = { ...SANITIZE, allowedTags: [...(SANITIZE.allowedTags as string[]), 'section'] };

/**
 * Sanitises many messages' HTML in one pass (the sanitiser's cost per call is about as large as
 * its cost per message): each is wrapped in a <section>, which no message can open or close
 * itself (raw HTML other than bare formatting tags is escaped), so the parser closes whatever a
 * message left open at its section's end and the output splits back into balanced pieces.
 */
export function sanitizeMany(htmls: string[]): string[] {
  if (htmls.length === 0) return [];
  const out = sanitizeHtml(htmls.map((h) => `<section>${h}</section>`).join(''), SANITIZE_BATCH);
  const parts = out.split('</section>');
  if (parts.length === htmls.length + 1 && parts.slice(0, -1).every((p) => p.startsWith('<section>')) && parts[parts.length - 1] === '') {
    return parts.slice(0, -1).map((p) => p.slice('<section>'.length));
  }
  return htmls.map((h) => sanitizeHtml(h, SANITIZE)); // never expected; one by one is always right
}

/** A message's Markdown as sanitised HTML. */
export function messageHtml(text: string, marked: Marked): string {
  return isPlainText(text) ? plainHtml(text) : (sanitizeMany([markdownHtml(text, marked)])[0] ?? '');
}

/** Messages rendered together: their Markdown is sanitised in one pass. */
const BATCH = 64;
/**
 * ...and at most about this many characters of their HTML: a pass over 64 long messages (64 ×
 * 32,000 characters) would hold the event loop for hundreds of milliseconds (SPEC §10: an
 * export never blocks it over 100 ms at a time); between passes the walk yields.
 */
const BATCH_CHARS = 16_000;

let pageCss: string | undefined;

/** The page's stylesheet, without anything that would load a resource. */
function pageStyles(): string {
  if (pageCss === undefined) {
    let css = '';
    try {
      css = readFileSync(path.join(PUBLIC_DIR, 'styles.css'), 'utf8');
    } catch {
      css = '';
    }
    pageCss = css.replace(/@import[^;]*;/g, '').replace(/url\([^)]*\)/g, 'none');
  }
  return pageCss;
}

/** Avatar colours: the page's hue per name, rounded to one of these classes (no style attributes under the CSP). */
const HUE_STEPS = 36;

const EXPORT_CSS = `
html, body { height: auto; }
body { display: block; min-height: 0; }
.export-page { max-width: 860px; margin: 0 auto; padding: 24px 16px 48px; }
.export-title { font-size: 1.5rem; margin: 0 0 2px; }
.export-subtitle { color: var(--muted); margin: 0 0 14px; font-size: 13px; }
.export-meta { border-collapse: collapse; width: 100%; margin: 0 0 18px; background: var(--surface); border: 1px solid var(--border); border-radius: var(--radius); font-size: 13.5px; }
.export-meta th { text-align: left; white-space: nowrap; color: var(--muted); font-weight: 600; padding: 6px 12px; width: 7em; vertical-align: top; }
.export-meta td { padding: 6px 12px; overflow-wrap: anywhere; }
.export-meta tr + tr > * { border-top: 1px solid var(--border); }
.export-meta .member { display: inline-block; margin: 0 12px 2px 0; }
.export-meta .muted, .msg .muted { color: var(--muted); }
.export-list { background: var(--surface); border: 1px solid var(--border); border-radius: var(--radius); padding: 8px 6px; }
.msg-reply { color: var(--muted); font-size: 12.5px; border-left: 3px solid var(--border); padding-left: 8px; margin: 2px 0 4px; }
.msg-seq { color: var(--muted); font-size: 11.5px; margin-left: auto; font-variant-numeric: tabular-nums; }
.export-footer { color: var(--muted); font-size: 12px; text-align: center; margin-top: 16px; }
.msg:hover { background: transparent; }
${Array.from({ length: HUE_STEPS }, (_, i) => `.hue-${i} { --hue: ${i * (360 / HUE_STEPS)}; }`).join('\n')}
`;

const hues = new Map<string, string>();

/** The page's hue per name (public/messages.js hueOf), as one of HUE_STEPS classes. */
function hueClass(name: string): string {
  const known = hues.get(name);
  if (known) return known;
  const cls = computeHueClass(name);
  if (hues.size > 10_000) hues.clear();
  hues.set(name, cls);
  return cls;
}

function computeHueClass(name: string): string {
  let hash = 0;
  for (const ch of name.toLowerCase()) hash = (hash * 31 + (ch.codePointAt(0) ?? 0)) >>> 0;
  const hue = Math.round((hash * 137.508) % 360);
  return `hue-${Math.round(hue / (360 / HUE_STEPS)) % HUE_STEPS}`;
}

const membersByRoom = new WeakMap<Room, Map<string, Room['members'][number]>>();

/** The room member of that name (case-insensitive); the map is built once per export. */
function memberOf(room: Room, name: string): Room['members'][number] | undefined {
  let byName = membersByRoom.get(room);
  if (!byName) {
    byName = new Map(room.members.map((m) => [m.name.toLowerCase(), m]));
    membersByRoom.set(room, byName);
  }
  return byName.get(name.toLowerCase());
}

function initialsOf(name: string): string {
  const chars = [...name];
  const first = (chars[0] ?? '?').toUpperCase();
  const last = chars[chars.length - 1] ?? '';
  return chars.length > 1 && /\d/.test(last) ? first + last : first;
}

/**
 * Writes the export to `out` and ends it; resolves once `out` has finished. Image files are
 * read one at a time and written out before the next.
 */
export async function writeHtmlExport(input: ExportInput, out: NodeJS.WritableStream, opts: HtmlExportOptions = {}): Promise<void> {
  const words = new ExportWords(input);
  const { labels } = words;
  const marked = makeMarked(labels.image);
  const css = `${pageStyles()}\n${EXPORT_CSS}`;
  const cssHash = createHash('sha256').update(css, 'utf8').digest('base64');
  const csp = `default-src 'none'; img-src data:; style-src 'sha256-${cssHash}'; base-uri 'none'; form-action 'none'`;
  const w = new ChunkWriter(out);
  const lang = escapeHtml(input.room.language || 'zh-CN');
  w.push(
    `<!doctype html>\n<html lang="${lang}">\n<head>\n<meta charset="utf-8">\n` +
      `<meta http-equiv="Content-Security-Policy" content="${csp}">\n` +
      `<meta name="referrer" content="no-referrer">\n<meta name="viewport" content="width=device-width, initial-scale=1">\n` +
      `<meta name="generator" content="Agent Chatroom">\n` +
      `<title>${escapeHtml(`${input.room.room_name} — ${labels.title}`)}</title>\n<style>${css}</style>\n</head>\n<body>\n<main class="export-page">\n`,
  );
  w.push(renderHeader(words));
  w.push(`<ol class="msg-list export-list" aria-label="${escapeHtml(labels.title)}">\n`);
  const maxImage = opts.imageMaxBytes ?? HTML_IMAGE_MAX_BYTES;
  let imageBudget = opts.imagesTotalMaxBytes ?? HTML_IMAGES_TOTAL_MAX_BYTES;
  let count = 0;
  type Pending = { html: string } | { message: Message; reply: ReplyRef | 'unknown' | null; body: string | null; raw: number };
  let pending: Pending[] = [];
  let raws: string[] = [];
  let rawChars = 0;
  const slices = new TimeSlices();
  const flush = async (): Promise<void> => {
    const clean = sanitizeMany(raws);
    await slices.pause();
    for (const p of pending) {
      if ('html' in p) {
        w.push(p.html);
        continue;
      }
      const m = p.message;
      // Read one image at a time, only now: a batch never holds the images of its messages.
      let image: Buffer | null = null;
      const file = words.ownUpload(m);
      if (file && imageBudget > 0) {
        image = await imageDataUrl(file, Math.min(maxImage, imageBudget));
        if (image) imageBudget -= image.length;
      }
      const [before, after] = renderMessage(m, p.reply, words, p.body ?? clean[p.raw] ?? '', image !== null);
      w.push(before);
      if (image) {
        await w.pushBytes(image);
        image = null;
        w.push(after);
      }
      await w.flush();
    }
    pending = [];
    raws = [];
    rawChars = 0;
  };
  for await (const item of exportItems(input.messages, { findEarlier: input.findEarlier })) {
    if (item.kind === 'round') {
      const label = words.round(item.number, item.timestamp);
      pending.push({ html: `<li class="round-sep" role="separator"><span>${escapeHtml(label)}</span></li>\n` });
    } else {
      count += 1;
      const m = item.message;
      const text = words.text(m);
      if (text && !isPlainText(text)) {
        const pieces = markdownPieces(text, marked);
        // The Markdown pass and the sanitiser pass run in separate slices.
        await slices.pause();
        if (pieces.length === 1) {
          raws.push(pieces[0]!);
          rawChars += pieces[0]!.length;
          pending.push({ message: m, reply: item.reply, body: null, raw: raws.length - 1 });
        } else {
          // A long message: its pieces are sanitised one by one, yielding in between.
          const clean: string[] = [];
          for (const piece of pieces) {
            clean.push(sanitizeMany([piece])[0] ?? '');
            await slices.pause();
          }
          pending.push({ message: m, reply: item.reply, body: clean.join(''), raw: -1 });
        }
      } else {
        pending.push({ message: m, reply: item.reply, body: text ? plainHtml(text) : '', raw: -1 });
      }
      if (pending.length >= BATCH || rawChars >= BATCH_CHARS) await flush();
    }
  }
  await flush();
  if (count === 0) w.push(`<li class="msg-empty muted">${escapeHtml(labels.none)}</li>\n`);
  w.push(`</ol>\n<p class="export-footer">${escapeHtml(`${labels.exportedAt}${labels.colon}${words.exportedAt()} (${words.timezone}) · Agent Chatroom`)}</p>\n</main>\n</body>\n</html>\n`);
  await w.end();
}

function renderHeader(words: ExportWords): string {
  const { labels, room, timezone } = words;
  const rows: Array<[string, string]> = [];
  rows.push([labels.room, `<strong>${escapeHtml(room.room_name)}</strong> <code>${escapeHtml(room.room_id)}</code>`]);
  rows.push([labels.mode, escapeHtml(words.mode())]);
  rows.push([labels.exportedAt, `${escapeHtml(words.exportedAt())} <span class="muted">${escapeHtml(timezone)}</span>`]);
  const members = room.members
    .map((m) => `<span class="member"><strong>${escapeHtml(m.name)}</strong><span class="muted">${escapeHtml(words.paren(words.remarks(m)))}</span></span>`)
    .join(' ');
  rows.push([`${labels.members} (${room.members.length})`, members || escapeHtml(labels.none)]);
  if (room.room_description.trim()) rows.push([labels.description, escapeHtml(cleanText(room.room_description.trim()))]);
  const ann = words.announcement();
  if (ann) rows.push([labels.announcement, escapeHtml(ann.text).replace(/\n/g, '<br>') + (ann.by ? ` <span class="muted">${escapeHtml(ann.by)}</span>` : '')]);
  const system = words.systemAnnouncement();
  if (system) rows.push([labels.systemAnnouncement, escapeHtml(system)]);
  const body = rows.map(([k, v]) => `<tr><th scope="row">${escapeHtml(k)}</th><td>${v}</td></tr>`).join('\n');
  return `<header>\n<h1 class="export-title">${escapeHtml(room.room_name)}</h1>\n<p class="export-subtitle">${escapeHtml(labels.title)}</p>\n<table class="export-meta">\n${body}\n</table>\n</header>\n`;
}

/**
 * A message's list item. With an image, the item is returned in two parts to be written around
 * the image's data URL (written as bytes by the caller); without one, the second part is empty.
 */
function renderMessage(m: Message, reply: ReplyRef | 'unknown' | null, words: ExportWords, bodyHtml: string, image: boolean): [string, string] {
  const { labels } = words;
  const time = words.time(m.timestamp);
  const initials = initialsOf(m.sender);
  const member = memberOf(words.room, m.sender);
  const classes = ['msg', m.role === 'ai_agent' ? 'msg-agent' : 'msg-user'];
  if (m.deleted) classes.push('msg-deleted');
  const head = [
    `<span class="msg-sender">${escapeHtml(m.sender)}</span>`,
    `<span class="badge badge-${escapeHtml(m.role)}">${escapeHtml(words.role(m.role))}</span>`,
    member?.is_host ? `<span class="badge badge-host">${escapeHtml(labels.host)}</span>` : '',
    `<time datetime="${escapeHtml(m.timestamp)}">${escapeHtml(time)}</time>`,
    m.edited_at && !m.deleted ? `<span class="muted msg-edited">${escapeHtml(labels.edited)}</span>` : '',
    `<span class="msg-seq">#${m.seq}</span>`,
  ].join('');
  let body = '';
  if (reply) body += `<div class="msg-reply">${escapeHtml(words.reply(reply))}</div>`;
  if (m.deleted) body += `<div class="msg-body markdown"><p class="muted">${escapeHtml(labels.deleted)}</p></div>`;
  else if (bodyHtml) body += `<div class="msg-body markdown">${bodyHtml}</div>`;
  const found = words.attachment(m);
  // No NUL in what is shown (a %00 in a link would otherwise reach the page, and the image mark).
  const att = found ? { ...found, name: cleanText(found.name).replace(/\n/g, " ") } : null;
  if (att) {
    const safe = SAFE_HREF.test(att.url);
    const type = att.type ? `<span class="muted attachment-type"> · ${escapeHtml(att.type.split(';')[0] ?? '')}</span>` : '';
    const link = safe
      ? `<a class="attachment" href="${escapeHtml(att.url)}" target="_blank" rel="noopener noreferrer nofollow">${escapeHtml(att.name)}${type}</a>`
      : `<span class="attachment muted">${escapeHtml(att.name)}${type}</span>`;
    const IMAGE_MARK = '\u0000image\u0000';
    const img = image ? `<img class="attachment-preview" alt="${escapeHtml(att.name)}" src="${IMAGE_MARK}">` : '';
    body += `<div class="msg-file">${img}${link}</div>`;
  }
  const item =
    `<li class="${classes.join(' ')}" id="m${m.seq}"><span class="avatar ${hueClass(m.sender)}${initials.length > 1 ? ' avatar-2' : ''}" aria-hidden="true">${escapeHtml(initials)}</span>` +
    `<div class="msg-main"><div class="msg-head">${head}</div>${body}</div></li>\n`;
  // cleanText removed NUL from every text, so the mark occurs only where it was put.
  const at = item.indexOf('\u0000image\u0000');
  return at < 0 ? [item, ''] : [item.slice(0, at), item.slice(at + '\u0000image\u0000'.length)];
}
