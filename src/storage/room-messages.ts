// The messages of all rooms, served from the logs with bounded memory (SPEC §5: memory follows
// the working set, not the history). Per room a compact index (room-index.ts) says where the
// latest version of each seq is, loaded while the room is in use and dropped again least
// recently used first past a budget (`trim`); an id directory (id-directory.ts) says which rooms
// may hold a message id; one LRU cache (message-cache.ts) holds recent and recently read
// messages; everything else is read from the log by position, and search streams the log.
//
// The indexes, the id directory and how commits become visible are room-indexes.ts (the base
// class); this file serves the reads. Objects returned are the store's own (cached): the caller
// (file-store.ts) copies them.
import { open } from 'node:fs/promises';
import type { Message } from '../types.js';
import { corruptAt, parseLine, readAt } from './log-reader.js';
import { candidateLines, forEachBlock, rawSafe } from './log-search.js';
import type { RoomIndex } from './room-index.js';
import { RoomIndexes } from './room-indexes.js';
import { hash32 } from './seq-table.js';

export type { RoomMessagesOptions } from './room-indexes.js';

/** Reads spanning at most this many bytes are done in one positional read. */
const SPAN_BYTES = 256 * 1024;

export class RoomMessages extends RoomIndexes {
  /** The latest versions at the given seqs (present ones only), in the order asked. */
  async read(roomId: string, seqs: readonly number[]): Promise<Message[]> {
    const index = await this.ready(roomId);
    if (!index || seqs.length === 0) return [];
    const out: (Message | undefined)[] = seqs.map((seq) => this.cache.get(roomId, seq));
    // Only the misses get a record (a cached page — get_context's newest messages — allocates none).
    const missing: { seq: number; i: number; offset: number; length: number }[] = [];
    for (let i = 0; i < seqs.length; i++) {
      const seq = seqs[i]!;
      if (out[i] === undefined && index.has(seq)) missing.push({ seq, i, offset: index.offsetOf(seq), length: index.lengthOf(seq) });
    }
    if (missing.length > 0) {
      const file = this.fileOf(roomId);
      const handle = await open(file, 'r');
      try {
        missing.sort((a, b) => a.offset - b.offset);
        for (let k = 0; k < missing.length; ) {
          // Lines close together in the file (a page) are read with one positional read.
          let j = k + 1;
          while (j < missing.length && missing[j]!.offset + missing[j]!.length - missing[k]!.offset <= SPAN_BYTES) j++;
          const from = missing[k]!.offset;
          const to = missing[j - 1]!.offset + missing[j - 1]!.length;
          const bytes = await readAt(handle, from, to - from, this.readFile);
          for (let x = k; x < j; x++) {
            const { seq, i, offset, length } = missing[x]!;
            const m = this.decode(roomId, file, bytes.subarray(offset - from, offset - from + length), offset, seq);
            out[i] = m;
            // Cache only if no newer version was committed meanwhile (the room's index may have
            // been dropped and loaded again since: ask the loaded one; a dropped one is unchanged).
            if ((this.indexes.get(roomId) ?? index).offsetOf(seq) === offset) this.cache.set(m);
          }
          k = j;
        }
      } finally {
        await handle.close();
      }
    }
    return missing.length === 0 && !out.includes(undefined) ? (out as Message[]) : out.filter((m): m is Message => m !== undefined);
  }

  private decode(roomId: string, file: string, bytes: Buffer, offset: number, seq: number): Message {
    const parsed = parseLine(bytes.toString('utf8'), roomId);
    let reason: string | undefined;
    if (typeof parsed !== 'object') reason = typeof parsed === 'string' ? parsed : 'blank line';
    else if (parsed.seq !== seq) reason = `seq ${parsed.seq} where ${seq} was indexed`;
    if (reason === undefined) return parsed as Message;
    const err = corruptAt(file, offset, reason);
    const key = `${file}:${offset}`;
    if (!this.reported.has(key)) {
      this.reported.add(key);
      this.opts.logger.error({ err, file, byte_offset: offset, room_id: roomId, seq }, 'room log is corrupt; that message cannot be read');
    }
    throw err;
  }

