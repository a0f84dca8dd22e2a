// export_chat_history: renders a room to data/exports/ and returns a signed download link.
// Files are written under a temporary name and renamed when complete, so a download never
// sees half a file; exports older than EXPORT_TTL_MS are deleted on the next export.
import { randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { readdir, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { formatInTimeZone } from 'date-fns-tz';
import { z } from 'zod';
import type { ToolServices as App } from './services.js';
import { ATTACHMENT_LINK_TTL_MS, serverOrigin, signEncodedPath } from '../export/links.js';
import { presentRoom } from '../rooms/present.js';
import { defineTool } from './registry.js';
import { roomId } from './schemas.js';

export const EXPORT_TTL_MS = 60 * 60_000;

/** `{room_id}-{yyyyMMddHHmmss}-{random}.{md|pdf}`: the room id lets a download check membership. */
export const EXPORT_NAME = /^([a-z0-9-]{1,120})-(\d{14})-([a-z0-9]{6})\.(md|pdf)$/;

export function exportsDir(app: App): string {
  return path.join(app.config.dataDir, 'exports');
}

async function removeOld(dir: string, now: number): Promise<void> {
  for (const name of await readdir(dir).catch(() => [] as string[])) {
    const file = path.join(dir, name);
    const info = await stat(file).catch(() => null);
    if (info && now - info.mtimeMs > EXPORT_TTL_MS) await rm(file, { force: true });
  }
}

export function exportTools(app: App) {
  return [
    defineTool({
      name: 'export_chat_history',
      description:
        "Export the room's history (visible messages in order, with sender, role, time in the room timezone) as Markdown or PDF. Returns a signed download `url` (valid 15 minutes; or download it with your token), the `filename` and its size in `bytes`.",
      input: z.object({ room_id: roomId, format: z.enum(['markdown', 'pdf']) }).strict(),
      handler: async (args, ctx) => {
        const room = await app.reads.memberRoom(args.room_id, ctx.caller);
        const dir = exportsDir(app);
        const exportedAt = new Date(app.now());
        await removeOld(dir, exportedAt.getTime());
        const ext = args.format === 'markdown' ? 'md' : 'pdf';
        const name = `${room.room_id}-${formatInTimeZone(exportedAt, 'UTC', 'yyyyMMddHHmmss')}-${randomBytes(3).toString('hex')}.${ext}`;
        const target = path.join(dir, name);
        const partial = `${target}.partial`;
        const input = {
          room: presentRoom(room),
          messages: await app.reads.allMessages(room.room_id),
          exportedAt,
          timezone: room.timezone,
          fileUrl: (url: string) => attachmentLink(app, url),
        };
        const out = createWriteStream(partial);
        try {
          // Loaded on first use: pdfkit and its fonts cost start-up time every server would pay.
          if (args.format === 'markdown') {
            const { writeMarkdownExport } = await import('../export/markdown.js');
            await writeMarkdownExport(input, out);
          } else {
            const { writePdfExport } = await import('../export/pdf.js');
            await writePdfExport(input, out, app.config.exportFont ? { fontPath: app.config.exportFont } : {});
          }
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
      },
    }),
  ];
}

/**
 * An export leaves the server, so its attachment links are absolute and signed for
 * ATTACHMENT_LINK_TTL_MS (a relative link, or one that dies with the export file, would be
 * useless in a shared document). Other URLs are kept as they are.
 */
function attachmentLink(app: App, fileUrl: string): string {
  if (!fileUrl.startsWith('/api/v1/files/')) return fileUrl;
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
