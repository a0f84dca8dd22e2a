// The contract of the storage seam (src/storage/store.ts), as one suite every Store runs:
// `storeContract(name, makeStore)` from a `*.test.ts` file. It exercises every method and the
// six guarantees at the top of store.ts. What a store cannot offer is optional in its harness:
// `reopen` (persistence across a restart) and `faults` (make its writes fail) — a store that has
// them gets the durability and no-trace checks too.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import {
  NameTakenError,
  ParticipantChangedError,
  StaleRoomError,
  type ParticipantRecord,
  type Store,
} from '../../src/storage/store.js';
import type { Message, RoomRecord } from '../../src/types.js';
import { makeAgent, makeMessage, makeRoom, makeUser } from './storage-helpers.js';

export interface StoreHarness {
  store: Store;
  /** Closes the store and opens a new one on the same data; the harness's `store` becomes it. */
  reopen?: () => Promise<Store>;
  /**
   * Fault injection: while a kind is set, the store's writes fail that way (the file store: a
   * torn write, ENOSPC, fsync, rename, directory fsync); null clears it. Each kind is run through
   * every write method: a write it makes fail must leave no trace, one that does not go through
   * it (a log append renames nothing) must be an ordinary durable write; every write method
   * must fail under at least one kind.
   */
  faults?: { kinds: readonly string[]; set(kind: string | null): void };
  /**
   * Holds the store's writes before they are durable (the file store: its fsyncs wait while
   * held), so a test can read in the middle of a commit for certain, not by chance.
   */
  holdWrites?: { hold(): void; release(): void; waiting(): number };
  cleanup: () => Promise<void>;
}

const agent = (id: string, over: Parameters<typeof makeAgent>[1] = {}): ParticipantRecord => ({
  kind: 'agent',
  record: makeAgent(id, { name: `agent-${id}`, token_hashes: [`tok-${id}`], ...over }),
});
const user = (id: string, over: Parameters<typeof makeUser>[1] = {}): ParticipantRecord => ({
  kind: 'user',
  record: makeUser(id, { name: `user-${id}`, token_hashes: [`tok-${id}`], ...over }),
});
const keyOf = (p: ParticipantRecord): string => p.record.name.toLowerCase();
const idOf = (p: ParticipantRecord): string => (p.kind === 'agent' ? p.record.agent_id : p.record.user_id);

/** Six messages of several senders, seqs 4 and 5 invisible (the last-seq and visible-count tests). */
const SENDERS_PLAN: Partial<Message>[] = [
  { sender_id: 'u1', role: 'user' }, // 1
  { sender_id: 'a1', role: 'ai_agent' }, // 2
  { sender_id: 'u1', role: 'user' }, // 3
  { sender_id: 'a1', role: 'ai_agent', visible: false, skip_reason: 'skip' }, // 4
  { sender_id: 'u2', role: 'user', visible: false }, // 5
  { sender_id: 'sys', role: 'system' }, // 6
];

/** A unique room id that is also a safe file name. */
export const newRoomId = (): string => `room-${randomUUID().slice(0, 8)}`;

const member = (participantId: string, name: string): RoomRecord['members'][number] => ({
  name,
  role: 'user',
  introduce: '',
  status: 'offline',
  last_active: '2026-01-01T00:00:00.000Z',
  is_host: false,
  skip_list: [],
  language_preference: 'en',
  timezone_preference: 'UTC',
  participant_id: participantId,
  joined_at: '2026-01-01T00:00:00.000Z',
});

/**
 * Everything a store serves, read through its public methods, in a comparable shape: used to
 * check that a failed write changed nothing and that a reopened store serves the same.
 */
export async function dumpStore(store: Store, extra: { tokens?: string[]; keys?: string[]; senders?: string[] } = {}) {
  const participants = (await store.listParticipants()).sort((a, b) => idOf(a).localeCompare(idOf(b)));
  const roomIds = (await store.listRoomIds()).sort();
  const rooms: Record<string, unknown> = {};
  for (const roomId of roomIds) {
    const loaded = await store.loadRoom(roomId);
    const messages = await store.readMessages(roomId, { afterSeq: 0, limit: 1_000_000 });
    const bySender: Record<string, number> = {};
    const clientIds: Record<string, string | undefined> = {};
    for (const s of extra.senders ?? []) bySender[s] = await store.lastSeqBySender(roomId, s);
    for (const m of messages) {
      if (m.client_msg_id !== undefined) {
        clientIds[`${m.sender_id}/${m.client_msg_id}`] = (
          await store.findByClientMsgId(roomId, m.sender_id!, m.client_msg_id)
        )?.message_id;
      }
    }
    rooms[roomId] = {
      room: loaded?.room,
      lastSeq: loaded?.lastSeq,
      messages,
      byId: await Promise.all(messages.map((m) => store.getMessage(m.message_id))),
      lastPersonSeq: await store.lastPersonSeq(roomId),
      bySender,
      clientIds,
    };
  }
  const roomsOf: Record<string, string[]> = {};
  for (const p of participants) roomsOf[idOf(p)] = (await store.roomsOf(idOf(p))).sort();
  const byToken: Record<string, string | undefined> = {};
  for (const t of extra.tokens ?? []) {
    const found = await store.findParticipantByTokenHash(t);
    byToken[t] = found && idOf(found);
  }
  const byKey: Record<string, string | undefined> = {};
  for (const k of extra.keys ?? []) {
    const found = await store.findParticipantByNameKey(k);
    byKey[k] = found && idOf(found);
  }
  const byRoomId = (a: { room_id: string }, b: { room_id: string }) => a.room_id.localeCompare(b.room_id);
  return {
    participants,
    rooms,
    roomsOf,
    byToken,
    byKey,
    summaries: (await store.listRoomSummaries(true)).sort(byRoomId),
    active: (await store.listRoomSummaries(false)).sort(byRoomId),
    messageCount: await store.messageCount(),
  };
}

