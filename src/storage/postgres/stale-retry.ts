// Reload-and-retry for room commits when several nodes share one database (Store guarantee 4):
// a commit computed from an old version rejects with StaleRoomError and nothing is written; the
// caller reloads the room, computes the commit again from the new state, and tries again. Works
// with any Store (the single-process stores simply never raise it).
//
//   const { version } = await commitWithRetry(store, roomId, (loaded) => ({
//     room: { ...loaded.room, … },
//     messages: [{ ...draft, seq: loaded.lastSeq + 1 }],
//   }));
//
// `compute` must be a pure function of the loaded room (it may run several times) and may
// return null to give up (e.g. the action is no longer valid in the new state).
import { StaleRoomError, type LoadedRoom, type RoomCommit, type Store } from '../store.js';

export type CommitPlan = Omit<RoomCommit, 'expectedVersion'>;

export interface RetryOptions {
  /** Tries before giving up with the last StaleRoomError (default 50). */
  maxAttempts?: number;
  /** Upper bound of the random pause before try n is n × this, capped at 50 ms (default 2 ms). */
  backoffMs?: number;
  /** Skip the first load: the caller's cached copy (reloaded only after a stale). */
  loaded?: LoadedRoom;
}

export interface RetryResult {
  /** The room's version after the commit. */
  version: number;
  /** The state the winning commit was computed from. */
  loaded: LoadedRoom;
  commit: CommitPlan;
  attempts: number;
}

export async function commitWithRetry(
  store: Store,
  roomId: string,
  compute: (loaded: LoadedRoom) => CommitPlan | null | Promise<CommitPlan | null>,
  options: RetryOptions = {},
): Promise<RetryResult | null> {
  const maxAttempts = options.maxAttempts ?? 50;
  const backoff = options.backoffMs ?? 2;
  let loaded = options.loaded;
  for (let attempt = 1; ; attempt++) {
    loaded ??= await store.loadRoom(roomId);
    if (!loaded) throw new Error(`room ${roomId} does not exist`);
    const commit = await compute(loaded);
    if (commit === null) return null;
    try {
      const version = await store.commitRoom(roomId, { ...commit, expectedVersion: loaded.version });
      return { version, loaded, commit, attempts: attempt };
    } catch (err) {
      if (!(err instanceof StaleRoomError) || attempt >= maxAttempts) throw err;
    }
    loaded = undefined;
    // Random pause so racing writers spread out instead of colliding again in lockstep.
    await new Promise((resolve) => setTimeout(resolve, Math.random() * Math.min(50, attempt * backoff)));
  }
}
