// The PostgreSQL store (STORE=postgres, SPEC §11): the Store seam (../store.ts) on one database
// that any number of server processes ("nodes") share.
//
//   const store = new PgStore({ connectionString: process.env.DATABASE_URL });
//   await store.open();            // connects, applies pending migrations (./migrations)
//   ...
//   await store.close();
//
// How it keeps the seam's guarantees:
// 1. Durable on resolve: every write is one statement in autocommit mode, so it resolves after
//    PostgreSQL's COMMIT (synchronous_commit must stay on, the default).
// 2. No trace on reject: a statement that fails rolls back. A connection lost while the answer
//    to a commit is in flight is the one case where the outcome is unknown; the store then asks
//    the database whether that commit's id was recorded (table room_commits) and resolves or
//    rejects accordingly (`settleInDoubt`).
// 3. Atomic room commits: `chatroom_commit_room` (001_initial.sql) does the whole commit in one
//    transaction.
// 4. One writer per room across nodes: the function locks the room row (SELECT … FOR UPDATE),
//    compares its version with `expectedVersion` and raises CRSTL → StaleRoomError. Reload and
//    retry with `commitWithRetry` (./stale-retry.ts).
// 5. Caller-owned copies: every read parses fresh rows.
// 6. Gapless seqs: the function accepts only lastSeq+1, +2, … for new messages; a new version
//    of a message replaces its row (same seq, same message_id).
//
// Each commit with a new state also sets the room's row in `deadlines` from the running turn
// (./deadlines.ts claims due ones across nodes).
//
// Every commit (and room creation) NOTIFYs `room_changes` with `<room_id>:<version>:<last_seq>`:
// by default right after the commit, batched (./notifier.ts says why), or with
// `notify: 'in-commit'` inside its transaction. `RoomFeed` (./feed.ts) is the listening side.
// After-commit notifications carry the commit's rows and new state when they fit in a payload
// (`commitPayload`): a node that holds the room at the version before takes them from there
// instead of reading them back (three reads per commit per node otherwise).
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import type { Message, PublicRoomSummary, RoomRecord } from '../../types.js';
import { checkCommitSeqs, participantIdOf } from '../store-util.js';
import { NameTakenError, ParticipantChangedError, StaleRoomError } from '../store.js';
import type { CommitReads, LoadedRoom, MessagePage, ParticipantRecord, RoomChangesSince, RoomCommit, Store } from '../store.js';
import { SOCKETS_CHANNEL, TOKEN_CHANNEL } from './feed.js';
import { commitPayload } from './feed.js';
import { migrate } from './migrations.js';
import { StatementGroup } from './statement-group.js';
import { CommitNotifier } from './notifier.js';
import {
  BAD_SEQ,
  UNIQUE_VIOLATION,
  LOCK_NOT_AVAILABLE,
  isServerError,
  isDefiniteFailure,
  toParticipant,
  backendPid,
  column,
  searchText,
  deadlineParams,
  COMMIT_ARGS,
  STATE_PARAM,
  RECORDS_PARAM,
  EVENTS_PARAM,
  commitParams,
  roomColumns,
  likePattern,
  checkMessagesOf,
  runCommitStatement,
  COMMIT_SLOTS,
  MAX_COMMIT_GROUP,
  groupStatement,
  byRoomId,
  commitError,
  type ParticipantRow,
  type PendingCommit,
  type CommitMade,
  type GroupRow,
} from './statements.js';
import { messageById, messageByClientId, changesSince } from './queries.js';

