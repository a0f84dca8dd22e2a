// Uploads (POST /api/v1/rooms/{room_id}/uploads) and downloads of uploads and exports.
// Stored names are made by the server; the client's filename only contributes sanitised
// characters, so no upload can escape its folder.
import { mkdir, open, rm, stat, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import busboy from 'busboy';
import type express from 'express';
import type { Request, Response } from 'express';
import { fileTypeFromFile } from 'file-type';
import type { App } from '../app.js';
import { AppError } from '../errors.js';
import { signEncodedPath } from '../export/links.js';
import { ROOM_ID } from '../rooms/rules.js';
import { fsyncPath } from '../storage/fs-ops.js';
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from '../storage/private-files.js';
import { downloadName, EXPORT_CONTENT_TYPES, EXPORT_NAME, exportsDir } from '../tools/export.js';
import type { Caller } from '../types.js';
import { bearerToken, sendError } from './http-util.js';

/**
 * The filename rule (docs/security.md): a name keeps its characters (any script, spaces,
 * brackets, emoji: `设计 说明(v2).md` stays as it is) except those that are dangerous in a path,
 * a header or on another system, which become `_`: path separators `/` `\`, the characters
 * Windows reserves `< > : " | ? *`, control characters, format characters (bidi overrides that
 * disguise an extension; the emoji joiner U+200D stays), line and paragraph separators,
 * private-use, unassigned and lone surrogate code points. Any run of whitespace becomes one
 * space; leading dots, spaces, `_` and `-` (hidden files, command-line options) and trailing
 * dots and spaces (dropped by Windows) are removed.
 */
const UNSAFE_CHARS = /(?:[/\\<>:"|?*\p{Cc}\p{Zl}\p{Zp}\p{Co}\p{Cn}\p{Cs}]|(?!\u200d)\p{Cf})+/gu;
/** The `{timestamp}_` prefix of stored names. */
const STORED_PREFIX = /^\d{13,}_/;
/**
 * The sanitised name is cut to this many UTF-8 bytes: with the 14-byte `{timestamp}_` prefix it
 * stays far below the 255-byte name limit of ext4 and most other file systems.
 */
export const MAX_NAME_BYTES = 200;
/** An extension up to this long survives the cut, so the download keeps its type. */
const MAX_EXT_BYTES = 16;

export function sanitiseFilename(raw: string | undefined): string {
  const base = (raw ?? '').split(/[/\\]/).pop() ?? '';
  const cleaned = base
    .normalize('NFC')
    .replace(UNSAFE_CHARS, '_')
    .replace(/\s+/gu, ' ')
    .replace(/^[\s._-]+/u, '')
    .replace(/[\s.]+$/u, '');
  const cut = cleaned.length > 0 ? cutToBytes(cleaned, MAX_NAME_BYTES).replace(/[\s.]+$/u, '') : '';
  return cut.length > 0 ? cut : 'file';
}

/** Whether `name` is one the server could have made: `{timestamp}_{a sanitised name}`. */
export function isStoredName(name: string): boolean {
  const prefix = STORED_PREFIX.exec(name);
  if (!prefix) return false;
  const rest = name.slice(prefix[0].length);
  return rest.length > 0 && sanitiseFilename(rest) === rest;
}

/** The stored name as a URL path segment: every reserved character escaped, `(`, `)` too (Markdown links). */
export function encodeStoredName(name: string): string {
  return encodeURIComponent(name).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

/** Cuts `name` to `maxBytes` of UTF-8 on whole code points, keeping a short extension. */
function cutToBytes(name: string, maxBytes: number): string {
  if (Buffer.byteLength(name) <= maxBytes) return name;
  const dot = name.lastIndexOf('.');
  const ext = dot > 0 && Buffer.byteLength(name.slice(dot)) <= MAX_EXT_BYTES ? name.slice(dot) : '';
  let stem = '';
  let bytes = Buffer.byteLength(ext);
  for (const codePoint of name.slice(0, name.length - ext.length)) {
    bytes += Buffer.byteLength(codePoint);
    if (bytes > maxBytes) break;
    stem += codePoint;
  }
  return stem + ext;
}

const INLINE_TYPES = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp', 'image/avif', 'image/bmp']);

async function detectType(file: string): Promise<string> {
  const detected = await fileTypeFromFile(file);
  if (detected) return detected.mime;
  // No magic number: call it text if the start decodes as UTF-8 without control characters.
  const handle = await open(file, 'r');
  try {
    const { buffer, bytesRead } = await handle.read(Buffer.alloc(4096), 0, 4096, 0);
    const head = buffer.subarray(0, bytesRead);
    try {
      const text = new TextDecoder('utf-8', { fatal: true }).decode(head);
      if (!/[\u0000-\u0008\u000e-\u001f]/.test(text)) return 'text/plain; charset=utf-8';
    } catch {
      // not UTF-8
    }
    return 'application/octet-stream';
  } finally {
    await handle.close();
  }
}

/** The request's caller; its token may come from another node (a shared store, SPEC §11). */
async function caller(app: App, req: Request): Promise<Caller> {
  const token = bearerToken(req.get('authorization'));
  if (!token) throw new AppError('unauthorized', 'This needs a token (Authorization: Bearer <token>)');
  const found = await app.participants.authenticateAnywhere(token);
  if (!found) throw new AppError('unauthorized', 'Unknown or revoked token');
  app.presence.touch(found.id);
  return found;
}

/** A path segment that cannot be a room id names no room (as for the tools, `validationError`). */
function validRoomId(roomId: string, missing: 'room_not_found' | 'not_found'): string {
  if (!ROOM_ID.test(roomId)) throw new AppError(missing, missing === 'room_not_found' ? 'No room with this id' : 'No such file');
  return roomId;
}

/**
 * Upload, download and export routes. They count against the same rate limits as tool calls:
 * per token when one is sent, per client address always, so neither uploads nor guessed signed
 * links can flood the server.
 */
/**
 * How an upload is written: a seam for fault injection (a disk that fails mid-write). The file
 * is already created (exclusively) when this is called; the stream writes its bytes.
 */
export interface UploadIo {
  writeStream(handle: FileHandle, file: string): Writable;
}

export const defaultUploadIo: UploadIo = {
  writeStream: (handle) => handle.createWriteStream(),
};

export function fileRoutes(app: App, api: express.Router, io: UploadIo = defaultUploadIo): void {
  const uploadsRoot = path.join(app.config.dataDir, 'uploads');
  const limited = rateLimited(app);

  api.post('/rooms/:room_id/uploads', limited, async (req: Request, res: Response) => {
    try {
      const who = await caller(app, req);
      const roomId = validRoomId(String(req.params.room_id), 'room_not_found');
      const room = await app.reads.memberRoom(roomId, who);
      if (room.archived) throw new AppError('forbidden', 'This room is archived and read-only');
      const stored = await receiveUpload(req, path.join(uploadsRoot, roomId), app.config.maxUploadBytes, app.now, io);
      const fileUrl = `/api/v1/files/${roomId}/${encodeStoredName(stored.name)}`;
      res.json({
        ok: true,
        data: {
          file_url: fileUrl,
          file_type: stored.type,
          bytes: stored.bytes,
          filename: stored.originalName,
          signed_url: signEncodedPath(app.links, fileUrl),
        },
      });
    } catch (err) {
      sendError(res, err, app);
    }
  });

  api.get('/files/:room_id/:name', limited, async (req: Request, res: Response) => {
    try {
      const roomId = validRoomId(String(req.params.room_id), 'not_found');
      const name = String(req.params.name);
      if (!isStoredName(name)) throw new AppError('not_found', 'No such file');
      await authorizeDownload(app, req, roomId, `/api/v1/files/${roomId}/${name}`);
      const file = path.join(uploadsRoot, roomId, name);
      const info = await stat(file).catch(() => null);
      if (!info?.isFile()) throw new AppError('not_found', 'No such file');
      const type = await detectType(file);
      const original = name.replace(/^\d+_/, '');
      res.setHeader('X-Content-Type-Options', 'nosniff');
      res.setHeader('Content-Type', type);
      res.setHeader('Content-Security-Policy', "default-src 'none'; img-src 'self'; style-src 'unsafe-inline'; sandbox");
      res.attachment(original);
      if (INLINE_TYPES.has(type)) res.setHeader('Content-Disposition', res.get('Content-Disposition')!.replace(/^attachment/, 'inline'));
      res.sendFile(file, { dotfiles: 'deny', headers: { 'Content-Type': type } });
    } catch (err) {
      sendError(res, err, app);
    }
  });

  api.get('/exports/:name', limited, async (req: Request, res: Response) => {
    try {
      const name = String(req.params.name);
      const match = EXPORT_NAME.exec(name);
      if (!match) throw new AppError('not_found', 'No such export');
      const roomId = match[1]!;
      await authorizeDownload(app, req, roomId, `/api/v1/exports/${name}`);
      const file = path.join(exportsDir(app), name);
      const info = await stat(file).catch(() => null);
      if (!info?.isFile()) throw new AppError('not_found', 'No such export (exports are kept for an hour)');
      const room = (await app.rooms.runtime(roomId))?.room;
      const ext = match[4]!;
      res.setHeader('X-Content-Type-Options', 'nosniff');
      res.attachment(downloadName(room?.room_name ?? roomId, info.mtime, room?.timezone ?? app.config.displayTimezone, ext));
      res.type(EXPORT_CONTENT_TYPES[ext] ?? 'application/octet-stream');
      // An HTML export is a download, never a page of this origin: no script, no requests.
      if (ext === 'html') res.setHeader('Content-Security-Policy', "default-src 'none'; img-src data:; style-src 'unsafe-inline'; sandbox");
      res.sendFile(file);
    } catch (err) {
      sendError(res, err, app);
    }
  });
}

/** Counts a request against the rate limits; an unknown token counts only for its address. */
function rateLimited(app: App): express.RequestHandler {
  return (req, res, next) => {
    app.limits
      .consumeAddress(req.socket.remoteAddress ?? null)
      .then(() => app.participants.authenticateAnywhere(bearerToken(req.get('authorization'))))
      .then((participant) => app.limits.consumeParticipant(participant?.id ?? null))
      .then(() => next(), (err: unknown) => sendError(res, err, app));
  };
}

/** A download needs the token of a room member, or a valid signed link. */
export async function authorizeDownload(app: App, req: Request, roomId: string, pathname: string): Promise<void> {
  if (app.links.verify(pathname, req.query.expires, req.query.sig)) return;
  if (req.query.sig !== undefined && !bearerToken(req.get('authorization'))) {
    throw new AppError('forbidden', 'This link has expired or is not valid');
  }
  const who = await caller(app, req);
  await app.reads.memberRoom(roomId, who);
}

interface StoredUpload {
  name: string;
  originalName: string;
  type: string;
  bytes: number;
}

/**
 * Streams the multipart field `file` to `dir` under a server-made name. Whatever goes wrong
 * (too large, malformed body, client gone, the disk refusing the write) the file is removed
 * before this settles, and a failed write is answered at once: it does not wait for the rest
 * of the body, which is then discarded.
 */
async function receiveUpload(req: Request, dir: string, maxBytes: number, now: () => number, io: UploadIo): Promise<StoredUpload> {
  const contentType = req.get('content-type') ?? '';
  if (!contentType.startsWith('multipart/form-data')) {
    throw new AppError('validation_error', 'Send multipart/form-data with a field named "file"');
  }
  await mkdir(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
  let parser: busboy.Busboy;
  try {
    // Browsers send the filename as raw UTF-8 in the part header; busboy's default is latin1.
    // busboy reports 'limit' when a file *reaches* fileSize: one byte more than allowed, so a
    // file of exactly MAX_UPLOAD_BYTES is accepted and one byte over is refused.
    parser = busboy({ headers: req.headers, defParamCharset: 'utf8', limits: { files: 1, fileSize: maxBytes + 1, fields: 10, parts: 20 } });
  } catch {
    throw new AppError('validation_error', 'Malformed multipart body');
  }
  let work: Promise<StoredUpload> | null = null;
  let failWork: (err: unknown) => void = () => undefined;
  const workFailed = new Promise<never>((_, reject) => (failWork = reject));
  parser.on('file', (field, stream, info) => {
    if (field !== 'file' || work) {
      stream.resume();
      return;
    }
    // The body may end badly while storeFile is still choosing the name: busboy then fails the
    // file stream before storeFile's pipeline listens. The pipeline still sees the error.
    stream.on('error', () => undefined);
    work = storeFile(stream, info.filename, dir, maxBytes, now, io);
    work.catch(failWork); // awaited below; until then a rejection is not "unhandled"
  });
  const body = pipeline(req, parser).then(
    () => 'read' as const,
    () => 'broken' as const,
  );
  // A client that goes away mid-body destroys the parser, which destroys the file stream.
  // A write that fails ends the wait at once (the body may never be read to its end).
  const outcome = await Promise.race([body, workFailed.catch(() => 'write failed' as const)]);
  if (outcome === 'write failed') {
    discardBody(req, parser);
    return work!;
  }
  if (outcome === 'broken') {
    await (work as Promise<StoredUpload> | null)?.catch(() => undefined);
    throw new AppError('validation_error', 'Malformed or incomplete multipart body');
  }
  if (!work) throw new AppError('validation_error', 'No field named "file" in the upload');
  return work;
}

/** Stops parsing a body whose upload already failed; the rest is read and dropped (bounded by the request timeout). */
function discardBody(req: Request, parser: busboy.Busboy): void {
  req.unpipe(parser);
  parser.destroy();
  req.resume();
}

/** How often a name is tried when uploads of the same name arrive in the same milliseconds. */
const MAX_NAME_ATTEMPTS = 1000;

/**
 * Creates `{timestamp}_{name}` exclusively (`wx`): of uploads racing for one name exactly one
 * wins each stored name, and the others move on to the next timestamp. Only the file this call
 * created is ever removed by it.
 */
async function createExclusive(dir: string, originalName: string, now: () => number): Promise<{ name: string; file: string; handle: FileHandle }> {
  let stamp = now();
  for (let attempt = 0; attempt < MAX_NAME_ATTEMPTS; attempt++, stamp++) {
    const name = `${stamp}_${originalName}`;
    const file = path.join(dir, name);
    try {
      return { name, file, handle: await open(file, 'wx', PRIVATE_FILE_MODE) };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
  }
  throw new AppError('conflict', 'Too many uploads of this name at once; try again');
}

async function storeFile(stream: Readable, clientName: string | undefined, dir: string, maxBytes: number, now: () => number, io: UploadIo): Promise<StoredUpload> {
  const originalName = sanitiseFilename(clientName);
  let created: { name: string; file: string; handle: FileHandle } | null = null;
  // The body broke (malformed, client gone) rather than the disk: that is the client's error.
  // (A failed write also errors the body stream, as the pipeline tears down: the disk comes first.)
  let bodyBroke = false;
  let diskFailed = false;
  stream.once('error', () => (bodyBroke = true));
  try {
    created = await createExclusive(dir, originalName, now);
    const destination = io.writeStream(created.handle, created.file);
    destination.once('error', () => (diskFailed = !bodyBroke));
    await pipeline(stream, destination);
    await created.handle.close().catch(() => undefined);
    // busboy marks the stream when the limit was reached, also within the first chunks, before
    // anyone awaiting here could listen for its one 'limit' event.
    if ((stream as { truncated?: boolean }).truncated) throw new AppError('payload_too_large', `The file is larger than ${maxBytes} bytes`);
    await fsyncPath(created.file);
    await fsyncPath(dir);
    const bytes = (await stat(created.file)).size;
    return { name: created.name, originalName, type: await detectType(created.file), bytes };
  } catch (err) {
    stream.resume(); // let the parser finish the body
    if (created) {
      await created.handle.close().catch(() => undefined);
      await rm(created.file, { force: true });
    }
    if (bodyBroke && !diskFailed && !(err instanceof AppError)) throw new AppError('validation_error', 'Malformed or incomplete multipart body');
    throw err;
  }
}
