// The `file_url` rule of send_message (SPEC §7) and the removal of an upload whose message was
// deleted. Uploads live under DATA_DIR/uploads/{room_id}/{name}; their URL is
// /api/v1/files/{room_id}/{encoded name}.
import { stat, unlink } from 'node:fs/promises';
import path from 'node:path';
import { AppError } from '../errors.js';
import type { Store } from '../storage/store.js';

const UPLOAD_PATH = /^\/api\/v1\/files\/([a-z0-9-]{1,120})\/([^/?#]+)$/;

/** The stored file an upload URL names, or null when it names none of this room's uploads. */
export function uploadFile(dataDir: string, roomId: string, fileUrl: string): string | null {
  const match = UPLOAD_PATH.exec(fileUrl);
  if (!match || match[1] !== roomId) return null;
  let name: string;
  try {
    name = decodeURIComponent(match[2]!);
  } catch {
    return null;
  }
  if (name === '' || name === '.' || name === '..' || name.includes('/') || name.includes('\\') || name.includes('\0')) return null;
  return path.join(dataDir, 'uploads', roomId, name);
}

/** Accepts an absolute http(s) URL or an existing upload of the same room; anything else is refused. */
export async function checkFileUrl(dataDir: string, roomId: string, fileUrl: string | undefined): Promise<void> {
  if (!fileUrl) return;
  if (/^https?:\/\//i.test(fileUrl)) {
    try {
      const url = new URL(fileUrl);
      if (url.protocol === 'http:' || url.protocol === 'https:') return;
    } catch {
      // fall through to the refusal
    }
  } else {
    const file = uploadFile(dataDir, roomId, fileUrl);
    if (file && (await stat(file).then((s) => s.isFile(), () => false))) return;
  }
  throw new AppError(
    'validation_error',
    'file_url must be an upload of this room (as the upload endpoint returned it) or an absolute http(s) URL',
    { field: 'file_url' },
  );
}

/** Removes the upload a deleted message pointed at, unless another message of the room still does. */
export async function removeUnreferencedUpload(store: Store, dataDir: string, roomId: string, fileUrl: string): Promise<void> {
  const file = uploadFile(dataDir, roomId, fileUrl);
  if (!file) return;
  const PAGE = 1000;
  for (let after = 0; ; ) {
    const page = await store.readMessages(roomId, { afterSeq: after, limit: PAGE });
    // Compared by the file each URL names, not by its text: one name has many percent-encodings
    // (a member must not remove another's upload by posting it spelled differently, then deleting).
    if (page.some((m) => !m.deleted && m.file_url && (m.file_url === fileUrl || uploadFile(dataDir, roomId, m.file_url) === file))) return;
    if (page.length < PAGE) break;
    after = page[page.length - 1]!.seq;
  }
  await unlink(file).catch(() => undefined);
}