/** What a store's harness offers beyond the Store itself (decides which tests are registered). */
export interface StoreCapabilities {
  /** The harness has `reopen` (default true). */
  reopen?: boolean;
  /** The harness has `faults` (default true). */
  faults?: boolean;
}

export function storeContract(
  name: string,
  makeStore: () => Promise<StoreHarness>,
  capabilities: StoreCapabilities = {},
): void {
  const canReopen = capabilities.reopen ?? true;
  const canFail = capabilities.faults ?? true;
  describe(`Store contract: ${name}`, () => {
    let h: StoreHarness;
    let store: Store;
    beforeEach(async () => {
      h = await makeStore();
      store = h.store;
      if (canReopen && !h.reopen) throw new Error('the harness has no reopen; pass { reopen: false }');
      if (canFail && !h.faults) throw new Error('the harness has no faults; pass { faults: false }');
    });
    afterEach(async () => {
      h.faults?.set(null);
      await h.store.close().catch(() => undefined);
      await h.cleanup();
    });

    /**
     * A check that does not apply to this store is not left out silently: it is registered as a
     * test naming why, which passes only while the harness really lacks what the check needs.
     */
    function notApplicable(title: string, why: string, capability: () => unknown): void {
      it(`${title} — not applicable to ${name}: ${why}`, () => expect(capability()).toBeUndefined());
    }

    const put = (p: ParticipantRecord) => store.putParticipant(p, keyOf(p));
    /** Creates a room and commits `n` messages to it; returns its id and version. */
    async function roomWith(n: number, over: Partial<RoomRecord> = {}, msg: (seq: number) => Partial<Message> = () => ({})) {
      const roomId = newRoomId();
      let version = await store.createRoom(makeRoom(roomId, over));
      const messages = Array.from({ length: n }, (_, i) => makeMessage(roomId, i + 1, msg(i + 1)));
      if (n > 0) version = await store.commitRoom(roomId, { messages, expectedVersion: version });
      return { roomId, version, messages };
    }
    const reopen = async () => {
      store = await h.reopen!();
      return store;
    };

    describe('participants', () => {
      it('puts, gets and lists agents and users; unknown ids are undefined', async () => {
        const a = agent('a1');
        const u = user('u1');
        await put(a);
        await put(u);
        expect(await store.getParticipant('a1')).toEqual(a);
        expect(await store.getParticipant('u1')).toEqual(u);
        expect(await store.getParticipant('nobody')).toBeUndefined();
        const all = await store.listParticipants();
        expect(all.sort((x, y) => idOf(x).localeCompare(idOf(y)))).toEqual([a, u]);
      });

      it('finds by token hash and by name key; a replaced record frees its old token and key', async () => {
        const a = agent('a1', { name: 'Alpha', token_hashes: ['t1', 't2'] });
        await put(a);
        expect(await store.findParticipantByTokenHash('t2')).toEqual(a);
        expect(await store.findParticipantByNameKey('alpha')).toEqual(a);
        expect(await store.findParticipantByTokenHash('nope')).toBeUndefined();
        expect(await store.findParticipantByNameKey('nope')).toBeUndefined();

        const renamed = agent('a1', { name: 'Beta', token_hashes: ['t3'] });
        await put(renamed);
        expect(await store.findParticipantByTokenHash('t1')).toBeUndefined();
        expect(await store.findParticipantByTokenHash('t3')).toEqual(renamed);
        expect(await store.findParticipantByNameKey('alpha')).toBeUndefined();
        expect(await store.findParticipantByNameKey('beta')).toEqual(renamed);
        // The old key is free for someone else now.
        await put(user('u1', { name: 'ALPHA' }));
        expect((await store.findParticipantByNameKey('alpha'))?.kind).toBe('user');
      });

      it('rejects a name key held by another id with NameTakenError, across agents and users', async () => {
        await put(agent('a1', { name: 'Same' }));
        const err = await store.putParticipant(user('u1', { name: 'same' }), 'same').catch((e: unknown) => e);
        expect(err).toBeInstanceOf(NameTakenError);
        expect((err as NameTakenError).takenName).toBe('same');
        expect(await store.getParticipant('u1')).toBeUndefined();
        // The holder may put itself again under the same key.
        await store.putParticipant(agent('a1', { name: 'Same', introduce: 'again' }), 'same');
        expect((await store.getParticipant('a1'))?.record).toMatchObject({ introduce: 'again' });
      });

      it('lets exactly one of many concurrent puts of the same name key win', async () => {
        const contenders = Array.from({ length: 8 }, (_, i) => (i % 2 ? agent(`a${i}`) : user(`u${i}`)));
        const results = await Promise.allSettled(contenders.map((p) => store.putParticipant(p, 'contested')));
        const won = results.flatMap((r, i) => (r.status === 'fulfilled' ? [contenders[i]!] : []));
        expect(won).toHaveLength(1);
        for (const r of results) if (r.status === 'rejected') expect(r.reason).toBeInstanceOf(NameTakenError);
        expect(await store.findParticipantByNameKey('contested')).toEqual(won[0]);
        expect(await store.listParticipants()).toHaveLength(1);
      });

      it('puts with an expected record only while the stored one is still it (compare-and-set)', async () => {
        const read = agent('a1', { token_hashes: ['old'] });
        await put(read);
        // Another writer (another node) changes the record after it was read.
        const rotated = agent('a1', { token_hashes: ['new'] });
        await store.putParticipant(rotated, keyOf(rotated), read);
        const stale = agent('a1', { token_hashes: ['old'], last_active: '2026-02-01T00:00:00.000Z' });
        const err = await store.putParticipant(stale, keyOf(stale), read).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(ParticipantChangedError);
        expect(await store.getParticipant('a1')).toEqual(rotated);
        expect(await store.findParticipantByTokenHash('old')).toBeUndefined();
        // A repeat of a put that already landed (its answer lost) succeeds.
        await store.putParticipant(rotated, keyOf(rotated), read);
        expect(await store.getParticipant('a1')).toEqual(rotated);
        // Without an expected record a put replaces whatever is stored.
        await put(stale);
        expect(await store.getParticipant('a1')).toEqual(stale);
      });

      it('returns copies and keeps no reference to what was put (guarantee 5)', async () => {
        const a = agent('a1');
        await put(a);
        (a.record as { introduce: string }).introduce = 'mutated after put';
        const got = await store.getParticipant('a1');
        expect(got?.record).toMatchObject({ introduce: 'hi' });
        (got!.record as { introduce: string }).introduce = 'mutated after get';
        got!.record.token_hashes.push('evil');
        expect((await store.getParticipant('a1'))?.record).toMatchObject({ introduce: 'hi', token_hashes: ['tok-a1'] });
        const listed = await store.listParticipants();
        listed[0]!.record.name = 'x';
        expect((await store.findParticipantByTokenHash('tok-a1'))?.record.name).toBe('agent-a1');
        expect(await store.findParticipantByTokenHash('evil')).toBeUndefined();
      });
    });

    describe('rooms', () => {
      it('creates a room with no messages, loads it, lists it; a second create of the id rejects', async () => {
        const roomId = newRoomId();
        const room = makeRoom(roomId);
        const version = await store.createRoom(room);
        expect(typeof version).toBe('number');
        expect(await store.loadRoom(roomId)).toEqual({ room, lastSeq: 0, version });
        expect(await store.listRoomIds()).toEqual([roomId]);
        await expect(store.createRoom(makeRoom(roomId, { room_name: 'Other' }))).rejects.toThrow();
        expect((await store.loadRoom(roomId))?.room.room_name).toBe(room.room_name);
        expect(await store.loadRoom('no-such-room')).toBeUndefined();
        expect(await store.readMessages('no-such-room', { afterSeq: 0, limit: 10 })).toEqual([]);
      });

      it('creates a room with its first messages in one write; seqs must start at 1 without a gap', async () => {
        const roomId = newRoomId();
        const messages = [makeMessage(roomId, 1), makeMessage(roomId, 2, { sender_id: 'a1', role: 'ai_agent' })];
        const version = await store.createRoom(makeRoom(roomId), messages);
        expect(await store.loadRoom(roomId)).toMatchObject({ lastSeq: 2, version });
        expect(await store.readMessages(roomId, { afterSeq: 0, limit: 10 })).toEqual(messages);
        expect(await store.getMessage(messages[1]!.message_id)).toEqual(messages[1]);
        const gap = newRoomId();
        await expect(store.createRoom(makeRoom(gap), [makeMessage(gap, 2)])).rejects.toThrow(/seq/);
        expect(await store.loadRoom(gap)).toBeUndefined();
        // The next commit continues after them.
        await store.commitRoom(roomId, { messages: [makeMessage(roomId, 3)], expectedVersion: version });
        expect((await store.loadRoom(roomId))!.lastSeq).toBe(3);
        if (h.reopen) {
          await reopen();
          expect(await store.readMessages(roomId, { afterSeq: 0, limit: 10 })).toHaveLength(3);
        }
      });

      it('roomIdsWhere: the ids of the rooms whose stored state passes the test', async () => {
        const a = makeRoom(newRoomId(), { room_name: 'Alpha' });
        const b = makeRoom(newRoomId(), { room_name: 'Beta', archived: true });
        await store.createRoom(a);
        await store.createRoom(b);
        expect((await store.roomIdsWhere(() => true)).sort()).toEqual([a.room_id, b.room_id].sort());
        expect(await store.roomIdsWhere((room) => room.archived)).toEqual([b.room_id]);
        expect(await store.roomIdsWhere((room) => room.room_name === 'Gamma')).toEqual([]);
      });

      it('lists public summaries, archived ones only when asked', async () => {
        const open = makeRoom(newRoomId(), { password_hash: 'h', members: [member('u1', 'u'), member('a1', 'a')] });
        const archived = makeRoom(newRoomId(), { archived: true, interaction_mode: 'host' });
        await store.createRoom(open);
        await store.createRoom(archived);
        const summary = (r: RoomRecord) => ({
          room_id: r.room_id,
          room_name: r.room_name,
          room_description: r.room_description,
          interaction_mode: r.interaction_mode,
          member_count: r.members.length,
          has_password: r.password_hash !== null,
          archived: r.archived,
        });
        const byId = (a: { room_id: string }, b: { room_id: string }) => a.room_id.localeCompare(b.room_id);
        expect((await store.listRoomSummaries(true)).sort(byId)).toEqual([summary(open), summary(archived)].sort(byId));
        expect(await store.listRoomSummaries(false)).toEqual([summary(open)]);
      });

      it('derives roomsOf from the members of the room states, following commits', async () => {
        const r1 = makeRoom(newRoomId(), { members: [member('u1', 'u')] });
        const r2 = makeRoom(newRoomId(), { members: [member('u1', 'u'), member('a1', 'a')] });
        const v1 = await store.createRoom(r1);
        await store.createRoom(r2);
        expect((await store.roomsOf('u1')).sort()).toEqual([r1.room_id, r2.room_id].sort());
        expect(await store.roomsOf('a1')).toEqual([r2.room_id]);
        expect(await store.roomsOf('nobody')).toEqual([]);
        await store.commitRoom(r1.room_id, { room: { ...r1, members: [member('a1', 'a')] }, messages: [], expectedVersion: v1 });
        expect(await store.roomsOf('u1')).toEqual([r2.room_id]);
        expect((await store.roomsOf('a1')).sort()).toEqual([r1.room_id, r2.room_id].sort());
        // Leaving every room, then joining three (one room, several, none, again several).
        const v2 = (await store.loadRoom(r2.room_id))!.version;
        await store.commitRoom(r2.room_id, { room: { ...r2, members: [member('a1', 'a')] }, messages: [], expectedVersion: v2 });
        expect(await store.roomsOf('u1')).toEqual([]);
        const r3 = makeRoom(newRoomId(), { members: [member('a1', 'a'), member('u1', 'u')] });
        await store.createRoom(r3);
        expect((await store.roomsOf('a1')).sort()).toEqual([r1.room_id, r2.room_id, r3.room_id].sort());
        expect(await store.roomsOf('u1')).toEqual([r3.room_id]);
        // A commit that keeps the members (a status change) leaves their rooms as they were.
        const v3 = (await store.loadRoom(r3.room_id))!.version;
        await store.commitRoom(r3.room_id, { room: { ...r3, system_status: 'paused' }, messages: [], expectedVersion: v3 });
        expect((await store.roomsOf('a1')).sort()).toEqual([r1.room_id, r2.room_id, r3.room_id].sort());
        expect(await store.roomsOf('u1')).toEqual([r3.room_id]);
      });

      it('commits messages and state together; versions advance; a stale expectedVersion is refused', async () => {
        const roomId = newRoomId();
        const room = makeRoom(roomId);
        const v0 = await store.createRoom(room);
        const m1 = makeMessage(roomId, 1);
        const m2 = makeMessage(roomId, 2);
        // The optional fields a room record may have come back as they went in (a room without
        // them, as stored before they existed, loads without them: `room` above).
        const changed: RoomRecord = {
          ...room,
          room_description: 'changed',
          processed_through_seq: 2,
          paused_mentions: ['a'],
          recent_round_ends: [{ round_id: 'r-1', reason: 'completed' }, { round_id: 'r-2', reason: 'superseded' }],
        };
        expect((await store.loadRoom(roomId))!.room).toEqual(room);
        const v1 = await store.commitRoom(roomId, { room: changed, messages: [m1, m2], expectedVersion: v0 });
        expect(v1).not.toBe(v0);
        expect(await store.loadRoom(roomId)).toEqual({ room: changed, lastSeq: 2, version: v1 });
        // Messages only: the state stays.
        const v2 = await store.commitRoom(roomId, { messages: [makeMessage(roomId, 3)], expectedVersion: v1 });
        expect(await store.loadRoom(roomId)).toEqual({ room: changed, lastSeq: 3, version: v2 });
        // State only.
        const again = { ...changed, room_description: 'again' };
        const v3 = await store.commitRoom(roomId, { room: again, messages: [], expectedVersion: v2 });
        expect(new Set([v0, v1, v2, v3]).size).toBe(4);
        expect((await store.loadRoom(roomId))?.room).toEqual(again);

        const stale = await store
          .commitRoom(roomId, { messages: [makeMessage(roomId, 4)], expectedVersion: v1 })
          .catch((e: unknown) => e);
        expect(stale).toBeInstanceOf(StaleRoomError);
        expect((stale as StaleRoomError).roomId).toBe(roomId);
        expect((await store.loadRoom(roomId))?.lastSeq).toBe(3);
        await expect(store.commitRoom('no-such-room', { messages: [], expectedVersion: 1 })).rejects.toThrow();
        if (h.reopen) {
          await reopen();
          expect((await store.loadRoom(roomId))?.room).toEqual(again);
        }
      });

      it('keeps seqs gapless: a gap, a wrong room or a moved seq is refused and leaves no trace', async () => {
        const { roomId, version } = await roomWith(2);
        const before = await dumpStore(store);
        const bad: Message[][] = [
          [makeMessage(roomId, 4)], // gap
          [makeMessage(roomId, 3), makeMessage(roomId, 5)], // gap inside the commit
          [makeMessage('other-room', 3)], // wrong room
          [makeMessage(roomId, 0)],
          [makeMessage(roomId, 1)], // a new id at an existing seq
        ];
        for (const messages of bad) {
          await expect(store.commitRoom(roomId, { messages, expectedVersion: version })).rejects.toThrow();
        }
        const [m1] = await store.readMessages(roomId, { afterSeq: 0, limit: 1 });
        await expect(
          store.commitRoom(roomId, { messages: [{ ...m1!, seq: 2 }], expectedVersion: version }),
        ).rejects.toThrow(); // a new version must keep its seq
        expect(await dumpStore(store)).toEqual(before);
        // The version was not used up by the refused commits.
        await store.commitRoom(roomId, { messages: [makeMessage(roomId, 3)], expectedVersion: version });
      });

      it('lets the one writer pipeline commits: each expectedVersion is the previous result', async () => {
        const roomId = newRoomId();
        let version = await store.createRoom(makeRoom(roomId));
        for (let seq = 1; seq <= 5; seq++) {
          version = await store.commitRoom(roomId, { messages: [makeMessage(roomId, seq)], expectedVersion: version });
        }
        expect((await store.loadRoom(roomId))?.lastSeq).toBe(5);
        expect((await store.readMessages(roomId, { afterSeq: 0, limit: 10 })).map((m) => m.seq)).toEqual([1, 2, 3, 4, 5]);
      });

      it('commits of different rooms run concurrently and all land', async () => {
        const rooms = await Promise.all(Array.from({ length: 6 }, () => roomWith(0)));
        await Promise.all(
          rooms.map(({ roomId, version }) =>
            store.commitRoom(roomId, {
              room: makeRoom(roomId, { room_description: 'busy' }),
              messages: [makeMessage(roomId, 1), makeMessage(roomId, 2)],
              expectedVersion: version,
            }),
          ),
        );
        for (const { roomId } of rooms) {
          expect(await store.loadRoom(roomId)).toMatchObject({ lastSeq: 2, room: { room_description: 'busy' } });
        }
        expect(await store.messageCount()).toBe(12);
      });

      it('makes a commit visible all at once: messages and state together (guarantee 3)', async () => {
        const { roomId, version } = await roomWith(1);
        if (h.holdWrites) {
          // Deterministically mid-commit: written, held before it is durable. Nothing of it shows.
          const seen = async () => ({
            seqs: (await store.readMessages(roomId, { afterSeq: 0, limit: 10 })).map((m) => m.seq),
            room: (await store.loadRoom(roomId))?.room.room_description,
            lastSeq: (await store.loadRoom(roomId))?.lastSeq,
          });
          const before = await seen();
          expect(before.seqs).toEqual([1]);
          h.holdWrites.hold();
          const held = store.commitRoom(roomId, {
            room: makeRoom(roomId, { room_description: 'after' }),
            messages: [makeMessage(roomId, 2), makeMessage(roomId, 3)],
            expectedVersion: version,
          });
          try {
            await expect.poll(() => h.holdWrites!.waiting()).toBeGreaterThan(0);
            expect(await seen()).toEqual(before);
          } finally {
            h.holdWrites.release();
          }
          await held;
          expect(await seen()).toEqual({ seqs: [1, 2, 3], room: 'after', lastSeq: 3 });
          return;
        }
        // A store that cannot hold its writes: reads race the commit, and each must see all or none.
        const newRoom = makeRoom(roomId, { room_description: 'after' });
        const commit = store.commitRoom(roomId, {
          room: newRoom,
          messages: [makeMessage(roomId, 2), makeMessage(roomId, 3)],
          expectedVersion: version,
        });
        let done = false;
        void commit.then(() => (done = true), () => (done = true));
        let observations = 0;
        while (!done && observations < 10_000) {
          observations++;
          const msgs = await store.readMessages(roomId, { afterSeq: 0, limit: 10 });
          const loaded = await store.loadRoom(roomId);
          if (msgs.length > 1) expect(loaded?.room.room_description).toBe('after');
          else expect(msgs).toHaveLength(1);
          const loaded2 = await store.loadRoom(roomId);
          const msgs2 = await store.readMessages(roomId, { afterSeq: 0, limit: 10 });
          if (loaded2?.room.room_description === 'after') expect(msgs2.map((m) => m.seq)).toEqual([1, 2, 3]);
          if (loaded2?.lastSeq === 3) expect(loaded2.room.room_description).toBe('after');
        }
        await commit;
        expect(await store.loadRoom(roomId)).toMatchObject({ lastSeq: 3, room: { room_description: 'after' } });
      });

      it('returns copies of rooms and messages and keeps none of what was committed (guarantee 5)', async () => {
        const roomId = newRoomId();
        const room = makeRoom(roomId, { members: [member('u1', 'u')] });
        const v = await store.createRoom(room);
        room.room_name = 'mutated';
        room.members.push(member('x', 'x'));
        const m = makeMessage(roomId, 1);
        await store.commitRoom(roomId, { messages: [m], expectedVersion: v });
        m.text_content = 'mutated';
        const loaded = await store.loadRoom(roomId);
        expect(loaded?.room.room_name).toBe(`Room ${roomId}`);
        expect(loaded?.room.members).toHaveLength(1);
        loaded!.room.members.length = 0;
        expect((await store.loadRoom(roomId))?.room.members).toHaveLength(1);
        const read = await store.readMessages(roomId, { afterSeq: 0, limit: 1 });
        expect(read[0]?.text_content).toBe('message 1 — 你好');
        read[0]!.text_content = 'x';
        read[0]!.mentions.push('y');
        const byId = await store.getMessage(m.message_id);
        expect(byId?.text_content).toBe('message 1 — 你好');
        expect(byId?.mentions).toEqual([]);
        byId!.text_content = 'z';
        expect((await store.searchMessages(roomId, 'message', 5))[0]?.text_content).toBe('message 1 — 你好');
        expect((await store.findByClientMsgId(roomId, 'u-alice', 'none'))).toBeUndefined();
      });
    });

    describe('messages', () => {
      it('pages forwards, backwards and between, skip records included (latest versions)', async () => {
        const { roomId } = await roomWith(10, {}, (seq) => (seq === 4 ? { visible: false, skip_reason: 'skip' } : {}));
        const seqs = async (page: Parameters<Store['readMessages']>[1]) =>
          (await store.readMessages(roomId, page)).map((m) => m.seq);
        expect(await seqs({ afterSeq: 0, limit: 3 })).toEqual([1, 2, 3]);
        expect(await seqs({ afterSeq: 3, limit: 3 })).toEqual([4, 5, 6]);
        expect(await seqs({ afterSeq: 8, limit: 5 })).toEqual([9, 10]);
        expect(await seqs({ afterSeq: 10, limit: 5 })).toEqual([]);
        expect(await seqs({ beforeSeq: 5, limit: 2 })).toEqual([3, 4]);
        expect(await seqs({ beforeSeq: 3, limit: 5 })).toEqual([1, 2]);
        expect(await seqs({ beforeSeq: 1, limit: 5 })).toEqual([]);
        expect(await seqs({ beforeSeq: 50, limit: 2 })).toEqual([9, 10]);
        expect(await seqs({ limit: 3 })).toEqual([8, 9, 10]);
        expect(await seqs({ afterSeq: 2, beforeSeq: 6, limit: 10 })).toEqual([3, 4, 5]);
        expect(await seqs({ afterSeq: 2, beforeSeq: 6, limit: 2 })).toEqual([3, 4]);
      });

      it('replaces a message by its latest version in every read (guarantee 6)', async () => {
        const { roomId, version, messages } = await roomWith(3, {}, (seq) => ({
          client_msg_id: `c${seq}`,
          text_content: `original ${seq}`,
        }));
        const edited = { ...messages[1]!, text_content: 'EDITED text' };
        const deleted = { ...messages[2]!, text_content: '', deleted: true };
        const v2 = await store.commitRoom(roomId, { messages: [edited, deleted], expectedVersion: version });
        // A new message and an edit of it in one commit, then an edit of an edit.
        const m4 = makeMessage(roomId, 4, { text_content: 'four' });
        const v3 = await store.commitRoom(roomId, { messages: [m4, { ...m4, text_content: 'four b' }], expectedVersion: v2 });
        await store.commitRoom(roomId, { messages: [{ ...edited, text_content: 'EDITED twice' }], expectedVersion: v3 });

        const all = await store.readMessages(roomId, { afterSeq: 0, limit: 10 });
        expect(all.map((m) => [m.seq, m.text_content])).toEqual([
          [1, 'original 1'],
          [2, 'EDITED twice'],
          [3, ''],
          [4, 'four b'],
        ]);
        expect((await store.getMessage(edited.message_id))?.text_content).toBe('EDITED twice');
        expect((await store.findByClientMsgId(roomId, 'u-alice', 'c2'))?.text_content).toBe('EDITED twice');
        expect(await store.searchMessages(roomId, 'original 2', 10)).toEqual([]);
        expect((await store.searchMessages(roomId, 'edited', 10)).map((m) => m.seq)).toEqual([2]);
        expect((await store.readMessages(roomId, { beforeSeq: 4, limit: 1 }))[0]?.deleted).toBe(true);
        expect(await store.messageCount()).toBe(4);
        expect((await store.loadRoom(roomId))?.lastSeq).toBe(4);
      });

      it('gets a message by id across rooms; unknown ids are undefined', async () => {
        const a = await roomWith(2);
        const b = await roomWith(2);
        expect(await store.getMessage(b.messages[1]!.message_id)).toEqual(b.messages[1]);
        expect(await store.getMessage(a.messages[0]!.message_id)).toEqual(a.messages[0]);
        expect(await store.getMessage(randomUUID())).toBeUndefined();
      });

      it('searches visible, not deleted messages case-insensitively, oldest first, up to the limit', async () => {
        const texts = ['Hello World', 'nothing', 'HELLO again', 'hello hidden', 'hello deleted', 'say hello', 'hello 7'];
        const { roomId } = await roomWith(texts.length, {}, (seq) => ({
          text_content: texts[seq - 1]!,
          visible: seq !== 4,
          deleted: seq === 5,
        }));
        const seqs = async (q: string, limit: number) => (await store.searchMessages(roomId, q, limit)).map((m) => m.seq);
        expect(await seqs('hello', 10)).toEqual([1, 3, 6, 7]);
        expect(await seqs('HeLLo', 2)).toEqual([1, 3]);
        expect(await seqs('no match at all', 10)).toEqual([]);
        expect(await seqs('wORLD', 10)).toEqual([1]);
        expect(await store.searchMessages('no-such-room', 'hello', 10)).toEqual([]);
      });

      it('knows the last seq by sender (visible only) and the last person seq (visible, not deleted)', async () => {
        const { roomId, version, messages } = await roomWith(SENDERS_PLAN.length, {}, (seq) => SENDERS_PLAN[seq - 1]!);
        expect(await store.lastSeqBySender(roomId, 'u1')).toBe(3);
        expect(await store.lastSeqBySender(roomId, 'a1')).toBe(2);
        expect(await store.lastSeqBySender(roomId, 'u2')).toBe(0);
        expect(await store.lastSeqBySender(roomId, 'never')).toBe(0);
        expect(await store.lastSeqBySender('no-such-room', 'u1')).toBe(0);
        expect(await store.lastPersonSeq(roomId)).toBe(3);
        expect(await store.lastPersonSeq('no-such-room')).toBe(0);
        // Deleting the last person message moves lastPersonSeq back; the sender still posted it.
        const v2 = await store.commitRoom(roomId, {
          messages: [{ ...messages[2]!, deleted: true, text_content: '' }],
          expectedVersion: version,
        });
        expect(await store.lastPersonSeq(roomId)).toBe(1);
        expect(await store.lastSeqBySender(roomId, 'u1')).toBe(3);
        // New messages move both forward.
        await store.commitRoom(roomId, {
          messages: [makeMessage(roomId, 7, { sender_id: 'u2', role: 'user' })],
          expectedVersion: v2,
        });
        expect(await store.lastPersonSeq(roomId)).toBe(7);
        expect(await store.lastSeqBySender(roomId, 'u2')).toBe(7);
      });

      it('counts the visible messages between two seqs, following new versions and new messages', async () => {
        const { roomId, version, messages } = await roomWith(SENDERS_PLAN.length, {}, (seq) => SENDERS_PLAN[seq - 1]!);
        // Bounds are exclusive: seqs 1, 2, 3 and 6 are visible.
        expect(await store.countVisible(roomId, 0, 7)).toBe(4);
        expect(await store.countVisible(roomId, 0, 1_000_000)).toBe(4);
        expect(await store.countVisible(roomId, 1, 4)).toBe(2);
        expect(await store.countVisible(roomId, 3, 6)).toBe(0);
        expect(await store.countVisible(roomId, 2, 7)).toBe(2);
        expect(await store.countVisible(roomId, 5, 5)).toBe(0);
        expect(await store.countVisible('no-such-room', 0, 10)).toBe(0);
        // A new version that hides a message, and a new visible message.
        const v2 = await store.commitRoom(roomId, { messages: [{ ...messages[1]!, visible: false }], expectedVersion: version });
        expect(await store.countVisible(roomId, 0, 7)).toBe(3);
        expect(await store.countVisible(roomId, 1, 3)).toBe(0);
        await store.commitRoom(roomId, { messages: [makeMessage(roomId, 7, { sender_id: 'u2', role: 'user' })], expectedVersion: v2 });
        expect(await store.countVisible(roomId, 0, 8)).toBe(4);
        expect(await store.countVisible(roomId, 0, 7)).toBe(3);
        expect(await store.countVisible(roomId, 6, 8)).toBe(1);
      });

      it('finds a message by sender and client_msg_id', async () => {
        const { roomId, messages } = await roomWith(3, {}, (seq) => ({
          sender_id: seq === 2 ? 'other' : 'u-alice',
          client_msg_id: seq === 3 ? undefined : 'same-client-id',
        }));
        expect(await store.findByClientMsgId(roomId, 'u-alice', 'same-client-id')).toEqual(messages[0]);
        expect(await store.findByClientMsgId(roomId, 'other', 'same-client-id')).toEqual(messages[1]);
        expect(await store.findByClientMsgId(roomId, 'nobody', 'same-client-id')).toBeUndefined();
        expect(await store.findByClientMsgId(roomId, 'u-alice', 'unknown')).toBeUndefined();
        expect(await store.findByClientMsgId('no-such-room', 'u-alice', 'same-client-id')).toBeUndefined();
      });

      it('counts messages over all rooms, a new version not counted twice', async () => {
        expect(await store.messageCount()).toBe(0);
        const { roomId, version, messages } = await roomWith(3);
        await roomWith(2);
        await store.commitRoom(roomId, { messages: [{ ...messages[0]!, text_content: 'v2' }], expectedVersion: version });
        expect(await store.messageCount()).toBe(5);
      });
    });

    describe('durability (reopen)', () => {
      // Where a store cannot reopen, the test is replaced by one that says so and checks it.
      const reopenIt = canReopen ? it : (title: string) => notApplicable(title, 'it cannot reopen (its data does not outlive it)', () => h.reopen);
      reopenIt('serves after a reopen exactly what it served before', async () => {
        await put(agent('a1', { name: 'Ann', token_hashes: ['ta'] }));
        await put(user('u1', { name: 'Udo', token_hashes: ['tu'] }));
        await put(agent('a1', { name: 'Anna', token_hashes: ['ta2'] }));
        const { roomId, version, messages } = await roomWith(
          5,
          { members: [member('u1', 'Udo'), member('a1', 'Anna')] },
          (seq) => ({ sender_id: seq % 2 ? 'u1' : 'a1', role: seq % 2 ? 'user' : 'ai_agent', client_msg_id: `c${seq}` }),
        );
        await store.commitRoom(roomId, {
          room: makeRoom(roomId, { room_description: 'later', members: [member('u1', 'Udo')] }),
          messages: [{ ...messages[4]!, deleted: true, text_content: '' }, makeMessage(roomId, 6, { visible: false })],
          expectedVersion: version,
        });
        await roomWith(0, { archived: true });
        const extra = { tokens: ['ta', 'ta2', 'tu'], keys: ['ann', 'anna', 'udo'], senders: ['u1', 'a1', 'u-alice'] };
        const before = await dumpStore(store, extra);
        await reopen();
        expect(await dumpStore(store, extra)).toEqual(before);
        // The reopened store goes on from there: versions it hands out are accepted.
        const loaded = await store.loadRoom(roomId);
        await store.commitRoom(roomId, { messages: [makeMessage(roomId, 7)], expectedVersion: loaded!.version });
        await expect(store.putParticipant(user('u9', { name: 'anna' }), 'anna')).rejects.toBeInstanceOf(NameTakenError);
        await reopen();
        expect((await store.loadRoom(roomId))?.lastSeq).toBe(7);
      });

      it('opens an empty store with nothing in it', async () => {
        expect(await store.listParticipants()).toEqual([]);
        expect(await store.listRoomIds()).toEqual([]);
        expect(await store.messageCount()).toBe(0);
        if (h.reopen) {
          await reopen();
          expect(await store.listRoomIds()).toEqual([]);
        }
      });

      it('close is idempotent', async () => {
        await store.close();
        await store.close();
      });
    });

    const failDescribe = canFail
      ? describe
      : (title: string) => notApplicable(title, 'its harness cannot make writes fail', () => h.faults);
    failDescribe('no trace on reject (guarantee 2)', () => {
      // Each write, made to fail in each way the harness knows; every read afterwards, and a
      // reopened store, equal the state before; the same write succeeds once the fault is gone.
      type Setup = { roomId: string; version: number; lastSeq: number; messages: Message[] };
      const writes: { name: string; run: (s: Store, setup: Setup) => Promise<unknown> }[] = [
        { name: 'putParticipant (new)', run: (s) => s.putParticipant(user('u-new', { name: 'Newbie' }), 'newbie') },
        {
          name: 'putParticipant (token rotation and rename)',
          run: (s) => s.putParticipant(agent('a1', { name: 'Renamed', token_hashes: ['rotated'] }), 'renamed'),
        },
        { name: 'createRoom', run: (s) => s.createRoom(makeRoom(newRoomId(), { members: [member('a1', 'a')] })) },
        {
          name: 'createRoom (with its first messages)',
          run: (s) => {
            const roomId = newRoomId();
            return s.createRoom(makeRoom(roomId, { members: [member('a1', 'a')] }), [makeMessage(roomId, 1), makeMessage(roomId, 2, { sender_id: 'a1' })]);
          },
        },
        {
          name: 'commitRoom (messages and state)',
          run: (s, { roomId, version, lastSeq }) =>
            s.commitRoom(roomId, {
              room: makeRoom(roomId, { room_description: 'failed', members: [member('u-x', 'x')] }),
              messages: [
                makeMessage(roomId, lastSeq + 1, { client_msg_id: `retry-${lastSeq}`, role: 'user' }),
                makeMessage(roomId, lastSeq + 2, { sender_id: 'a1', role: 'ai_agent' }),
              ],
              expectedVersion: version,
            }),
        },
        {
          name: 'commitRoom (edit only)',
          run: (s, { roomId, version, messages }) =>
            s.commitRoom(roomId, { messages: [{ ...messages[0]!, text_content: 'edited', deleted: true }], expectedVersion: version }),
        },
        {
          name: 'commitRoom (state only)',
          run: (s, { roomId, version }) =>
            s.commitRoom(roomId, { room: makeRoom(roomId, { archived: true }), messages: [], expectedVersion: version }),
        },
      ];

      for (const write of writes) {
        it(`${write.name}: rejects under every fault, leaves no trace, succeeds on retry`, async () => {
          if (!h.faults) throw new Error('no faults in the harness');
          await put(agent('a1', { name: 'Agent1', token_hashes: ['t-a1'] }));
          const setup = { ...(await roomWith(3, { members: [member('a1', 'a')] }, (seq) => ({ client_msg_id: `c${seq}` }))), lastSeq: 3 };
          // Another room with a log, so failures are seen next to untouched data.
          await roomWith(2);
          const extra = {
            tokens: ['t-a1', 'rotated', 'tok-u-new'],
            keys: ['agent1', 'renamed', 'newbie'],
            senders: ['u-alice', 'a1'],
          };
          const before = await dumpStore(store, extra);
          // Versions are opaque and need not survive a reopen: take the current one each time.
          const current = async (): Promise<Setup> => {
            const loaded = (await store.loadRoom(setup.roomId))!;
            return { ...setup, version: loaded.version, lastSeq: loaded.lastSeq };
          };
          let rejected = 0;
          for (const kind of h.faults.kinds) {
            const now = await current();
            const state = await dumpStore(store, extra);
            h.faults.set(kind);
            const outcome = await write.run(store, now).then(
              () => 'resolved' as const,
              (err: unknown) => err,
            );
            h.faults.set(null);
            if (outcome === 'resolved') {
              // A fault this write does not go through (a log append renames nothing): it is a
              // normal write then, durable like any other.
              const after = await dumpStore(store, extra);
              if (h.reopen) {
                await reopen();
                expect(await dumpStore(store, extra), `reopened after ${write.name} under ${kind}`).toEqual(after);
              }
              continue;
            }
            rejected++;
            expect(outcome, `${write.name} under ${kind}`).toBeInstanceOf(Error);
            expect(await dumpStore(store, extra), `reads after ${write.name} failed under ${kind}`).toEqual(state);
            // The failed write used up nothing: the version before it is still the current one.
            expect((await store.loadRoom(setup.roomId))?.version).toBe(now.version);
            if (h.reopen) {
              await reopen();
              expect(await dumpStore(store, extra), `reopened after ${write.name} failed under ${kind}`).toEqual(state);
            }
          }
          expect(rejected, `some fault makes ${write.name} fail`).toBeGreaterThan(0);
          await write.run(store, await current());
          const after = await dumpStore(store, extra);
          expect(after).not.toEqual(before);
          if (h.reopen) {
            await reopen();
            expect(await dumpStore(store, extra)).toEqual(after);
          }
        });
      }
    });
  });
}
