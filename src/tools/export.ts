// export_chat_history: renders a room to data/exports/ and returns a signed download link;
// import_chat_history: creates a new room from a JSON export.
// Export files are written under a temporary name and renamed when complete, so a download
// never sees half a file; exports older than EXPORT_TTL_MS are deleted on the next export. At
// most two exports run at once server-wide (src/export/slots.ts).
import { randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { readdir, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { formatInTimeZone } from 'date-fns-tz';
import { v4 as uuidv4 } from 'uuid';
import { z } from 'zod';
import { describer } from '../i18n/tool-text.js';
import type { ToolServices as App } from './services.js';
import { EXPORT_EXT, type ExportFormat, type ExportInput } from '../export/format.js';
import { buildImport, parseRoomFile, type BuiltImport } from '../export/import.js';
import { ATTACHMENT_LINK_TTL_MS, serverOrigin, signEncodedPath } from '../export/links.js';
import { ExportSlots } from '../export/slots.js';
import { isOwnUpload, ownUploadPath } from '../export/uploads.js';
import { presentMessage, presentRoom } from '../rooms/present.js';
import { newRoomId } from '../rooms/rules.js';
import type { Caller, Member, Message, RoomRecord } from '../types.js';
import { PRIVATE_FILE_MODE } from '../storage/private-files.js';
import { defineTool } from './registry.js';
import { roomId, roomName } from '../protocol/schemas.js';

export const EXPORT_TTL_MS = 60 * 60_000;

/**
 * `{room_id}-{yyyyMMddHHmmss}-{random}.{md|pdf|html|json}`: the room id lets a download check
 * membership.
 */
export const EXPORT_NAME = /^([a-z0-9-]{1,120})-(\d{14})-([a-z0-9]{6})\.(md|pdf|html|json)$/;

/** Content-Type of a download, by extension. */
export const EXPORT_CONTENT_TYPES: Record<string, string> = {
  md: 'text/markdown; charset=utf-8',
  pdf: 'application/pdf',
  html: 'text/html; charset=utf-8',
  json: 'application/json; charset=utf-8',
};

export function exportsDir(app: App): string {
  return path.join(app.config.dataDir, 'exports');
}

const slotsByApp = new WeakMap<App, ExportSlots>();
const importSlotsByApp = new WeakMap<App, ExportSlots>();

/** The server's import slots (SPEC §10: at most 2 imports run at once, others wait or get rate_limited). */
export function importSlots(app: App): ExportSlots {
  let slots = importSlotsByApp.get(app);
  if (!slots) {
    slots = new ExportSlots(MAX_RUNNING_IMPORTS, MAX_WAITING_IMPORTS, 'imports');
    importSlotsByApp.set(app, slots);
  }
  return slots;
}

/** Imports running at once, and waiting for a slot before the next is refused (docs/export.md). */
export const MAX_RUNNING_IMPORTS = 2;
export const MAX_WAITING_IMPORTS = 8;

/** The server's export slots (SPEC §10: at most 2 exports run at once). */
export function exportSlots(app: App): ExportSlots {
  let slots = slotsByApp.get(app);
  if (!slots) {
    slots = new ExportSlots();
    slotsByApp.set(app, slots);
  }
  return slots;
}

async function removeOld(dir: string, now: number): Promise<void> {
  for (const name of await readdir(dir).catch(() => [] as string[])) {
    const file = path.join(dir, name);
    const info = await stat(file).catch(() => null);
    if (info && now - info.mtimeMs > EXPORT_TTL_MS) await rm(file, { force: true });
  }
}

type Writer = (input: ExportInput, out: NodeJS.WritableStream) => Promise<void>;

/** Loaded on first use: pdfkit, sharp and the fonts cost start-up time every server would pay. */
async function writerFor(app: App, format: ExportFormat): Promise<Writer> {
  switch (format) {
    case 'markdown':
      return (await import('../export/markdown.js')).writeMarkdownExport;
    case 'html':
      return (await import('../export/html.js')).writeHtmlExport;
    case 'json':
      return (await import('../export/json.js')).writeJsonExport;
    case 'pdf': {
      const { writePdfExport } = await import('../export/pdf.js');
      const opts = app.config.exportFont ? { fontPath: app.config.exportFont } : {};
      return (input, out) => writePdfExport(input, out, opts);
    }
  }
}

/** The messages as every read shows them, one at a time (the export never holds the room). */
async function* presented(messages: AsyncIterable<Message>, room: RoomRecord): AsyncGenerator<Message> {
  for await (const m of messages) yield presentMessage(m, room);
}

export function exportTools(app: App) {
  const say = describer(app.config.defaultLanguage);
  return [
    defineTool({
      name: 'export_chat_history',
      description: say({
        'zh-CN':
          '导出房间的历史记录。markdown、pdf 和 html 按顺序包含可见消息，带发送者、角色和房间时区的时间（HTML 是可离线打开的单个自包含文件）；json 是带版本的房间格式（设置、成员、包括跳过记录在内的所有消息、轮次），import_chat_history 可以读取。返回签名的下载 url（15 分钟内有效；也可以用你的令牌下载）、文件名 filename 和大小 bytes。服务器同时最多运行 2 个导出，其余的排队等待，排队过多时返回 rate_limited。',
        en: "Export the room's history. `markdown`, `pdf` and `html` hold the visible messages in order, with sender, role and time in the room timezone (HTML is one self-contained file that opens offline); `json` is the versioned room format (settings, members, every message including skip records, rounds) that import_chat_history reads. Returns a signed download `url` (valid 15 minutes; or download it with your token), the `filename` and its size in `bytes`. At most 2 exports run at once on the server; others wait, and `rate_limited` answers when too many wait.",
      }),
      input: z.object({ room_id: roomId, format: z.enum(['markdown', 'pdf', 'html', 'json']) }).strict(),
      handler: async (args, ctx) => {
        const room = await app.reads.memberRoom(args.room_id, ctx.caller);
        return exportSlots(app).run(async () => {
          const dir = exportsDir(app);
          const exportedAt = new Date(app.now());
          await removeOld(dir, exportedAt.getTime());
          const ext = EXPORT_EXT[args.format];
          const name = `${room.room_id}-${formatInTimeZone(exportedAt, 'UTC', 'yyyyMMddHHmmss')}-${randomBytes(3).toString('hex')}.${ext}`;
          const target = path.join(dir, name);
          const partial = `${target}.partial`;
          const input: ExportInput = {
            room: presentRoom(room),
            // As every read shows them: `processed` from the room, not the log line (SPEC §5).
            messages: presented(app.reads.messagesOf(room.room_id), room),
            exportedAt,
            timezone: room.timezone,
            fileUrl: (url: string) => attachmentLink(app, room.room_id, url),
            ownUpload: (url: string) => ownUploadPath(app.config.dataDir, room.room_id, url),
            findEarlier: (messageId: string) => app.store.getMessage(messageId),
          };
          const write = await writerFor(app, args.format);
          const out = createWriteStream(partial, { mode: PRIVATE_FILE_MODE });
          try {
            await write(input, out);
            await rename(partial, target);
          } catch (err) {
            out.destroy();
            await rm(partial, { force: true });
            throw err;
          }
          const { size } = await stat(target);
          return {
            url: app.links.sign(`/api/v1/exports/${name}`),
            filename: downloadName(room.room_name, exportedAt, room.timezone, ext),
            bytes: size,
            format: args.format,
          };
        });
      },
    }),
    defineTool({
      name: 'import_chat_history',
      description: say({
        'zh-CN':
          '用 JSON 导出文件创建新房间（export_chat_history 的 json 格式：{format:"agent-chatroom.room", version:1, …}）。你成为它的创建者和唯一成员；消息按顺序只保留作者名字（imported: true、sender_id: null：任何人都不能编辑或删除它们），seq 从 1 重新编号；文件中的公告和密码不会被沿用。room_name 可以覆盖文件中的名称。格式错误或恶意的文件返回 validation_error，不会创建任何东西。服务器上同时最多进行 2 个导入；其余的排队等待，排队过多时返回 rate_limited。',
        en: 'Create a new room from a JSON export (export_chat_history format `json`: {format:"agent-chatroom.room", version:1, …}). You become its creator and only member; messages keep their authors as names only (`imported: true`, `sender_id: null`: nobody can edit or delete them), in order, renumbered from seq 1; the file’s announcement and password are not taken over. `room_name` overrides the name in the file. A malformed or hostile file is a validation_error and creates nothing. At most 2 imports run at once on the server; others wait, and `rate_limited` answers when too many wait.',
      }),
      input: z.object({ data: z.unknown(), room_name: roomName.optional() }).strict(),
      // The file is validated in time slices; at most 2 imports run at once (SPEC §10).
      handler: (args, ctx) => importSlots(app).run(() => importRoom(app, ctx.caller, args.data, args.room_name)),
    }),
  ];
}

/** Validates the file, builds the new room (the caller its creator) and writes it durably. */
async function importRoom(app: App, caller: Caller, data: unknown, roomNameOverride: string | undefined) {
  const file = await parseRoomFile(data, app.config.maxMessageChars);
  const now = new Date(app.now());
  const name = roomNameOverride ?? file.room.room_name;
  const creator = await importerMember(app, caller, now);
  const built = await buildImport(file, { roomId: newRoomId(name, now), creator, now, newId: uuidv4 }, roomNameOverride);
  await persistImportedRoom(app, caller, built);
  return { room: presentRoom(built.room), imported_messages: built.messages.length };
}

/** The importer as the first member (and host) of the new room, as create_room makes it. */
async function importerMember(app: App, caller: Caller, now: Date): Promise<Member> {
  const found = await app.participants.get(caller);
  const agent = found?.kind === 'agent' ? found.record : undefined;
  const user = found?.kind === 'user' ? found.record : undefined;
  const lastActive = app.presence.lastActive(caller.id) ?? now.getTime();
  return {
    name: caller.name,
    role: caller.role,
    introduce: agent?.introduce ?? '',
    status: app.presence.isOnline(caller.id) ? 'online' : 'offline',
    last_active: new Date(lastActive).toISOString(),
    is_host: true,
    skip_list: agent?.skip_list ?? [],
    language_preference: agent?.preferred_language ?? user?.language ?? app.config.defaultLanguage,
    timezone_preference: agent?.timezone ?? user?.timezone ?? app.config.displayTimezone,
    participant_id: caller.id,
    joined_at: now.toISOString(),
  };
}

/**
 * Persisting an import goes through the room runtimes: the room and its messages are created in
 * one durable write (Store.createRoom with messages), and only then is the importer's socket
 * told about it. If the write fails nothing of the room exists; the call answers internal_error.
 */
async function persistImportedRoom(app: App, caller: Caller, built: BuiltImport): Promise<void> {
  try {
    await app.rooms.adopt(caller, built.room, built.messages);
  } catch (err) {
    app.logger.error({ err, room_id: built.room.room_id }, 'import_chat_history: writing the new room failed');
    throw err;
  }
}

/**
 * An export leaves the server, so links to the room's own uploads are absolute and signed for
 * ATTACHMENT_LINK_TTL_MS (a relative link, or one that dies with the export file, would be
 * useless in a shared document). Only the exported room's own uploads are signed (SPEC §10):
 * a link to another room's upload, which anyone may paste into a message, stays exactly as it
 * was written, so exporting never grants access to a file of another room.
 */
function attachmentLink(app: App, roomId: string, fileUrl: string): string {
  if (!isOwnUpload(roomId, fileUrl)) return fileUrl;
  try {
    return serverOrigin(app.config) + signEncodedPath(app.links, fileUrl, ATTACHMENT_LINK_TTL_MS);
  } catch {
    return fileUrl; // a malformed escape: not one of our uploads' URLs
  }
}

/** What the browser saves: the room name and the date in the room timezone. */
export function downloadName(roomName: string, at: Date, timezone: string, ext: string): string {
  return `${roomName.replace(/\s+/g, '_')}_${formatInTimeZone(at, timezone, 'yyyy-MM-dd_HHmmss')}.${ext}`;
}