  async page(roomId: string, afterSeq: number | undefined, beforeSeq: number | undefined, limit: number): Promise<Message[]> {
    const index = await this.ready(roomId);
    return index ? this.read(roomId, index.page(afterSeq, beforeSeq, limit)) : [];
  }

  /**
   * The message with this id, in whichever room holds it: the id directory names the rooms that
   * may (a hash match); only those are opened and their id tables probed. Until the warm-up has
   * read every room's ids, an id in no learned room waits for it (`loadAll`). A room whose id
   * table or candidate line cannot be read is passed over (logged once), so only its own
   * messages are affected: an id found in another room is answered; one found nowhere rejects
   * with the damaged room's error (it may be that room's, so "not found" would be a guess).
   */
  async getMessage(messageId: string): Promise<Message | undefined> {
    const hash = hash32(messageId);
    let failure: unknown;
    const probed = new Set<string>();
    const probe = async (rooms: readonly string[]): Promise<Message | undefined> => {
      for (const roomId of rooms) {
        if (probed.has(roomId)) continue;
        probed.add(roomId);
        let seqs: number[];
        try {
          seqs = (await this.readyWithTables(roomId))?.seqsOfId(messageId, hash) ?? [];
        } catch (err) {
          failure ??= err;
          this.reportIdsFailure(roomId, err);
          continue;
        }
        if (seqs.length === 0) continue;
        try {
          for (const m of await this.read(roomId, seqs)) if (m.message_id === messageId) return m;
        } catch (err) {
          failure ??= err; // a corrupt candidate line, logged by `decode`
        }
      }
      return undefined;
    };
    let found = await probe(this.ids.roomsOf(hash));
    if (!found && this.someUnlearned) {
      this.lookupsWaiting++;
      try {
        await this.loadAll();
      } finally {
        this.lookupsWaiting--;
      }
      found = await probe(this.ids.roomsOf(hash));
      // Rooms whose ids could not be read (damaged): probed directly, so their error is known.
      found ??= await probe(this.unlearned());
    }
    if (found || failure === undefined) return found;
    throw failure;
  }

  /** The stored message id at each seq (undefined where none), for commit checks. */
  async idsAt(roomId: string, seqs: readonly number[]): Promise<Map<number, string>> {
    await this.readyWithTables(roomId); // every commit asks this first: its lines are then added
    const ids = new Map<number, string>();
    for (const m of await this.read(roomId, seqs)) ids.set(m.seq, m.message_id);
    return ids;
  }

  /** Whether the room already has a message with this id (at any seq). */
  async hasId(roomId: string, messageId: string): Promise<number | undefined> {
    const index = await this.readyWithTables(roomId);
    if (!index) return undefined;
    const seqs = index.seqsOfId(messageId);
    if (seqs.length === 0) return undefined;
    return (await this.read(roomId, seqs)).find((m) => m.message_id === messageId)?.seq;
  }

  async findByClientMsgId(roomId: string, senderId: string, clientMsgId: string): Promise<Message | undefined> {
    const index = await this.readyWithTables(roomId);
    if (!index) return undefined;
    const seqs = [...new Set(index.seqsOfClient(senderId, clientMsgId))].sort((a, b) => a - b);
    return (await this.read(roomId, seqs)).find((m) => m.sender_id === senderId && m.client_msg_id === clientMsgId);
  }

  async lastPersonSeq(roomId: string): Promise<number> {
    // A cold room's is known without its index (a runtime loads it for a join or a presence change).
    const known = this.indexes.has(roomId) ? undefined : this.lazy.get(roomId)?.lastPersonSeq;
    if (known !== undefined) return known;
    return (await this.ready(roomId))?.lastPersonSeq() ?? 0;
  }

