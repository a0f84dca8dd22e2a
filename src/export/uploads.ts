// Which attachment links of a room are the room's own uploads (SPEC §10: an export signs and
// embeds only those). An upload's URL is `/api/v1/files/{room_id}/{stored name}` exactly as the
// upload endpoint returned it; anything else (another room's upload, a path with a query or a
// `..`, an external link) is not the room's own and is left as it is.
import path from 'node:path';

const UPLOAD_URL = /^\/api\/v1\/files\/([a-z0-9-]{1,120})\/([^/?#\\]+)$/;
/** The stored name: `{timestamp}_{sanitised name}`; no separators, no dot files. */
const STORED_NAME = /^\d{13,}_[^/\\\u0000-\u001f]+$/u;

export interface UploadRef {
  roomId: string;
  /** The stored file name, decoded. */
  name: string;
}

/** The room and stored name an upload URL points at, or null when it is not an upload URL. */
export function parseUploadUrl(fileUrl: string): UploadRef | null {
  const m = UPLOAD_URL.exec(fileUrl);
  if (!m) return null;
  let name: string;
  try {
    name = decodeURIComponent(m[2] ?? '');
  } catch {
    return null;
  }
  if (!STORED_NAME.test(name) || name.includes('..')) return null;
  return { roomId: m[1] ?? '', name };
}

/** True when `fileUrl` is an upload of `roomId` itself. */
export function isOwnUpload(roomId: string, fileUrl: string): boolean {
  return parseUploadUrl(fileUrl)?.roomId === roomId;
}

/** The file on disk behind one of the room's own uploads, or null for any other URL. */
export function ownUploadPath(dataDir: string, roomId: string, fileUrl: string): string | null {
  const ref = parseUploadUrl(fileUrl);
  if (!ref || ref.roomId !== roomId) return null;
  return path.join(dataDir, 'uploads', roomId, ref.name);
}