export interface PgStoreOptions {
  /** postgres://user:password@host:port/database (DATABASE_URL). */
  connectionString: string;
  /** Connections in this node's pool (default 10). */
  poolSize?: number;
  /** Told about idle-connection errors the pool recovers from by itself. */
  onPoolError?: (err: Error) => void;
  /** Tags this node's connections in pg_stat_activity. */
  applicationName?: string;
  /**
   * When commits NOTIFY room_changes: 'after-commit' (default) right after, batched
   * (./notifier.ts), or 'in-commit' inside the commit's transaction (commit order, survives a
   * crash, but serialises commits on the WAL flush: see 001_initial.sql).
   */
  notify?: 'after-commit' | 'in-commit';
  /**
   * The look-alike keys of a name (confusable skeletons, SPEC §3), stored with each new
   * participant so that no two nodes register look-alike names (the server passes the identity
   * layer's function; without it only `nameKey` is unique).
   */
  lookAlikeKeysOf?: (name: string) => string[];
  /**
   * Room commit statements in flight at once before commits start to go in groups
   * (./statement-group.ts; default 2).
   */
  commitSlots?: number;
}



export class PgStore implements Store {
  private readonly pool: pg.Pool;
  private readonly notifier: CommitNotifier | undefined;
  private readonly commits: StatementGroup<PendingCommit, CommitMade>;
  private counters: pg.Pool | undefined;
  private opened = false;
  private closed = false;

  constructor(private readonly options: PgStoreOptions) {
    this.pool = new pg.Pool({
      connectionString: options.connectionString,
      max: options.poolSize ?? 10,
      application_name: options.applicationName ?? 'agent-chatroom',
    });
    // An idle client whose connection drops emits 'error' on the pool; unhandled, it would
    // crash the process. The pool replaces the client on its own.
    this.pool.on('error', (err) => options.onPoolError?.(err));
    if (options.notify !== 'in-commit') this.notifier = new CommitNotifier(this.pool, options.onPoolError);
    this.commits = new StatementGroup((items) => this.runCommitGroup(items), {
      slots: options.commitSlots ?? COMMIT_SLOTS,
      maxGroup: MAX_COMMIT_GROUP,
    });
  }

  /** Where the store connects (the room feed opens its own LISTEN connection there). */
  get connectionString(): string {
    return this.options.connectionString;
  }

  /** The node's pool, for components that share it (deadlines, presence). */
  get connectionPool(): pg.Pool {
    return this.pool;
  }

  /**
   * A small second pool for counters whose last moments may be lost in a database crash without
   * breaking a promise (rate limits: a crash forgets at most the last few calls' counts): its
   * sessions run with `synchronous_commit = off`, so a counter update does not wait for a WAL
   * flush of its own before the call goes on to its real, durable commit. Nothing a client is
   * told is stored goes through it.
   */
  get counterPool(): pg.Pool {
    if (!this.counters) {
      this.counters = new pg.Pool({
        connectionString: this.options.connectionString,
        max: 4,
        application_name: `${this.options.applicationName ?? 'agent-chatroom'}-counters`,
        options: '-c synchronous_commit=off',
      });
      this.counters.on('error', (err) => this.options.onPoolError?.(err));
    }
    return this.counters;
  }

  async open(): Promise<void> {
    if (this.opened) return;
    await migrate(this.pool);
    await this.addMissingLookAlikes();
    this.opened = true;
  }

