// One place where a change to a room becomes durable and then visible.
//
// Every mutation of a room (new messages, room record changes) goes through `commit`: the
// store's writes start in the same tick the change was made (so seqs are in log order), the
// promise resolves once they are on disk, and only then are the change's events published.
// Events are released in commit order per room even when a later commit's fsync finishes
// first, so subscribers see a room's events in the order the server committed them.
import type { EventBus, RoomEvent } from '../events/bus.js';
import type { Store } from '../storage/store.js';
import type { Message, RoomRecord } from '../types.js';

export interface CommitInput {
  room?: RoomRecord;
  /** Messages with seqs already taken from store.nextSeq in this same tick. */
  messages?: Message[];
  /** Built lazily so payloads reflect the state at publish time of this commit. */
  events?: RoomEvent[];
}

export class Committer {
  private readonly tails = new Map<string, Promise<void>>();

  constructor(
    private readonly store: Store,
    private readonly bus: EventBus,
  ) {}

  commit(roomId: string, input: CommitInput): Promise<void> {
    const writes: Promise<void>[] = [];
    if (input.messages && input.messages.length > 0) writes.push(this.store.appendMessages(roomId, input.messages));
    if (input.room) writes.push(this.store.putRoom(input.room));
    const durable = Promise.all(writes).then(() => undefined);

    const previous = this.tails.get(roomId) ?? Promise.resolve();
    // Publish after both this commit is durable and every earlier commit of the room has
    // published (or failed): a failed write publishes nothing but does not block the room.
    const published = previous.then(
      () => durable,
      () => durable,
    );
    const tail = published.then(
      () => {
        for (const event of input.events ?? []) this.bus.publish(event);
      },
      () => undefined,
    );
    this.tails.set(roomId, tail);
    void tail.then(() => {
      if (this.tails.get(roomId) === tail) this.tails.delete(roomId);
    });
    return durable;
  }

  /** Publishes events in the room's commit order without writing anything. */
  publish(roomId: string, events: RoomEvent[]): void {
    void this.commit(roomId, { events });
  }
}
