// How the hub writes room events to one socket (src/transports/ws-session.ts): the first event
// of a tick goes to the TCP socket at once; the others of the same tick (a group commit publishes
// several) are corked and leave in one write at the end of the tick; order is kept throughout.
import { Writable, type Duplex } from 'node:stream';
import { describe, expect, it } from 'vitest';
import type WebSocket from 'ws';
import type { RoomEvent } from '../../src/events/bus.js';
import { Session } from '../../src/transports/ws-session.js';
import { eventWire } from '../../src/transports/ws-wire.js';

/** A TCP socket stand-in that records each write it is handed: one buffer, or several at once. */
class RecordingSocket extends Writable {
  readonly writes: string[][] = [];
  override _write(chunk: Buffer, _encoding: string, done: () => void): void {
    this.writes.push([chunk.toString('utf8')]);
    done();
  }
  override _writev(chunks: { chunk: Buffer }[], done: () => void): void {
    this.writes.push(chunks.map((c) => c.chunk.toString('utf8')));
    done();
  }
}

function openSession(): { session: Session; socket: RecordingSocket } {
  const socket = new RecordingSocket();
  // The parts of a `ws` socket the event path reads: open, and nothing buffered.
  const ws = { readyState: 1, bufferedAmount: 0, terminate() {} } as unknown as WebSocket;
  const session = new Session(ws, { maxBufferedBytes: 1_000_000, maxQueuedEvents: 100 }, null, socket as unknown as Duplex);
  session.state = 'open';
  session.subs.set('r', { lastSent: 0, queue: null });
  return { session, socket };
}

function message(seq: number): RoomEvent {
  return { event: 'message_new', room_id: 'r', data: { message: { seq, message_id: `m${seq}`, text_content: `text ${seq}` } } } as unknown as RoomEvent;
}

/** The seqs a list of written frames carries, in order. */
function seqs(frames: string[]): number[] {
  return frames.map((f) => Number(/"seq":(\d+)/.exec(f)![1]));
}

const nextTick = () => new Promise<void>((resolve) => process.nextTick(resolve));

describe('room events to one socket', () => {
  it('writes the first event of a tick at once', () => {
    const { session, socket } = openSession();
    session.deliver('r', eventWire(message(1)), 1);
    expect(socket.writes.map(seqs)).toEqual([[1]]);
  });

  it('writes the rest of a tick together at its end, after the first, in order', async () => {
    const { session, socket } = openSession();
    for (const seq of [1, 2, 3, 4]) session.deliver('r', eventWire(message(seq)), seq);
    expect(socket.writes.map(seqs)).toEqual([[1]]);
    await nextTick();
    expect(socket.writes.map(seqs)).toEqual([[1], [2, 3, 4]]);
    // The next tick starts again with a write at once.
    session.deliver('r', eventWire(message(5)), 5);
    expect(socket.writes.map(seqs)).toEqual([[1], [2, 3, 4], [5]]);
  });

  it('skips an event it already wrote (the replay seam) without disturbing the order', async () => {
    const { session, socket } = openSession();
    session.deliver('r', eventWire(message(1)), 1);
    session.deliver('r', eventWire(message(1)), 1);
    session.deliver('r', eventWire(message(2)), 2);
    await nextTick();
    expect(socket.writes.flatMap(seqs)).toEqual([1, 2]);
  });
});