  /**
   * Participants stored without look-alike rows (before migration 002, or by a store without
   * `lookAlikeKeysOf`) get them from their names. A key another participant already holds is
   * left to that one: two look-alike names stored earlier both stay.
   */
  private async addMissingLookAlikes(): Promise<void> {
    const keysOf = this.options.lookAlikeKeysOf;
    if (!keysOf) return;
    const { rows } = await this.pool.query<{ id: string; name: string }>(
      'SELECT id, name FROM participants p WHERE NOT EXISTS (SELECT 1 FROM participant_look_alikes l WHERE l.participant_id = p.id) ORDER BY position',
    );
    for (let i = 0; i < rows.length; i += 1000) {
      const keys: string[] = [];
      const ids: string[] = [];
      for (const { id, name } of rows.slice(i, i + 1000)) {
        for (const key of keysOf(name)) {
          keys.push(column(key));
          ids.push(id);
        }
      }
      await this.pool.query(
        'INSERT INTO participant_look_alikes (key, participant_id) SELECT * FROM unnest($1::text[], $2::text[]) ON CONFLICT (key) DO NOTHING',
        [keys, ids],
      );
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.notifier?.close();
    await this.counters?.end();
    await this.pool.end();
  }

  // ── participants ──
  async getParticipant(id: string): Promise<ParticipantRecord | undefined> {
    const { rows } = await this.pool.query<ParticipantRow>('SELECT kind, record FROM participants WHERE id = $1', [id]);
    return rows[0] && toParticipant(rows[0]);
  }

  async findParticipantByTokenHash(tokenHash: string): Promise<ParticipantRecord | undefined> {
    const { rows } = await this.pool.query<ParticipantRow>(
      'SELECT kind, record FROM participants WHERE token_hashes @> ARRAY[$1::text] ORDER BY position LIMIT 1',
      [column(tokenHash)],
    );
    return rows[0] && toParticipant(rows[0]);
  }

  async findParticipantByNameKey(nameKey: string): Promise<ParticipantRecord | undefined> {
    const { rows } = await this.pool.query<ParticipantRow>('SELECT kind, record FROM participants WHERE name_key = $1', [
      column(nameKey),
    ]);
    return rows[0] && toParticipant(rows[0]);
  }

  async putParticipant(participant: ParticipantRecord, nameKey: string, expected?: ParticipantRecord): Promise<void> {
    const id = participantIdOf(participant);
    const text = JSON.stringify(participant.record);
    // A new participant (no `expected`: a registration) claims its look-alike keys in the same
    // statement; a later put of the record (tokens, last_active) keeps them.
    const lookAlikes = expected ? [] : (this.options.lookAlikeKeysOf?.(participant.record.name) ?? []).map(column);
    const upsert = `INSERT INTO participants (id, kind, name, name_key, token_hashes, record) VALUES ($1, $2, $3, $4, $5, $6)
         ON CONFLICT (id) DO UPDATE
           SET kind = EXCLUDED.kind, name = EXCLUDED.name, name_key = EXCLUDED.name_key,
               token_hashes = EXCLUDED.token_hashes, record = EXCLUDED.record
           WHERE $7::text IS NULL OR participants.record::text IN ($7::text, $6::text)`;
    const values = [
      id,
      participant.kind,
      column(participant.record.name),
      column(nameKey),
      participant.record.token_hashes.map(column),
      text,
      expected ? JSON.stringify(expected.record) : null,
    ];
    try {
      // An upsert of the same values is idempotent: repeating it settles a lost answer. With
      // `expected`, the update applies only while the row holds that record (a json column keeps
      // the text it was given, so comparing texts compares records) or already holds this one.
      if (lookAlikes.length > 0) {
        await this.retryInDoubt(() => this.pool.query(
          `WITH up AS (${upsert} RETURNING id)
           INSERT INTO participant_look_alikes (key, participant_id) SELECT k, up.id FROM up CROSS JOIN unnest($8::text[]) AS k`,
          [...values, lookAlikes],
        ));
        return;
      }
      // Token hashes this put revokes are announced in the same transaction (NOTIFY is delivered
      // at COMMIT): the other nodes hear of every revocation that is stored, and of no other.
      const kept = new Set(participant.record.token_hashes);
      const revoked = expected ? expected.record.token_hashes.filter((h) => !kept.has(h)) : [];
      if (revoked.length > 0) {
        const { rows } = await this.retryInDoubt(() => this.pool.query<{ updated: string }>(
          `WITH up AS (${upsert} RETURNING id),
                announced AS (SELECT pg_notify('${TOKEN_CHANNEL}', $8) FROM up)
           SELECT (SELECT count(*) FROM up) AS updated, (SELECT count(*) FROM announced) AS announced`,
          [...values, JSON.stringify(revoked)],
        ));
        if (Number(rows[0]?.updated ?? 0) === 0) throw new ParticipantChangedError(id);
        return;
      }
      const { rowCount } = await this.retryInDoubt(() => this.pool.query(upsert, values));
      if (rowCount === 0) throw new ParticipantChangedError(id);
    } catch (err) {
      if (isServerError(err) && err.code === UNIQUE_VIOLATION && err.constraint === 'participants_name_key_unique') {
        throw new NameTakenError(participant.record.name);
      }
      if (isServerError(err) && err.code === UNIQUE_VIOLATION && err.constraint === 'participant_look_alikes_pkey') {
        // Keys held by this participant already: an earlier attempt of this same put committed.
        const { rowCount } = await this.pool.query('SELECT 1 FROM participant_look_alikes WHERE key = ANY($1::text[]) AND participant_id <> $2', [lookAlikes, id]);
        if (rowCount === 0) return;
        throw new NameTakenError(participant.record.name);
      }
      throw err;
    }
  }

  /** Which of these token hashes no participant holds any more (nodes re-check open sockets). */
  async missingTokenHashes(tokenHashes: readonly string[]): Promise<string[]> {
    if (tokenHashes.length === 0) return [];
    const { rows } = await this.pool.query<{ h: string }>(
      'SELECT h FROM unnest($1::text[]) AS h WHERE NOT EXISTS (SELECT 1 FROM participants p WHERE p.token_hashes @> ARRAY[h])',
      [tokenHashes.map(column)],
    );
    return rows.map((r) => r.h);
  }

  /** NOTIFY `sockets_closed` with `{"p": participant id, "at": epoch ms}` (RoomFeed listens). */
  async announceSocketsClosed(participantId: string, atMs: number): Promise<void> {
    await this.pool.query(`SELECT pg_notify('${SOCKETS_CHANNEL}', $1)`, [JSON.stringify({ p: participantId, at: atMs })]);
  }

  async listParticipants(): Promise<ParticipantRecord[]> {
    const { rows } = await this.pool.query<ParticipantRow>('SELECT kind, record FROM participants ORDER BY position');
    return rows.map(toParticipant);
  }

  // ── rooms ──
  async roomVersion(roomId: string): Promise<number | undefined> {
    const { rows } = await this.pool.query<{ version: string }>('SELECT version FROM rooms WHERE room_id = $1', [column(roomId)]);
    return rows[0] ? Number(rows[0].version) : undefined;
  }

  async loadRoom(roomId: string): Promise<LoadedRoom | undefined> {
    const { rows } = await this.pool.query<{ state: RoomRecord; last_seq: string; version: string }>({
      name: 'chatroom-load-room',
      text: 'SELECT state, last_seq, version FROM rooms WHERE room_id = $1',
      values: [roomId],
    });
    const row = rows[0];
    return row && { room: row.state, lastSeq: Number(row.last_seq), version: Number(row.version) };
  }

  async listRoomIds(): Promise<string[]> {
    const { rows } = await this.pool.query<{ room_id: string }>('SELECT room_id FROM rooms ORDER BY position');
    return rows.map((r) => r.room_id);
  }

  async roomIdsWhere(test: (room: Readonly<RoomRecord>) => boolean): Promise<string[]> {
    const { rows } = await this.pool.query<{ state: RoomRecord }>('SELECT state FROM rooms ORDER BY position');
    return rows.filter((r) => test(r.state)).map((r) => r.state.room_id);
  }

  async listRoomSummaries(includeArchived: boolean): Promise<PublicRoomSummary[]> {
    const { rows } = await this.pool.query<{ summary: PublicRoomSummary }>(
      'SELECT summary FROM rooms WHERE $1 OR NOT archived ORDER BY position',
      [includeArchived],
    );
    return rows.map((r) => r.summary);
  }

  async roomsOf(participantId: string): Promise<string[]> {
    const { rows } = await this.pool.query<{ room_id: string }>(
      'SELECT room_id FROM rooms WHERE member_ids @> ARRAY[$1::text] ORDER BY position',
      [column(participantId)],
    );
    return rows.map((r) => r.room_id);
  }

  async createRoom(room: RoomRecord, messages: readonly Message[] = []): Promise<number> {
    checkCommitSeqs(room.room_id, 0, () => undefined, messages);
    const state = JSON.stringify(room);
    const insert = {
      text: `WITH created AS (
               INSERT INTO rooms (room_id, version, last_seq, state, summary, archived, member_ids)
                 VALUES ($1, 1, 0, $2, $3, $4, $5) RETURNING room_id
             ), timer AS (
               INSERT INTO deadlines (room_id, deadline, turn_key)
                 SELECT room_id, $6, $7 FROM created WHERE $6::timestamptz IS NOT NULL
             )
             SELECT pg_notify('room_changes', $9) FROM created WHERE $8`,
      values: [column(room.room_id), state, ...roomColumns(room), ...deadlineParams(room), messages.length === 0, commitPayload(room.room_id, 1, 0, [], state)],
    };
    let attempts = 0;
    let version = 1;
    try {
      await this.retryInDoubt(async () => {
        attempts++;
        if (messages.length === 0) return this.pool.query(insert);
        // The room and its first messages (an imported history) in one transaction.
        const client = await this.pool.connect();
        const ignore = (): void => undefined;
        client.on('error', ignore);
        let broken = false;
        try {
          await client.query('BEGIN');
          await client.query(insert);
          const { rows } = await client.query<{ new_version: string; new_last_seq: string }>(
            `SELECT new_version, new_last_seq FROM chatroom_commit_room(${COMMIT_ARGS})`,
            commitParams(room.room_id, { messages, expectedVersion: 1 }, randomUUID(), true),
          );
          await client.query('COMMIT');
          version = Number(rows[0]!.new_version);
        } catch (err) {
          broken = !isDefiniteFailure(err);
          if (!broken) await client.query('ROLLBACK').catch(() => undefined);
          throw err;
        } finally {
          client.off('error', ignore);
          client.release(broken);
        }
      });
    } catch (err) {
      if (isServerError(err) && err.code === UNIQUE_VIOLATION && err.constraint === 'rooms_pkey') {
        // A repeat after a lost answer finds the room the first try created: ours if it holds
        // exactly the state we wrote (and, with messages, the version their commit made).
        const found = attempts > 1
          ? await this.pool.query<{ version: string }>('SELECT version FROM rooms WHERE room_id = $1 AND state::text = $2', [room.room_id, state])
          : undefined;
        if (found?.rowCount) return Number(found.rows[0]!.version);
        throw new Error(`room ${room.room_id} exists`);
      }
      throw err;
    }
    return version;
  }

  async commitRoom(roomId: string, commit: RoomCommit): Promise<number> {
    checkMessagesOf(roomId, commit.messages);
    const commitId = randomUUID();
    const params = commitParams(roomId, commit, commitId, this.notifier === undefined);
    const made = await this.commits.submit({ roomId, commitId, params });
    if (made.lastSeq !== undefined) this.announce(roomId, { version: made.version, lastSeq: made.lastSeq }, params);
    return made.version;
  }

  /**
   * Runs one group of commits as one statement (one transaction): each commit is answered by
   * its own row, so a stale or refused one fails alone and leaves no trace. A commit whose room
   * another transaction holds, and every commit of a group whose statement failed as a whole
   * (nothing committed), is tried again alone, outside the group's slot. When the connection
   * fails before the answer, each commit's outcome is settled by its id.
   */
  private async runCommitGroup(items: PendingCommit[]): Promise<Promise<CommitMade>[]> {
    // Rooms are locked in one order by every group (no two groups wait for each other).
    const sorted = items.map((item, index) => ({ item, index })).sort((a, b) => byRoomId(a.item, b.item));
    const { client, done } = await this.checkOut();
    let broken = false;
    try {
      const { rows } = await client.query<GroupRow>({
        name: `chatroom-commit-group-${items.length}`,
        text: groupStatement(items.length),
        values: sorted.flatMap(({ item }) => item.params),
      });
      const outcomes = new Array<Promise<CommitMade>>(items.length);
      for (const row of rows) {
        const { item, index } = sorted[row.i - 1]!;
        outcomes[index] = this.groupOutcome(item, row);
      }
      return outcomes;
    } catch (err) {
      if (isDefiniteFailure(err)) {
        if (items.length === 1) return [Promise.reject(commitError(items[0]!.roomId, err.code, err.message, err))];
        return items.map((item) => this.commitAlone(item));
      }
      broken = true;
      const versions = this.committedVersions(items, backendPid(client), err);
      return items.map(async (_, i) => {
        const version = (await versions)[i];
        if (version === undefined) throw err;
        return { version };
      });
    } finally {
      done(broken);
    }
  }

  private groupOutcome(item: PendingCommit, row: GroupRow): Promise<CommitMade> {
    if (row.error_code === null) return Promise.resolve({ version: Number(row.new_version), lastSeq: Number(row.new_last_seq) });
    if (row.error_code === LOCK_NOT_AVAILABLE) return this.commitAlone(item);
    return Promise.reject(commitError(item.roomId, row.error_code, row.error_message ?? row.error_code));
  }

  /** One commit in a transaction of its own, waiting for its room's lock if another holds it. */
  private async commitAlone(item: PendingCommit): Promise<CommitMade> {
    const { client, done } = await this.checkOut();
    let broken = false;
    try {
      return await runCommitStatement(client, item.params);
    } catch (err) {
      if (isDefiniteFailure(err)) throw commitError(item.roomId, err.code, err.message, err);
      broken = true;
      return { version: await this.settleInDoubt(item.roomId, item.commitId, backendPid(client), err) };
    } finally {
      done(broken);
    }
  }

  /**
   * Tells the other nodes about a commit (the batched after-commit NOTIFY; with `notify:
   * 'in-commit'` the commit statement did). The rows, the state and the events ride along when
   * they fit, so the other nodes need not read them back.
   */
  private announce(roomId: string, made: { version: number; lastSeq: number }, params: unknown[]): void {
    if (!this.notifier) return;
    const stateJson = params[STATE_PARAM] as string | null;
    const eventsJson = params[EVENTS_PARAM] as string | null;
    this.notifier.push(commitPayload(roomId, made.version, made.lastSeq, params[RECORDS_PARAM] as string[], stateJson ?? undefined, eventsJson ?? undefined));
  }

  /**
   * Runs an idempotent write; when the connection fails before its answer arrives (outcome
   * unknown), runs it again on a fresh connection, for up to ~5 s, so that a reject means it
   * did not happen (Store guarantee 2) as far as the database can still be asked.
   */
  private async retryInDoubt<T>(write: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await write();
      } catch (err) {
        if (isDefiniteFailure(err) || attempt >= 10) throw err;
      }
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }

