// Sends `room_changes` notifications right after commits, batched: each flush is one statement
// (one transaction) carrying every payload queued since the last one, in queue order, and only
// one flush runs at a time, so under load notifications ride together.
//
// Why not NOTIFY inside each commit: PostgreSQL takes a database-wide lock at a notifying
// transaction's pre-commit and holds it until the commit is flushed, so notifying commits queue
// up behind each other's WAL flush (measured: 233 vs 493 commits/s on this machine's disk).
// After-commit notifications keep "only if committed" but may, across nodes, arrive out of
// commit order, and are lost if the node dies between its commit and the flush. Neither
// matters to the nodes (RoomRuntime's reload reads what committed from the tables and ignores
// versions it has seen). A notification lost with its node is made up for by RoomFeed's poll
// (the rooms a node has loaded), by the stored deadlines every node polls (a running turn of a
// room no node has loaded, ./deadlines.ts), and by reads, which check the room's committed
// version first (`Rooms.room`).
//
// A batch whose NOTIFY fails (connection lost, database restarting) is not dropped: it goes
// back to the head of the queue, ahead of newer payloads, and is sent again after a pause
// (100 ms doubling to 2 s, ./pause.ts), for up to RETRIES attempts. Past that (the database stays away for
// about half a minute) it is reported and dropped: the other nodes' poll then brings the
// followed rooms' commits. Closing the store sends what is queued once more, without pausing.
import type pg from 'pg';
import { ROOM_CHANNEL } from './feed.js';
import { Pause, retryDelayMs } from './pause.js';

const RETRIES = 20;

export class CommitNotifier {
  private queue: string[] = [];
  private flushing: Promise<void> | undefined;
  private closing = false;
  private readonly pause = new Pause();

  constructor(
    private readonly pool: pg.Pool,
    private readonly onError: (err: Error) => void = () => undefined,
  ) {}

  push(payload: string): void {
    this.queue.push(payload);
    this.flushing ??= this.flush();
  }

  /** Resolves once everything queued so far was sent (or given up). */
  async drain(): Promise<void> {
    while (this.flushing) await this.flushing;
  }

  /** Like drain, but a failing batch is tried once more at once instead of after pauses. */
  async close(): Promise<void> {
    this.closing = true;
    this.pause.wake();
    await this.drain();
  }

  private async flush(): Promise<void> {
    // Let the commits resolving in this tick queue theirs first.
    await new Promise((resolve) => setImmediate(resolve));
    try {
      let failures = 0;
      while (this.queue.length > 0) {
        const batch = this.queue;
        this.queue = [];
        try {
          await this.pool.query(
            `SELECT pg_notify('${ROOM_CHANNEL}', t.p) FROM unnest($1::text[]) WITH ORDINALITY AS t(p, i) ORDER BY t.i`,
            [batch],
          );
          failures = 0;
        } catch (err) {
          this.onError(err as Error);
          failures++;
          if (failures >= RETRIES || (this.closing && failures > 1)) {
            failures = 0;
            continue; // given up: the feeds' poll covers these commits
          }
          // Back ahead of what was queued meanwhile: each room's notifications stay in order.
          this.queue = batch.concat(this.queue);
          if (!this.closing) await this.pause.wait(retryDelayMs(failures));
        }
      }
    } finally {
      this.flushing = undefined;
    }
  }
}
