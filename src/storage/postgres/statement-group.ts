// Grouped statements: many small writes of one node to PostgreSQL sent as one statement
// (room commits: 004_grouped_commits.sql; rate-limit counters: ./rate-limits.ts). Each
// statement is a transaction with its own round trip, backend wake-up and (for commits) WAL
// flush; with many callers at once (64 senders, each in its own room) that per-statement cost,
// not the work, was most of the database's and the nodes' CPU. So the items submitted during
// one turn of the event loop (the requests read together) go together, as one statement at the
// end of that turn (a delay of microseconds); a node runs at most `slots` statements of a kind
// at a time, and the items that arrive while all are busy wait and go together in the next free
// slot. A group holds at most `maxGroup` items.
//
//   const group = new StatementGroup(runGroup, { slots: 2, maxGroup: 32 });
//   const result = await group.submit(item);
//
// `run` gets the items of one group and answers one promise per item, in order: it settles the
// group's statement first (the slot is freed then), and an item may get a promise of further
// work (a commit tried again alone) that no longer holds the slot.

export interface StatementGroupOptions {
  /** Statements in flight at once. */
  slots: number;
  /** Most items in one statement. */
  maxGroup: number;
}

interface Waiting<T, R> {
  item: T;
  resolve: (value: R) => void;
  reject: (reason: unknown) => void;
}

export class StatementGroup<T, R> {
  private readonly waiting: Waiting<T, R>[] = [];
  private running = 0;
  private gathering = false;

  constructor(
    private readonly run: (items: T[]) => Promise<Promise<R>[]>,
    private readonly options: StatementGroupOptions,
  ) {}

  submit(item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.waiting.push({ item, resolve, reject });
      if (this.gathering) return;
      this.gathering = true;
      setImmediate(() => {
        this.gathering = false;
        this.pump();
      });
    });
  }

  /** Starts a statement in every free slot, each with as many waiting items as it may take. */
  private pump(): void {
    while (this.running < this.options.slots && this.waiting.length > 0) {
      const group = this.waiting.splice(0, this.options.maxGroup);
      this.running++;
      this.run(group.map((w) => w.item))
        .then(
          (outcomes) =>
            group.forEach((w, i) => (outcomes[i] ?? Promise.reject(new Error('no outcome for a grouped item'))).then(w.resolve, w.reject)),
          (err: unknown) => group.forEach((w) => w.reject(err)),
        )
        .finally(() => {
          this.running--;
          this.pump();
        });
    }
  }
}