  /**
   * The connection failed while a commit was in flight: it may or may not have committed.
   * Resolves with the version it produced when it committed (if another node has committed on
   * top since, the caller's next commit is simply stale), and rejects with the original error
   * when it did not (`committedVersions` says how).
   */
  private async settleInDoubt(roomId: string, commitId: string, backendPid: number | null, original: unknown): Promise<number> {
    const [version] = await this.committedVersions([{ roomId, commitId }], backendPid, original);
    if (version === undefined) throw original;
    return version;
  }

  /**
   * The connection failed while one or more commits (a group) were in flight. First makes their
   * outcome final: the backend that ran them is terminated and waited for (a statement still
   * running there rolls back). Then asks, in one query, which of their ids are among their
   * rooms' recent commits, announces those, and answers each commit's version, or undefined for
   * one that did not commit. Tries for ~5 s while the database is unreachable, then rejects with
   * the original error: the outcome is then unknown, which the docs (scale-out.md) name as the
   * one case a reject may still have committed.
   */
  private async committedVersions(
    commits: readonly { roomId: string; commitId: string }[],
    backendPid: number | null,
    original: unknown,
  ): Promise<(number | undefined)[]> {
    for (let attempt = 0; attempt < 10; attempt++) {
      let rows: { commit_id: string; room_id: string; version: string; last_seq: string }[];
      try {
        if (backendPid) await this.pool.query('SELECT pg_terminate_backend($1, 5000)', [backendPid]);
        ({ rows } = await this.pool.query(
          `SELECT c.commit_id::text, c.room_id, c.version, r.last_seq FROM room_commits c JOIN rooms r USING (room_id)
           WHERE (c.room_id, c.commit_id) IN (SELECT * FROM unnest($1::text[], $2::uuid[]))`,
          [commits.map((c) => c.roomId), commits.map((c) => c.commitId)],
        ));
      } catch {
        await new Promise((resolve) => setTimeout(resolve, 500));
        continue;
      }
      // The last seq is not recorded per commit; the room's current one is a safe hint (the
      // follower reads from the tables whatever the payload says).
      for (const row of rows) this.notifier?.push(`${row.room_id}:${row.version}:${row.last_seq}`);
      const versions = new Map(rows.map((row) => [row.commit_id, Number(row.version)]));
      return commits.map((c) => versions.get(c.commitId));
    }
    throw original;
  }

