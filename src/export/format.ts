// Shared by the Markdown, HTML and PDF exports (SPEC §9): the input shape, labels in the room
// language, display times, role names and attachment links, and ExportWords, which binds them
// to one export so that each writer only lays them out.
import { formatInTimeZone } from 'date-fns-tz';
import type { Message, Room, Role } from '../types.js';
import type { FindEarlier, ReplyRef } from './walk.js';

export interface ExportInput {
  /** The public room (src/types.ts). */
  room: Room;
  /**
   * All messages of the room in `seq` order, invisible skip records included (the export
   * filters them). An async iterable (e.g. read line by line from the log) works too.
   */
  messages: Iterable<Message> | AsyncIterable<Message>;
  exportedAt: Date;
  /** Display timezone (the room timezone), e.g. 'Asia/Shanghai'. */
  timezone: string;
  /** Maps a stored `file_url` to an absolute or signed link (default: unchanged). */
  fileUrl?: (fileUrl: string) => string;
  /**
   * The local file behind a `file_url` when it is one of the exported room's own uploads
   * (null otherwise: another room's upload, an external link). Images are embedded from it.
   */
  ownUpload?: (fileUrl: string) => string | null;
  /**
   * Finds an earlier message by id, for a reply to a message older than what the walk keeps
   * (`walk.ts`); without it such a reply shows as answering an unknown message.
   */
  findEarlier?: FindEarlier;
}

export const DISPLAY_FORMAT = 'yyyy-MM-dd HH:mm:ss';

/** `yyyy-MM-dd HH:mm:ss` in `timezone`; the input unchanged when it is not a valid time. */
export function displayTime(value: string | Date, timezone: string): string {
  const date = typeof value === 'string' ? new Date(value) : value;
  const ms = date.getTime();
  if (Number.isNaN(ms)) return typeof value === 'string' ? value : '';
  // formatInTimeZone costs ~50 µs; an export formats every message. Offsets and their changes
  // fall on whole quarter hours in every zone in use, so the local time of the start of the
  // UTC quarter hour plus the minutes and seconds since then is the same result.
  const block = Math.floor(ms / QUARTER_HOUR) * QUARTER_HOUR;
  const key = `${timezone}|${block}`;
  let start = quarterCache.get(key);
  if (start === undefined) {
    start = formatInTimeZone(new Date(block), timezone, DISPLAY_FORMAT);
    if (quarterCache.size >= 4096) quarterCache.clear();
    quarterCache.set(key, start);
  }
  const minute = Number(start.slice(14, 16));
  if (start.slice(17) !== '00' || minute % 15 !== 0) return formatInTimeZone(date, timezone, DISPLAY_FORMAT);
  const within = Math.floor((ms - block) / 1000);
  return `${start.slice(0, 14)}${pad2(minute + Math.floor(within / 60))}:${pad2(within % 60)}`;
}

const QUARTER_HOUR = 15 * 60 * 1000;
const quarterCache = new Map<string, string>();

function pad2(n: number): string {
  return n < 10 ? `0${n}` : String(n);
}

export interface Labels {
  title: string;
  description: string;
  announcement: string;
  systemAnnouncement: string;
  publishedBy: (name: string, time: string) => string;
  exportedAt: string;
  timezone: string;
  roomId: string;
  members: string;
  none: string;
  host: string;
  creator: string;
  round: (n: number) => string;
  replyTo: (seq: number, sender: string) => string;
  replyToUnknown: string;
  attachment: string;
  deleted: string;
  edited: string;
  /** Footer: page n of total. */
  page: (n: number, total: string) => string;
  image: string;
  room: string;
  mode: string;
  modes: Record<string, string>;
  roles: Record<Role, string>;
  /** Separator between a label and its value. */
  colon: string;
  /** Opening and closing brackets around a remark. */
  paren: [string, string];
  listSep: string;
}

/**
 * Every label in both languages side by side, Chinese first: a label missing in one language
 * does not type-check. Modes use the page's own words (public/i18n.js), so an export reads like
 * the room it came from.
 */
const LABELS: { [K in keyof Labels]: readonly [zh: Labels[K], en: Labels[K]] } = {
  title: ['聊天记录导出', 'Chat history export'],
  description: ['描述', 'Description'],
  announcement: ['公告', 'Announcement'],
  systemAnnouncement: ['系统公告', 'System announcement'],
  publishedBy: [(name, time) => (time ? `${name} 发布于 ${time}` : `${name} 发布`), (name, time) => (time ? `by ${name}, ${time}` : `by ${name}`)],
  exportedAt: ['导出时间', 'Exported at'],
  timezone: ['时区', 'Time zone'],
  roomId: ['房间 ID', 'Room ID'],
  members: ['成员', 'Members'],
  none: ['（无）', '(none)'],
  host: ['主持人', 'host'],
  creator: ['创建者', 'creator'],
  round: [(n) => `第 ${n} 轮`, (n) => `Round ${n}`],
  replyTo: [(seq, sender) => `回复 #${seq} ${sender}`, (seq, sender) => `Reply to #${seq} ${sender}`],
  replyToUnknown: ['回复 一条不在导出中的消息', 'Reply to a message not in this export'],
  attachment: ['附件', 'Attachment'],
  deleted: ['（已撤回）', '(deleted)'],
  edited: ['（已编辑）', '(edited)'],
  // SPEC §9's footer, in the room's language (SPEC §6: page labels follow it).
  page: [(n, total) => `第 ${n} / ${total} 页`, (n, total) => `Page ${n} of ${total}`],
  image: ['图片', 'Image'],
  room: ['房间', 'Room'],
  mode: ['模式', 'Mode'],
  modes: [{ default: '轮流模式', host: '主持人模式' }, { default: 'round-robin', host: 'host mode' }],
  roles: [{ ai_agent: '智能体', user: '用户', system: '系统' }, { ai_agent: 'AI agent', user: 'person', system: 'system' }],
  colon: ['：', ': '],
  paren: [['（', '）'], [' (', ')']],
  listSep: ['，', ', '],
};

