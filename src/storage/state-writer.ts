// Small state made durable by the snapshots themselves. While agents.json, users.json and
// rooms.json are small (FileStoreOptions.syncSnapshotBytes), a change is acknowledged once the
// snapshot files it touches have been rewritten with it (temp file, fsync, rename, directory
// fsync) — no journal line — so the files a person or a tool reads always show every
// acknowledged change, at the cost of one atomic rewrite per batch (not one per change).
//
// Group commit: changes that arrive while a batch is being written wait for the next batch,
// which writes each touched file once for all of them.
//
// A change may come with a `gate`: a write it depends on (a room commit's log append). The temp
// file is written and fsync'd while the gate's write runs, and renamed into place only once the
// gate resolved, so the state never names messages that are not durable, and the two writes cost
// one wait instead of two. A change whose gate rejects is dropped from the batch (rejected with
// the gate's error); the others are written again without it.
//
// No trace on reject: memory (`apply`) changes only after every file of the batch is renamed and
// its directory fsync'd. If a later file of the batch fails after an earlier one was renamed
// (or the directory fsync after a rename fails), the files renamed are rewritten from memory, so
// disk and memory agree again. A rewrite that fails too (the fault outlasts the batch) is logged
// and the file is remembered: the next batch rewrites it with its own files, and `repair` (at
// close) does if no batch comes, so a change that was refused never stays on disk.
import type { Logger } from '../logger.js';
import type { PreparedSnapshot, SnapshotFile } from './snapshot.js';
import type { StateEntry } from './state-journal.js';

interface Change {
  entries: readonly StateEntry[];
  gate: Promise<unknown>;
  apply: () => void;
  resolve: () => void;
  reject: (err: unknown) => void;
}

export class DirectStateWriter {
  private queue: Change[] = [];
  private running: Promise<void> | undefined;
  /** Files that may still hold a failed batch's changes (their restore failed). */
  private readonly unrestored = new Set<SnapshotFile<object>>();

  constructor(
    private readonly fileOf: (entry: StateEntry) => SnapshotFile<object>,
    private readonly logger: Logger,
  ) {}

  /** Resolves once nothing is queued or being written. */
  async idle(): Promise<void> {
    while (this.running) await this.running;
  }

  /** Rewrites from memory the files a failed restore left (see the top); logged if that fails again. */
  async repair(): Promise<void> {
    await this.idle();
    if (this.unrestored.size > 0) await this.restore([...this.unrestored]);
  }

  /**
   * Makes `entries` durable in the snapshot files after `gate` resolved; runs `apply` (and puts
   * the records in memory) once they are, then resolves. Rejects with no trace otherwise.
   */
  write(entries: readonly StateEntry[], gate: Promise<unknown>, apply: () => void): Promise<void> {
    // Its rejection is handled below, after the temp files are written; mark it handled now.
    gate.catch(() => undefined);
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ entries, gate, apply, resolve, reject });
      this.running ??= this.drain();
    });
  }

  private async drain(): Promise<void> {
    // Changes made in the same turn of the event loop share the first batch.
    await new Promise<void>((resolve) => setImmediate(resolve));
    try {
      while (this.queue.length > 0) await this.writeBatch(this.queue.splice(0));
    } finally {
      // Even after a bug threw in a batch: the next write starts a new drain instead of waiting forever.
      this.running = undefined;
    }
  }

  private async writeBatch(batch: Change[]): Promise<void> {
    let live = batch;
    while (live.length > 0) {
      const byFile = new Map<SnapshotFile<object>, object[]>();
      for (const file of this.unrestored) byFile.set(file, []); // rewritten with the batch
      for (const change of live) {
        for (const entry of change.entries) {
          const file = this.fileOf(entry);
          const records = byFile.get(file) ?? [];
          records.push(entry.r);
          byFile.set(file, records);
        }
      }
      const prepared: PreparedSnapshot[] = [];
      try {
        for (const [file, records] of byFile) prepared.push(await file.prepare(records));
      } catch (err) {
        await Promise.all(prepared.map((p) => p.discard()));
        // The gates' own writes are the callers' to undo; wait for them so none is left unsettled.
        await Promise.allSettled(live.map((c) => c.gate));
        for (const change of live) change.reject(err);
        return;
      }
      const gates = await Promise.allSettled(live.map((c) => c.gate));
      const failed = live.filter((_, i) => gates[i]!.status === 'rejected');
      if (failed.length > 0) {
        failed.forEach((change) => change.reject((gates[live.indexOf(change)] as PromiseRejectedResult).reason));
        live = live.filter((_, i) => gates[i]!.status === 'fulfilled');
        await Promise.all(prepared.map((p) => p.discard()));
        continue; // written again without the changes whose gate failed
      }
      const files = [...byFile.keys()];
      let published = 0;
      try {
        for (const p of prepared) {
          await p.publish();
          published++;
        }
      } catch (err) {
        await Promise.all(prepared.slice(published + 1).map((p) => p.discard()));
        await this.restore(files.slice(0, published + 1));
        for (const change of live) change.reject(err);
        return;
      }
      for (const file of files) this.unrestored.delete(file);
      for (const change of live) {
        for (const entry of change.entries) this.fileOf(entry).set(entry.r);
        change.apply();
        change.resolve();
      }
      return;
    }
  }

  /** Rewrites files that may hold a failed batch's changes with what memory holds. */
  private async restore(files: SnapshotFile<object>[]): Promise<void> {
    for (const file of files) {
      try {
        await file.write();
        this.unrestored.delete(file);
      } catch (err) {
        this.unrestored.add(file);
        this.logger.error({ err, file: file.path }, 'a snapshot may hold a change that failed; restoring it failed too (done again with the next write)');
      }
    }
  }
}