  // ── messages ──
  getMessage(messageId: string): Promise<Message | undefined> {
    return messageById(this.pool, messageId);
  }

  async readMessages(roomId: string, page: MessagePage): Promise<Message[]> {
    const limit = Math.max(0, Math.floor(page.limit));
    if (limit === 0) return [];
    if (page.afterSeq !== undefined) {
      const { rows } = await this.pool.query<{ record: Message }>(
        `SELECT record FROM messages WHERE room_id = $1 AND seq > $2 AND ($3::bigint IS NULL OR seq < $3)
         ORDER BY seq LIMIT $4`,
        [roomId, page.afterSeq, page.beforeSeq ?? null, limit],
      );
      return rows.map((r) => r.record);
    }
    const { rows } = await this.pool.query<{ record: Message }>(
      `SELECT record FROM messages WHERE room_id = $1 AND ($2::bigint IS NULL OR seq < $2)
       ORDER BY seq DESC LIMIT $3`,
      [roomId, page.beforeSeq ?? null, limit],
    );
    return rows.map((r) => r.record).reverse();
  }

  async searchMessages(roomId: string, query: string, limit: number): Promise<Message[]> {
    const { rows } = await this.pool.query<{ record: Message }>(
      `SELECT record FROM messages
       WHERE room_id = $1 AND visible AND NOT deleted AND search_text LIKE $2
       ORDER BY seq LIMIT $3`,
      [roomId, likePattern(searchText(query)), Math.max(0, Math.floor(limit))],
    );
    return rows.map((r) => r.record);
  }

