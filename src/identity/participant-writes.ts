// Writes of participant records: durable in the store first, then indexed, and one
// read-modify-write of a participant at a time (redone when another node changed the record).
import { AppError } from '../errors.js';
import { NameTakenError, ParticipantChangedError, type ParticipantRecord, type Store } from '../storage/store.js';
import { nameKey } from './names.js';
import type { ParticipantIndex } from './participant-index.js';

/** Attempts of one read-modify-write that another node keeps changing under it. */
const MAX_REDOS = 5;

/** A record as read, kept apart from the copy about to be changed (fields are replaced, never mutated). */
export const asRead = (found: ParticipantRecord): ParticipantRecord => ({ kind: found.kind, record: { ...found.record } }) as ParticipantRecord;

export class ParticipantWrites {
  /** The last read-modify-write queued per participant id (see oneAtATime). */
  private readonly updating = new Map<string, Promise<void>>();

  constructor(
    private readonly store: Store,
    private readonly index: ParticipantIndex,
  ) {}

  /**
   * Runs a read-modify-write of one participant's record after the ones already running for
   * that participant. Each reads the record, changes it and puts it back whole; two interleaved
   * (read A, read B, put B, put A) would put back A's older copy: a rotated-away token would
   * come back on disk and in the token index, or a new token vanish.
   */
  oneAtATime<T>(id: string, run: () => Promise<T>): Promise<T> {
    const result = (this.updating.get(id) ?? Promise.resolve()).then(() => this.redoIfChanged(run));
    const settled = result.then(
      () => undefined,
      () => undefined,
    );
    this.updating.set(id, settled);
    void settled.then(() => {
      if (this.updating.get(id) === settled) this.updating.delete(id);
    });
    return result;
  }

  /**
   * Runs a read-modify-write again when another process wrote the record between its read and
   * its put (a shared store: several nodes, SPEC §11); each attempt reads anew.
   */
  private async redoIfChanged<T>(run: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await run();
      } catch (err) {
        if (!(err instanceof ParticipantChangedError) || attempt >= MAX_REDOS) throw err;
      }
    }
  }

  /**
   * Makes the record durable, then indexes it: nothing is visible before the write succeeded.
   * `expected`: the record as read before it was changed (the store's compare-and-set).
   */
  async put(found: ParticipantRecord, expected?: ParticipantRecord): Promise<void> {
    try {
      await this.store.putParticipant(found, nameKey(found.record.name), expected);
    } catch (err) {
      if (err instanceof NameTakenError) throw new AppError('name_taken', `The name "${found.record.name}" is taken`);
      throw err;
    }
    this.index.index(found);
  }
}
