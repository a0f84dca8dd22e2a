// Wire helpers of the hub: event serialisation (once per event), raw frame text, the
// answer to a refused upgrade, and the socket indexes.
import type { Duplex } from 'node:stream';
import * as wsLibrary from 'ws';
import type { RawData } from 'ws';
import type { RoomEvent } from '../events/bus.js';
import type { Message } from '../types.js';

/** One UTF-8 buffer per event, written as-is to every recipient (no per-socket encoding). */
export function serialise(event: RoomEvent): Buffer {
  const data =
    event.event === 'message_new' || event.event === 'message_update' ? { message: withoutPrivate(event.data.message) } : event.data;
  return Buffer.from(JSON.stringify({ type: 'event', event: event.event, room_id: event.room_id, data }), 'utf8');
}

/**
 * A room event ready for every recipient: the whole WebSocket text frame around its JSON (header
 * and payload in one buffer), built once. A fan-out to N sockets then costs N plain socket writes
 * instead of N framings by `ws` (a header allocated, two writes and a cork each). Wrapped so it
 * cannot be mistaken for an unframed payload, which is also a Buffer.
 */
export interface EventWire {
  readonly frame: Buffer;
}

// ws frames with its own Sender; @types/ws does not declare it, so its one static is typed here.
const { Sender } = wsLibrary as unknown as {
  Sender: { frame(data: Buffer, options: { fin: boolean; opcode: number; mask: boolean; readOnly: boolean; rsv1: boolean }): Buffer[] };
};
const TEXT_OPCODE = 1;

export function eventWire(event: RoomEvent): EventWire {
  // Server frames are never masked (RFC 6455 §5.1); the hub negotiates no compression (rsv1).
  const parts = Sender.frame(serialise(event), { fin: true, opcode: TEXT_OPCODE, mask: false, readOnly: true, rsv1: false });
  return { frame: Buffer.concat(parts) };
}

/** client_msg_id belongs to the sender's retries and is never shown to others (SPEC §7). */
function withoutPrivate(message: Message): Message {
  if (message.client_msg_id === undefined) return message;
  const { client_msg_id: _clientMsgId, ...rest } = message;
  return rest;
}

/** Logs are contiguous (seq k at index k-1); falls back to a search if that ever changes. */
export function messageAt(messages: readonly Message[], seq: number): Message | undefined {
  const guess = messages[seq - 1];
  if (guess?.seq === seq) return guess;
  return messages.find((m) => m.seq === seq);
}

export function rawText(data: RawData): string {
  if (Array.isArray(data)) return Buffer.concat(data).toString('utf8');
  if (data instanceof ArrayBuffer) return Buffer.from(data).toString('utf8');
  return data.toString('utf8');
}

export function refuse(socket: Duplex, status: number, statusText: string, body: string): void {
  const payload = Buffer.from(`${body}\n`, 'utf8');
  socket.end(
    `HTTP/1.1 ${status} ${statusText}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ${payload.length}\r\nConnection: close\r\n\r\n${payload.toString('utf8')}`,
  );
  socket.once('finish', () => socket.destroy());
}

/** Sockets by a key (room, participant, token hash); empty sets are removed. */
export class SocketIndex<K, S> {
  private readonly map = new Map<K, Set<S>>();

  get size(): number {
    return this.map.size;
  }

  get(key: K): ReadonlySet<S> | undefined {
    return this.map.get(key);
  }

  add(key: K, socket: S): void {
    let set = this.map.get(key);
    if (!set) this.map.set(key, (set = new Set()));
    set.add(socket);
  }

  delete(key: K, socket: S): void {
    const set = this.map.get(key);
    if (!set) return;
    set.delete(socket);
    if (set.size === 0) this.map.delete(key);
  }
}

/** Whether a browser Origin is in ALLOWED_ORIGINS ("*" allows any). */
export function originAllowed(origin: string, allowed: readonly string[]): boolean {
  const wanted = origin.toLowerCase().replace(/\/$/, '');
  return allowed.some((o) => o === '*' || o.toLowerCase().replace(/\/$/, '') === wanted);
}