  async lastSeqBySender(roomId: string, senderId: string): Promise<number> {
    const { rows } = await this.pool.query<{ seq: string }>(
      'SELECT seq FROM messages WHERE room_id = $1 AND sender_id = $2 AND visible ORDER BY seq DESC LIMIT 1',
      [roomId, column(senderId)],
    );
    return rows[0] ? Number(rows[0].seq) : 0;
  }

  async countVisible(roomId: string, afterSeq: number, beforeSeq: number): Promise<number> {
    const { rows } = await this.pool.query<{ n: string }>(
      'SELECT count(*) AS n FROM messages WHERE room_id = $1 AND seq > $2 AND seq < $3 AND visible',
      [roomId, afterSeq, beforeSeq],
    );
    return Number(rows[0]?.n ?? 0);
  }

  async lastPersonSeq(roomId: string): Promise<number> {
    const { rows } = await this.pool.query<{ seq: string }>(
      `SELECT seq FROM messages WHERE room_id = $1 AND role = 'user' AND visible AND NOT deleted
       ORDER BY seq DESC LIMIT 1`,
      [roomId],
    );
    return rows[0] ? Number(rows[0].seq) : 0;
  }

  findByClientMsgId(roomId: string, senderId: string, clientMsgId: string): Promise<Message | undefined> {
    return messageByClientId(this.pool, roomId, senderId, clientMsgId);
  }

