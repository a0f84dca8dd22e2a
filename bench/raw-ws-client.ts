// A minimal WebSocket client for the receiving sockets of bench/ws.ts.
// The `ws` client costs a stream, an event and a Buffer per frame; with 1,000 sockets × 100 msg/s
// in one process that cost, not the server, set the measured latency. This client reads every
// socket into one shared buffer (net `onread`, no stream 'data' events, no per-read allocation)
// and hands each complete text frame to the caller as a view into that buffer.
// It speaks just what the bench needs from a server: the HTTP Upgrade handshake, one masked
// text frame out (auth), unmasked frames in (7/16/64-bit lengths), pong for ping, close.
// No extensions, no UTF-8 validation. Fragmented messages are reassembled (the hub never sends
// them, so that path is correct rather than fast).
import { createHash, randomBytes, randomFillSync } from 'node:crypto';
import net from 'node:net';

const ACCEPT_GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';
/** Larger frames mean a broken stream here: the bench's frames are about 1 KB. */
const MAX_PAYLOAD = 64 * 1024 * 1024;
const OP_CONTINUATION = 0;
const OP_TEXT = 1;
const OP_CLOSE = 8;
const OP_PING = 9;
const OP_PONG = 10;
const AUTH_OK = Buffer.from('"auth_ok"');
const HEADER_END = Buffer.from('\r\n\r\n');

// One read buffer for every socket of this thread: onread callbacks run one at a time, and
// bytes that must outlive a callback (a split header or payload) are copied out of it.
const readBuffer = Buffer.allocUnsafe(256 * 1024);

export interface RawWebSocket {
  /** Called once when an authenticated socket closes, whichever side closed it. */
  onClose: (() => void) | null;
  /** Destroys the TCP socket without a closing handshake. */
  terminate(): void;
}

/** A client frame: FIN, masked with a fresh random key (RFC 6455 §5.3). */
function clientFrame(opcode: number, payload: Buffer): Buffer {
  if (payload.length > 0xffff) throw new Error('client frames here are small');
  const lengthBytes = payload.length < 126 ? 0 : 2;
  const maskAt = 2 + lengthBytes;
  const frame = Buffer.allocUnsafe(maskAt + 4 + payload.length);
  frame[0] = 0x80 | opcode;
  if (lengthBytes === 0) frame[1] = 0x80 | payload.length;
  else {
    frame[1] = 0x80 | 126;
    frame.writeUInt16BE(payload.length, 2);
  }
  randomFillSync(frame, maskAt, 4);
  for (let i = 0; i < payload.length; i++) frame[maskAt + 4 + i] = payload[i]! ^ frame[maskAt + (i & 3)]!;
  return frame;
}

/**
 * Splits a server byte stream into messages. Frames whole inside one read are delivered as
 * views into it (valid only during the callback); only frames split across reads are copied.
 */
class FrameReader {
  /** Bytes of a frame header cut off by the end of a read (at most 9). */
  private head: Buffer | null = null;
  /** Payload of a frame split across reads, and how much of it has arrived. */
  private payload: Buffer | null = null;
  private filled = 0;
  private fin = true;
  private opcode = 0;
  /** Parts of a fragmented message, and its opcode. */
  private fragments: Buffer[] | null = null;
  private fragmentsOpcode = 0;

  constructor(private readonly onMessage: (opcode: number, payload: Buffer) => void) {}

  push(chunk: Buffer): void {
    let offset = 0;
    if (this.payload) {
      offset = Math.min(this.payload.length - this.filled, chunk.length);
      chunk.copy(this.payload, this.filled, 0, offset);
      this.filled += offset;
      if (this.filled < this.payload.length) return;
      const payload = this.payload;
      this.payload = null;
      this.frame(this.fin, this.opcode, payload);
    }
    let bytes = chunk;
    if (this.head) {
      bytes = Buffer.concat([this.head, chunk.subarray(offset)]);
      this.head = null;
      offset = 0;
    }
    while (offset < bytes.length) {
      const next = this.readFrame(bytes, offset);
      if (next < 0) {
        // Buffer.from copies: the read buffer is reused by the next read.
        this.head = Buffer.from(bytes.subarray(offset));
        return;
      }
      offset = next;
    }
  }

  /** Reads the frame at `offset`; returns the offset after it, or -1 if its header is incomplete. */
  private readFrame(bytes: Buffer, offset: number): number {
    const available = bytes.length - offset;
    if (available < 2) return -1;
    const b0 = bytes[offset]!;
    const b1 = bytes[offset + 1]!;
    if (b1 & 0x80) throw new Error('server frames must not be masked');
    let size = b1 & 0x7f;
    let start = offset + 2;
    if (size === 126) {
      if (available < 4) return -1;
      size = bytes.readUInt16BE(offset + 2);
      start += 2;
    } else if (size === 127) {
      if (available < 10) return -1;
      if (bytes.readUInt32BE(offset + 2) !== 0) throw new Error('frame too large');
      size = bytes.readUInt32BE(offset + 6);
      start += 8;
    }
    if (size > MAX_PAYLOAD) throw new Error('frame too large');
    const fin = (b0 & 0x80) !== 0;
    const opcode = b0 & 0x0f;
    const end = start + size;
    if (end <= bytes.length) {
      this.frame(fin, opcode, bytes.subarray(start, end));
      return end;
    }
    this.payload = Buffer.allocUnsafe(size);
    this.filled = bytes.copy(this.payload, 0, start);
    this.fin = fin;
    this.opcode = opcode;
    return bytes.length;
  }

