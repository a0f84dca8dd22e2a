// Who an authenticated A2A request is for: a member of one room, by its bearer token. The SDK
// scopes tasks by `userName` (the in-memory store) and the shared store by the caller's id and
// the room, so one member never reads another's task, nor a task of another room.
import type { ServerCallContext, User } from '@a2a-js/sdk/server';
import type { Caller } from '../../types.js';

export class RoomMember implements User {
  constructor(
    readonly caller: Caller,
    readonly roomId: string,
    /** Kept for this request only: the post goes through the registry as the caller. */
    readonly token: string,
    readonly address: string | null,
  ) {}

  get isAuthenticated(): boolean {
    return true;
  }

  /** The SDK scopes stored tasks by this: one member's tasks of one room. */
  get userName(): string {
    return `${this.caller.id}@${this.roomId}`;
  }
}

export function memberOf(context: ServerCallContext): RoomMember {
  const user = context.user;
  if (!(user instanceof RoomMember)) throw new Error('request without an authenticated room member');
  return user;
}