function labelsIn(index: 0 | 1): Labels {
  return Object.fromEntries(Object.entries(LABELS).map(([key, pair]) => [key, pair[index]])) as unknown as Labels;
}

const ZH = labelsIn(0);
const EN = labelsIn(1);

/** Chinese labels for `zh*` languages, English otherwise. */
export function labelsFor(language: string | undefined): Labels {
  return /^zh/i.test(language ?? '') ? ZH : EN;
}

export function roleLabel(labels: Labels, role: string): string {
  return (labels.roles as Record<string, string>)[role] ?? role;
}

/** Remarks about a member: role, host, creator. */
export function memberRemarks(labels: Labels, room: Room, member: Room['members'][number]): string[] {
  const out = [roleLabel(labels, member.role)];
  if (member.is_host) out.push(labels.host);
  if (member.name === room.created_by) out.push(labels.creator);
  return out;
}

export interface Attachment {
  /** What to show: the original file name where it can be recovered. */
  name: string;
  url: string;
  type: string;
}

/** The attachment of a message, or null. Stored names look like `{timestamp}_{filename}`. */
export function attachmentOf(message: Message, mapUrl?: (u: string) => string): Attachment | null {
  if (!message.file_url) return null;
  const url = mapUrl ? mapUrl(message.file_url) : message.file_url;
  const path = message.file_url.split(/[?#]/, 1)[0] ?? '';
  let base = path.slice(path.lastIndexOf('/') + 1);
  try {
    base = decodeURIComponent(base);
  } catch {
    // keep it as stored
  }
  base = base.replace(/^\d{8,}[-_]/, '') || base || message.file_url;
  return { name: base, url, type: message.file_type };
}

/** Control characters other than tab and newline are dropped (they break both outputs). */
export function cleanText(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/\r\n?/g, '\n').replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/g, '');
}

export type ExportFormat = 'markdown' | 'pdf' | 'html' | 'json';

/** File extension of each export format. */
export const EXPORT_EXT: Record<ExportFormat, string> = { markdown: 'md', pdf: 'pdf', html: 'html', json: 'json' };

/** A file name for an export: `{room_id}-{yyyyMMddHHmmss}.{md|pdf|html|json}` (UTC). */
export function exportFilename(room: Pick<Room, 'room_id'>, format: ExportFormat, exportedAt: Date): string {
  const stamp = formatInTimeZone(exportedAt, 'UTC', 'yyyyMMddHHmmss');
  return `${room.room_id}-${stamp}.${EXPORT_EXT[format]}`;
}

export function modeLabel(labels: Labels, mode: string): string {
  return labels.modes[mode] ?? mode;
}

/**
 * What an export says, in the room's language and timezone: the labels and every value an
 * export shows that does not depend on its layout. One per export.
 */
export class ExportWords {
  readonly labels: Labels;
  readonly room: Room;
  readonly timezone: string;

  constructor(private readonly input: ExportInput) {
    this.labels = labelsFor(input.room.language);
    this.room = input.room;
    this.timezone = input.timezone;
  }

  /** A time as shown, in the export's timezone. */
  time(value: string | Date): string {
    return displayTime(value, this.timezone);
  }

  exportedAt(): string {
    return this.time(this.input.exportedAt);
  }

  role(role: string): string {
    return roleLabel(this.labels, role);
  }

  mode(): string {
    return modeLabel(this.labels, this.room.interaction_mode);
  }

  /** A remark in the language's brackets. */
  paren(text: string): string {
    return `${this.labels.paren[0]}${text}${this.labels.paren[1]}`;
  }

  /** A member's remarks (role, host, creator) as one list. */
  remarks(member: Room['members'][number]): string {
    return memberRemarks(this.labels, this.room, member).join(this.labels.listSep);
  }

  /** The room's announcement cleaned, and who published it when (bracketed, '' when unknown); null when there is none. */
  announcement(): { text: string; by: string } | null {
    const a = this.room.announcement;
    const text = cleanText(a?.user_announcement?.trim() ?? '');
    if (!text) return null;
    if (!a.announcement_publisher) return { text, by: '' };
    const when = a.timestamp ? this.time(a.timestamp) : '';
    return { text, by: this.paren(this.labels.publishedBy(a.announcement_publisher, when)) };
  }

  /** The system announcement cleaned, or ''. */
  systemAnnouncement(): string {
    return cleanText(this.room.announcement?.system_announcement?.trim() ?? '');
  }

  /** What a reply answers. */
  reply(reply: ReplyRef | 'unknown'): string {
    return reply === 'unknown' ? this.labels.replyToUnknown : this.labels.replyTo(reply.seq, reply.sender);
  }

  /** The divider where a round starts. */
  round(number: number, timestamp: string): string {
    return `${this.labels.round(number)} · ${this.time(timestamp)}`;
  }

  /** A message's text as exported: cleaned and trimmed ('' for a retracted one). */
  text(m: Message): string {
    return m.deleted ? '' : cleanText(m.text_content).trim();
  }

  /** The attachment of a message that is not retracted, with its link mapped. */
  attachment(m: Message): Attachment | null {
    return m.deleted ? null : attachmentOf(m, this.input.fileUrl);
  }

  /** The local file of an attachment that is one of the room's own uploads. */
  ownUpload(m: Message): string | null {
    return !m.deleted && m.file_url && this.input.ownUpload ? this.input.ownUpload(m.file_url) : null;
  }
}