  private frame(fin: boolean, opcode: number, payload: Buffer): void {
    if (opcode >= OP_CLOSE) return this.onMessage(opcode, payload); // control frames are never fragmented
    if (opcode === OP_CONTINUATION) {
      if (!this.fragments) throw new Error('continuation frame without a first fragment');
      this.fragments.push(Buffer.from(payload));
      if (!fin) return;
      const whole = Buffer.concat(this.fragments);
      this.fragments = null;
      return this.onMessage(this.fragmentsOpcode, whole);
    }
    if (this.fragments) throw new Error('new message inside a fragmented one');
    if (fin) return this.onMessage(opcode, payload);
    this.fragments = [Buffer.from(payload)];
    this.fragmentsOpcode = opcode;
  }
}

/**
 * Opens `<url>/ws`, authenticates with `token` and resolves once `auth_ok` arrives; rejects if
 * the socket fails or closes first. Afterwards every text frame goes to `onFrame` as a view that
 * is valid only during the call (copy what must be kept).
 */
export function openRawAuthed(url: string, token: string, onFrame: (frame: Buffer) => void): Promise<RawWebSocket> {
  const { hostname, port } = new URL(url);
  const key = randomBytes(16).toString('base64');
  const accept = createHash('sha1').update(key + ACCEPT_GUID).digest('base64');

  return new Promise((resolve, reject) => {
    let state: 'handshake' | 'auth' | 'open' | 'closed' = 'handshake';
    let response = Buffer.alloc(0);
    const socket = net.connect({
      host: hostname.replace(/^\[|\]$/g, ''),
      port: Number(port),
      onread: { buffer: readBuffer, callback: (n) => (onBytes(readBuffer.subarray(0, n)), true) },
    });
    socket.setNoDelay(true);
    const raw: RawWebSocket = { onClose: null, terminate: () => socket.destroy() };

    const fail = (error: Error) => {
      if (state !== 'open') reject(error);
      socket.destroy();
    };

    const reader = new FrameReader((opcode, payload) => {
      if (opcode === OP_TEXT) {
        if (state === 'open') return onFrame(payload);
        // The first frame answers the auth frame, as in openAuthed.
        if (payload.indexOf(AUTH_OK) < 0) return fail(new Error(`auth failed: ${payload.toString('utf8', 0, 200)}`));
        state = 'open';
        resolve(raw);
      } else if (opcode === OP_PING) {
        // The hub drops sockets that do not answer its pings (every 30 s).
        socket.write(clientFrame(OP_PONG, payload));
      } else if (opcode === OP_CLOSE) {
        // Echo the status code, then close the TCP side; the 'close' event reports it.
        socket.end(clientFrame(OP_CLOSE, payload.subarray(0, 2)));
      }
    });

    /** Collects the 101 response; what follows it is already the frame stream. */
    function readHandshake(bytes: Buffer): void {
      response = Buffer.concat([response, bytes]);
      const end = response.indexOf(HEADER_END);
      if (end < 0) return;
      const head = response.toString('latin1', 0, end);
      if (!/^HTTP\/1\.1 101 /.test(head)) return fail(new Error(`upgrade refused: ${head.split('\r\n')[0]}`));
      if (/\r\nsec-websocket-accept:\s*(\S+)/i.exec(head)?.[1] !== accept) return fail(new Error('bad Sec-WebSocket-Accept'));
      state = 'auth';
      socket.write(clientFrame(OP_TEXT, Buffer.from(JSON.stringify({ type: 'auth', token }))));
      reader.push(response.subarray(end + HEADER_END.length));
    }

    function onBytes(bytes: Buffer): void {
      if (state === 'closed') return;
      try {
        if (state === 'handshake') readHandshake(bytes);
        else reader.push(bytes);
      } catch (error) {
        fail(error as Error);
      }
    }

    socket.once('connect', () =>
      socket.write(
        `GET /ws HTTP/1.1\r\nHost: ${new URL(url).host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
          `Sec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: 13\r\n\r\n`,
      ),
    );
    socket.on('error', (error) => state !== 'open' && reject(error));
    socket.once('close', () => {
      const wasOpen = state === 'open';
      state = 'closed';
      if (wasOpen) raw.onClose?.();
      // A socket the server refuses (a cap, a bad token) closes before auth_ok: fail, don't hang.
      else reject(new Error('socket closed before auth_ok'));
    });
  });
}
