// Fonts of the PDF export without long stalls of the event loop (SPEC §10: exports yield).
//
// Steps of pdfkit that run as one synchronous block each and took longer than a request may
// wait: parsing the 8 MB CJK font files for every export, parsing their CFF tables (0.2-0.3 s
// each) and, in doc.end(), writing the subset of a CFF font (fontkit re-encodes the whole CFF:
// 0.4 s for a few glyphs, 2 s for 3,000) and compressing it. Here the parsed fonts are kept for
// the process (read asynchronously once), the main thread never parses a CFF table (its subsets
// only record glyph ids), and the subsets are encoded and compressed in a worker thread, one
// font at a time, before doc.end() finds them done. When the worker cannot be used, the subset
// is encoded here as before.
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

const require = createRequire(import.meta.url);

/** fontkit as pdfkit itself resolves it (the same copy, so its font objects are the kind pdfkit expects). */
function fontkitPath(): string {
  return createRequire(require.resolve('pdfkit')).resolve('fontkit');
}

interface SubsetLike {
  glyphs: number[];
  cff?: unknown;
  includeGlyph(glyph: number | { id: number }): number;
  encode(): Uint8Array | Buffer;
}

interface FontkitFont {
  layout(text: string): unknown;
  directory?: { tables?: Record<string, unknown> };
  createSubset(): SubsetLike;
}

/**
 * For CFF fonts: a subset that only records the glyphs. fontkit's own subset parses the whole
 * CFF table when it is made (0.2-0.3 s for a CJK font, on the event loop); the real encoding
 * happens in the worker (embedFontsOffThread), or, should that fail, here on demand.
 */
function recordingSubsets(font: FontkitFont): void {
  if (!font.directory?.tables?.['CFF ']) return;
  const real = font.createSubset.bind(font);
  font.createSubset = (): SubsetLike => {
    const glyphs = [0];
    const mapping = new Map<number, number>([[0, 0]]);
    return {
      glyphs,
      cff: true,
      includeGlyph(glyph) {
        const id = typeof glyph === 'number' ? glyph : glyph.id;
        let gid = mapping.get(id);
        if (gid === undefined) {
          gid = glyphs.length;
          glyphs.push(id);
          mapping.set(id, gid);
        }
        return gid;
      },
      encode() {
        const subset = real();
        for (const g of glyphs) subset.includeGlyph(g);
        return subset.encode();
      },
    };
  };
}

let fontkit: { create(buffer: Uint8Array, postscriptName?: string): FontkitFont } | undefined;

const parsed = new Map<string, Promise<FontkitFont>>();

/** The parsed font of a file (a face of a collection by PostScript name), kept for the process. */
export function openFont(file: string, family?: string): Promise<FontkitFont> {
  const key = `${file}\u0000${family ?? ''}`;
  let font = parsed.get(key);
  if (!font) {
    font = readFile(file).then((data) => {
      fontkit ??= require(fontkitPath()) as NonNullable<typeof fontkit>;
      const created = fontkit.create(data, family);
      if (!created || typeof created.layout !== 'function') throw new Error(`not a single font: ${file}${family ? ` (${family})` : ''}`);
      recordingSubsets(created);
      return created;
    });
    font.catch(() => parsed.delete(key));
    parsed.set(key, font);
  }
  return font;
}

/** Where a registered face comes from, so that the worker can open it too. */
export interface FontSource {
  file: string;
  family?: string;
}

