// The in-process event bus: the runtime publishes after a change is durable; transports
// subscribe. Event types live in src/protocol/events.ts (shared with the client).
import type { AccessEvent, RoomEvent } from '../protocol/events.js';

export type { AccessEvent, RoomEvent, RoomEventName } from '../protocol/events.js';

export type RoomEventListener = (event: RoomEvent) => void;

export interface EventBus {
  publish(event: RoomEvent): void;
  subscribe(listener: RoomEventListener): () => void;
  publishAccess(event: AccessEvent): void;
  subscribeAccess(listener: (event: AccessEvent) => void): () => void;
}

/** Synchronous in-process bus: listeners run in publish order, so per-room order is commit order. */
export class InProcessBus implements EventBus {
  private readonly listeners = new Set<RoomEventListener>();
  private readonly accessListeners = new Set<(event: AccessEvent) => void>();

  publish(event: RoomEvent): void {
    for (const listener of this.listeners) {
      try {
        listener(event);
      } catch {
        // A failing listener must not stop delivery to the others.
      }
    }
  }

  subscribe(listener: RoomEventListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  publishAccess(event: AccessEvent): void {
    for (const listener of this.accessListeners) {
      try {
        listener(event);
      } catch {
        // see publish
      }
    }
  }

  subscribeAccess(listener: (event: AccessEvent) => void): () => void {
    this.accessListeners.add(listener);
    return () => this.accessListeners.delete(listener);
  }
}
