// Images of the room's own uploads, for the PDF (decoded, scaled, re-encoded with sharp) and
// the HTML export (the file as it is, as a data URL). One image at a time: the caller draws or
// writes it and drops it before the next is loaded, so a room with hundreds of images costs
// the memory of one.
import { open, readFile, stat } from 'node:fs/promises';
import sharp from 'sharp';

// The export runs next to the server: no cache of decoded images, one libvips thread.
sharp.cache(false);
sharp.concurrency(1);

export type ImageKind = 'png' | 'jpeg' | 'gif' | 'webp';

export const IMAGE_MIME: Record<ImageKind, string> = { png: 'image/png', jpeg: 'image/jpeg', gif: 'image/gif', webp: 'image/webp' };

/** Decompression bombs: images above this many pixels are left as links. */
export const MAX_IMAGE_PIXELS = 40_000_000;

/**
 * What the file is, from its first bytes (never from the message's `file_type`, which the
 * sender chose): PNG, JPEG, GIF or WebP, else null.
 */
export function sniffImage(head: Uint8Array): ImageKind | null {
  const b = Buffer.from(head.buffer, head.byteOffset, head.byteLength);
  if (b.length >= 8 && b.readUInt32BE(0) === 0x89504e47 && b.readUInt32BE(4) === 0x0d0a1a0a) return 'png';
  if (b.length >= 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) return 'jpeg';
  if (b.length >= 6 && (b.toString('latin1', 0, 6) === 'GIF87a' || b.toString('latin1', 0, 6) === 'GIF89a')) return 'gif';
  if (b.length >= 12 && b.toString('latin1', 0, 4) === 'RIFF' && b.toString('latin1', 8, 12) === 'WEBP') return 'webp';
  return null;
}

async function readHead(file: string, bytes = 16): Promise<Buffer | null> {
  let handle;
  try {
    handle = await open(file, 'r');
    const { buffer, bytesRead } = await handle.read(Buffer.alloc(bytes), 0, bytes, 0);
    return buffer.subarray(0, bytesRead);
  } catch {
    return null;
  } finally {
    await handle?.close();
  }
}

export interface RasterImage {
  /** PNG (for sources that may have sharp edges or transparency) or JPEG (photos). */
  data: Buffer;
  /** Pixels of `data`. */
  width: number;
  height: number;
}

/**
 * The image in `file` scaled to fit `maxWidth` × `maxHeight` pixels (never enlarged), with
 * transparency flattened onto white and the first frame of an animation. PNG and GIF stay PNG
 * (lossless; pdfkit copies its data as it is), JPEG and WebP become JPEG. Null when the file is
 * not such an image or cannot be decoded: the caller keeps the link.
 */
export async function loadRaster(file: string, maxWidth: number, maxHeight: number): Promise<RasterImage | null> {
  const head = await readHead(file);
  const kind = head ? sniffImage(head) : null;
  if (!kind) return null;
  try {
    let pipeline = sharp(file, { pages: 1, limitInputPixels: MAX_IMAGE_PIXELS, failOn: 'error' })
      .rotate()
      .resize({ width: Math.round(maxWidth), height: Math.round(maxHeight), fit: 'inside', withoutEnlargement: true })
      .flatten({ background: '#ffffff' });
    pipeline = kind === 'png' || kind === 'gif' ? pipeline.png({ compressionLevel: 6, adaptiveFiltering: true }) : pipeline.jpeg({ quality: 85, mozjpeg: false });
    const { data, info } = await pipeline.toBuffer({ resolveWithObject: true });
    return { data, width: info.width, height: info.height };
  } catch {
    return null;
  }
}

/**
 * The file as the bytes of a `data:` URL (ASCII) when it is a PNG, JPEG, GIF or WebP of at most
 * `maxBytes` (the MIME type from its bytes), else null. Bytes, not a string: the HTML export
 * writes them as they are instead of copying megabytes through its text.
 */
export async function imageDataUrl(file: string, maxBytes: number): Promise<Buffer | null> {
  const info = await stat(file).catch(() => null);
  if (!info?.isFile() || info.size > maxBytes || info.size === 0) return null;
  const data = await readFile(file).catch(() => null);
  if (!data) return null;
  const kind = sniffImage(data.subarray(0, 16));
  if (!kind) return null;
  return Buffer.from(`data:${IMAGE_MIME[kind]};base64,${data.toString('base64')}`, 'latin1');
}