  /** A pooled connection for one write; `done(broken)` gives it back (a broken one is dropped). */
  private async checkOut(): Promise<{ client: pg.PoolClient; done: (broken: boolean) => void }> {
    const client = await this.pool.connect();
    // A connection that dies while checked out emits 'error' on the client (not the pool);
    // the rejection of the query that was running is what handles it.
    const ignore = (): void => undefined;
    client.on('error', ignore);
    return {
      client,
      done: (broken) => {
        client.off('error', ignore);
        client.release(broken);
      },
    };
  }

  /**
   * One statement, so one snapshot (also under READ COMMITTED): the room's row, the messages
   * after `from.lastSeq` through its last seq, the older ones rewritten after `from.version`
   * through its version (commit order), and its last person seq. A node that refreshes a room
   * another node changed thus never pairs a state with messages of another version.
   */
  readChangesSince(roomId: string, from: { version: number; lastSeq: number }): Promise<RoomChangesSince | undefined> {
    return changesSince(this.pool, roomId, from);
  }

  async commitRoomLocked(
    roomId: string,
    from: { version: number; lastSeq: number },
    build: (changes: RoomChangesSince, reads: CommitReads) => Promise<RoomCommit | null>,
  ): Promise<number | undefined> {
    const commitId = randomUUID();
    const { client, done } = await this.checkOut();
    let broken = false;
    let writing = false;
    try {
      await client.query('BEGIN');
      // The lock first, then the read in a statement of its own: under READ COMMITTED its
      // snapshot is taken after the lock is granted, so it sees the commit it waited for.
      const locked = await client.query('SELECT 1 FROM rooms WHERE room_id = $1 FOR UPDATE', [roomId]);
      if (locked.rowCount === 0) throw new Error(`room ${roomId} does not exist`);
      const changes = (await changesSince(client, roomId, from))!;
      const commit = await build(changes, {
        getMessage: (messageId) => messageById(client, messageId),
        findByClientMsgId: (senderId, clientMsgId) => messageByClientId(client, roomId, senderId, clientMsgId),
      });
      if (!commit) {
        await client.query('COMMIT');
        return undefined;
      }
      checkMessagesOf(roomId, commit.messages);
      const params = commitParams(roomId, { ...commit, expectedVersion: changes.loaded.version }, commitId, this.notifier === undefined);
      writing = true;
      const made = await runCommitStatement(client, params);
      await client.query('COMMIT');
      this.announce(roomId, made, params);
      return made.version;
    } catch (err) {
      if (isDefiniteFailure(err) || !writing) {
        // Nothing was committed: roll back (a dead connection rolls back by itself).
        if (isServerError(err) || !writing) await client.query('ROLLBACK').catch(() => (broken = true));
        if (isDefiniteFailure(err) && err.code === BAD_SEQ) throw new Error(err.message);
        throw err;
      }
      // The connection failed during the commit or its COMMIT: it may have committed.
      broken = true;
      return await this.settleInDoubt(roomId, commitId, backendPid(client), err);
    } finally {
      done(broken);
    }
  }

  async messageCount(): Promise<number> {
    // Seqs are gapless, so the rooms' last seqs add up to the message count without a scan.
    const { rows } = await this.pool.query<{ n: string }>('SELECT coalesce(sum(last_seq), 0) AS n FROM rooms');
    return Number(rows[0]!.n);
  }
}
