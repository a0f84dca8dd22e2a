// The hub frames each room event once and writes those bytes to every recipient's TCP socket
// (src/transports/ws-wire.ts). Here the frames are read back by ws's own Receiver, across the
// three header sizes of RFC 6455 (7-bit, 16-bit and 64-bit lengths).
import { describe, expect, it } from 'vitest';
import * as wsLibrary from 'ws';
import type { RoomEvent } from '../../src/events/bus.js';
import { eventWire } from '../../src/transports/ws-wire.js';

type ReceiverLike = NodeJS.WritableStream & { on(event: 'message', listener: (data: Buffer, isBinary: boolean) => void): void };
const { Receiver } = wsLibrary as unknown as { Receiver: new (options: { isServer: boolean }) => ReceiverLike };

function readBack(frame: Buffer): Promise<{ text: string; isBinary: boolean }> {
  // A client-side receiver: server frames arrive unmasked.
  const receiver = new Receiver({ isServer: false });
  return new Promise((resolve, reject) => {
    receiver.on('message', (data, isBinary) => resolve({ text: data.toString('utf8'), isBinary }));
    receiver.on('error', reject);
    receiver.write(frame);
  });
}

function update(text: string): RoomEvent {
  return { event: 'room_update', room_id: 'r', data: { room: { announcement: text } } } as unknown as RoomEvent;
}

describe('eventWire', () => {
  // Payload sizes: under 126 bytes; 40 KB; '涌' is 3 bytes in UTF-8, so 30,000 of them pass 65,535.
  // The second header byte (RFC 6455 §5.2): the length itself up to 125, else 126 or 127.
  it.each([
    ['a 7-bit length', 'a', 10, 98],
    ['a 16-bit length', 'a', 40_000, 126],
    ['a 64-bit length', '涌', 30_000, 127],
  ])('builds one unmasked text frame with %s that ws reads back as the event', async (_label, char, count, lengthByte) => {
    const text = char.repeat(count);
    const wire = eventWire(update(text));
    const back = await readBack(wire.frame);
    expect(back.isBinary).toBe(false);
    expect(back.text).toBe(`{"type":"event","event":"room_update","room_id":"r","data":{"room":{"announcement":"${text}"}}}`);
    expect(wire.frame[0]).toBe(0x81); // FIN + text
    expect(wire.frame[1]).toBe(lengthByte); // not masked (high bit clear), the length's form
  });

  it('keeps a message_new free of the sender-private client_msg_id', async () => {
    const event = { event: 'message_new', room_id: 'r', data: { message: { seq: 1, client_msg_id: 'mine', text_content: 'x' } } } as unknown as RoomEvent;
    const payload = JSON.parse((await readBack(eventWire(event).frame)).text);
    expect(payload.data.message).toEqual({ seq: 1, text_content: 'x' });
  });
});