  async lastSeqBySender(roomId: string, senderId: string): Promise<number> {
    const index = await this.ready(roomId);
    if (!index) return 0;
    if (!index.staleSenders.has(senderId)) return index.lastSeqBySender(senderId);
    // Rare: the sender's last visible message was replaced by an invisible version. Look back.
    for (let before = index.lastSeqBySender(senderId); before > 1; ) {
      const seqs = index.page(undefined, before, 500);
      if (seqs.length === 0) break;
      const found = (await this.read(roomId, seqs)).reverse().find((m) => m.sender_id === senderId && m.visible);
      if (found) return found.seq;
      before = seqs[0]!;
    }
    return 0;
  }

  /** Visible messages with afterSeq < seq < beforeSeq (get_context's `omitted`), from the index. */
  async countVisible(roomId: string, afterSeq: number, beforeSeq: number): Promise<number> {
    return (await this.ready(roomId))?.countVisible(afterSeq, beforeSeq) ?? 0;
  }

  /**
   * Visible, not deleted messages whose text contains the query (case-insensitive), oldest
   * first, as they were when the search started: streams the log's bytes durable then; only
   * lines whose raw bytes may hold the query are parsed (log-search.ts), and the scan stops once
   * no line left in the log can be older than the oldest `limit` found.
   *
   * A line counts if it was its seq's latest when the search started. A message edited while the
   * search runs has its new line past the bytes scanned, and its old line no longer indexed:
   * `apply` records the old offset for the running searches, so the message is found once, in
   * that version (SPEC is silent on this; the choice is in docs/storage.md).
   */
  async search(roomId: string, query: string, limit: number): Promise<Message[]> {
    const index = await this.ready(roomId);
    const size = this.opts.sizeOf(roomId);
    if (!index || size === 0 || limit <= 0) return [];
    const replaced = new Map<number, number>();
    const searches = this.searching.get(roomId) ?? new Set();
    this.searching.set(roomId, searches.add(replaced));
    try {
      return await this.scan(roomId, index, size, replaced, query.toLowerCase(), limit);
    } finally {
      searches.delete(replaced);
      if (searches.size === 0) this.searching.delete(roomId);
    }
  }

  private async scan(roomId: string, index: RoomIndex, size: number, replaced: ReadonlyMap<number, number>, needle: string, limit: number): Promise<Message[]> {
    const candidates = candidateLines(needle);
    // A query JSON writes escaped (quote, backslash, control character) is not in the raw line.
    const raw = rawSafe(needle);
    /** The offset of the seq's latest line when the search started. */
    const latestAtStart = (seq: number): number => replaced.get(seq) ?? index.offsetOf(seq);
    let found: Message[] = [];
    let newestKept = 0;
    let latestLineBelow = 0; // the highest start offset of a latest version older than newestKept
    await forEachBlock(this.fileOf(roomId), size, (block, base) => {
      candidates(block, (start, end) => {
        const text = block.toString('utf8', start, end);
        if (raw && !text.toLowerCase().includes(needle)) return;
        const m = parseLine(text, roomId);
        if (typeof m !== 'object') return; // reported when read
        if (latestAtStart(m.seq) !== base + start) return; // an older version
        if (!m.visible || m.deleted || !m.text_content.toLowerCase().includes(needle)) return;
        found.push(m);
        if (found.length > limit * 2) found = keepOldest(found, limit);
      });
      if (found.length < limit) return true;
      found = keepOldest(found, limit);
      // Done if every seq older than the newest kept has its latest line before this point.
      // Lines at or past `size` were written since the start: the replaced seqs' start offsets
      // stand for them (fixed once recorded, so the maximum stays valid while `newest` does).
      const newest = found[found.length - 1]!.seq;
      if (newest !== newestKept) {
        newestKept = newest;
        latestLineBelow = index.maxOffsetBelow(newest, size);
        for (const [seq, offset] of replaced) if (seq < newest && offset > latestLineBelow) latestLineBelow = offset;
      }
      return latestLineBelow >= base + block.length;
    }, this.readFile);
    return keepOldest(found, limit);
  }
}

function keepOldest(messages: Message[], limit: number): Message[] {
  return messages.sort((a, b) => a.seq - b.seq).slice(0, limit);
}