// The worker: opens each font once, builds the subset with the glyphs in the document's order
// (so glyph ids match what the pages already use), encodes and deflates it.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { readFileSync } = require('node:fs');
const zlib = require('node:zlib');
const fontkit = require(workerData.fontkit);
const fonts = new Map();
parentPort.on('message', ({ id, file, family, glyphs }) => {
  try {
    const key = file + '\\u0000' + (family || '');
    let font = fonts.get(key);
    if (!font) {
      font = fontkit.create(readFileSync(file), family || undefined);
      fonts.set(key, font);
    }
    const subset = font.createSubset();
    for (const g of glyphs) subset.includeGlyph(g);
    const data = zlib.deflateSync(subset.encode());
    parentPort.postMessage({ id, data }, [data.buffer]);
  } catch (err) {
    parentPort.postMessage({ id, error: String(err && err.message || err) });
  }
});
`;

/** An idle worker is ended after this long: its copy of the fonts costs ~80 MB. */
const WORKER_IDLE_MS = 15_000;

class SubsetWorker {
  private worker: Worker | null = null;
  private idleTimer: NodeJS.Timeout | null = null;
  private next = 0;
  private readonly pending = new Map<number, { resolve: (b: Buffer) => void; reject: (e: Error) => void }>();

  private start(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { fontkit: fontkitPath() } });
    worker.unref(); // never keeps the process alive
    worker.on('message', (msg: { id: number; data?: Uint8Array; error?: string }) => {
      const p = this.pending.get(msg.id);
      if (!p) return;
      this.pending.delete(msg.id);
      if (msg.data) p.resolve(Buffer.from(msg.data.buffer, msg.data.byteOffset, msg.data.byteLength));
      else p.reject(new Error(msg.error ?? 'font subset failed'));
    });
    const fail = (err: Error): void => {
      this.worker = null;
      for (const p of this.pending.values()) p.reject(err);
      this.pending.clear();
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`font worker exited (${code})`)));
    this.worker = worker;
    return worker;
  }

  /** The deflated subset of `source` holding `glyphs` in this order. */
  encode(source: FontSource, glyphs: number[]): Promise<Buffer> {
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = null;
    const worker = this.start();
    const id = ++this.next;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      worker.ref(); // busy: an answer is awaited
      worker.postMessage({ id, file: source.file, family: source.family ?? null, glyphs });
    }).finally(() => {
      if (this.pending.size > 0) return;
      this.worker?.unref();
      this.idleTimer = setTimeout(() => this.stop(), WORKER_IDLE_MS);
      this.idleTimer.unref();
    }) as Promise<Buffer>;
  }

  private stop(): void {
    if (this.pending.size > 0 || !this.worker) return;
    const worker = this.worker;
    this.worker = null;
    worker.removeAllListeners('exit');
    worker.removeAllListeners('error');
    void worker.terminate();
  }
}

const subsets = new SubsetWorker();

interface EmbeddedFontLike {
  embedded?: boolean;
  dictionary?: unknown;
  subset?: { glyphs?: number[]; encode(): Uint8Array | Buffer };
  finalize(): void;
}

interface DocInternals {
  _fontFamilies: Record<string, EmbeddedFontLike>;
  ref(data?: Record<string, unknown>): { data: Record<string, unknown>; compress: boolean };
}

/**
 * Embeds the fonts used so far (call after the last text is drawn, before doc.end()): each
 * subset is encoded and compressed in the worker, then handed to pdfkit, with a turn of the
 * event loop between fonts. `sources` maps registered font names to their files.
 */
export async function embedFontsOffThread(doc: PDFKit.PDFDocument, sources: Record<string, FontSource>): Promise<void> {
  const internals = doc as unknown as DocInternals;
  const seen = new Set<EmbeddedFontLike>();
  for (const [name, font] of Object.entries(internals._fontFamilies)) {
    if (seen.has(font)) continue;
    seen.add(font);
    const source = sources[name];
    if (!source || font.embedded || !font.dictionary || !font.subset?.glyphs) continue;
    let data: Buffer;
    try {
      data = await subsets.encode(source, [...font.subset.glyphs]);
    } catch {
      continue; // pdfkit encodes this one itself in doc.end()
    }
    const subset = font.subset;
    subset.encode = () => data;
    // The font file object is the first one embed() makes: mark it as already deflated.
    const ref = internals.ref.bind(doc);
    let first = true;
    internals.ref = (init?: Record<string, unknown>) => {
      const made = ref(init);
      if (first) {
        first = false;
        made.data.Filter = 'FlateDecode';
        made.compress = false;
      }
      return made;
    };
    try {
      font.finalize();
    } finally {
      delete (internals as unknown as Record<string, unknown>).ref; // back to the prototype's
    }
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
}
