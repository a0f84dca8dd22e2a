// Writing to a Node stream with backpressure: wait for 'drain' when write() says so, and fail
// (instead of hanging) when the stream errors or closes first.
import { Transform } from 'node:stream';

type Listener = (...args: unknown[]) => void;

function outEvents(out: NodeJS.WritableStream): { on: (e: string, l: Listener) => void; off: (e: string, l: Listener) => void } {
  const s = out as unknown as { on(e: string, l: Listener): void; off?(e: string, l: Listener): void; removeListener(e: string, l: Listener): void };
  return { on: (e, l) => s.on(e, l), off: (e, l) => (s.off ? s.off(e, l) : s.removeListener(e, l)) };
}

/** Resolves on the first of `events`; rejects on 'error' or on 'close' (unless listed). */
export function waitFor(out: NodeJS.WritableStream, events: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const ev = outEvents(out);
    const cleanup = (): void => {
      for (const e of events) ev.off(e, done);
      ev.off('error', fail);
      if (!events.includes('close')) ev.off('close', closed);
    };
    const done: Listener = () => {
      cleanup();
      resolve();
    };
    const fail: Listener = (err) => {
      cleanup();
      reject(err instanceof Error ? err : new Error(String(err)));
    };
    const closed: Listener = () => {
      cleanup();
      reject(new Error('export stream closed before the export was written'));
    };
    for (const e of events) ev.on(e, done);
    ev.on('error', fail);
    if (!events.includes('close')) ev.on('close', closed);
  });
}

function isDestroyed(out: NodeJS.WritableStream): boolean {
  const s = out as unknown as { destroyed?: boolean; writableEnded?: boolean };
  return s.destroyed === true || s.writableEnded === true;
}

/** Collects text into chunks of about `chunkChars` and writes them with backpressure. */
export class ChunkWriter {
  private parts: string[] = [];
  private size = 0;

  constructor(
    private readonly out: NodeJS.WritableStream,
    private readonly chunkChars = 64 * 1024,
  ) {}

  push(text: string): void {
    this.parts.push(text);
    this.size += text.length;
  }

  /** Writes the collected text once it is large enough (or always, with force). */
  async flush(force = false): Promise<void> {
    if (this.size === 0 || (!force && this.size < this.chunkChars)) return;
    if (isDestroyed(this.out)) throw new Error('export stream closed before the export was written');
    const chunk = this.parts.join('');
    this.parts = [];
    this.size = 0;
    if (!this.out.write(chunk)) await waitFor(this.out, ['drain']);
  }

  /** Writes the collected text, then `bytes` as they are (large binary parts: no copy into the text). */
  async pushBytes(bytes: Buffer): Promise<void> {
    await this.flush(true);
    if (isDestroyed(this.out)) throw new Error('export stream closed before the export was written');
    if (!this.out.write(bytes)) await waitFor(this.out, ['drain']);
  }

  /** Writes what is left, ends the stream and resolves once it has finished. */
  async end(): Promise<void> {
    await this.flush(true);
    const finished = waitFor(this.out, ['finish']);
    this.out.end();
    await finished;
  }
}

/**
 * Joins small chunks into ones of about `chunkBytes` (pdfkit emits one chunk per object line,
 * a few hundred bytes each; an HTTP response would send each one on its own).
 */
export function coalesce(chunkBytes = 64 * 1024): Transform {
  let parts: Uint8Array[] = [];
  let size = 0;
  const take = (): Buffer => {
    const joined = Buffer.concat(parts, size);
    parts = [];
    size = 0;
    return joined;
  };
  return new Transform({
    readableHighWaterMark: chunkBytes,
    writableHighWaterMark: chunkBytes,
    transform(chunk: Uint8Array, _enc, cb) {
      parts.push(chunk);
      size += chunk.length;
      if (size >= chunkBytes) cb(null, take());
      else cb();
    },
    flush(cb) {
      if (size > 0) cb(null, take());
      else cb();
    },
  });
}
