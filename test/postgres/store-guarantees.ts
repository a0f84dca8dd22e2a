// Checks of the Store seam's written guarantees (src/storage/store.ts), run against any Store.
// pg-store.test.ts runs them on MemoryStore (the reference, which validates the checks) and on
// PgStore. The storage helper's shared contract suite (test/unit/store-contract.ts) runs on
// PgStore as well once it exists; these cover what PostgreSQL adds or could get wrong.
import { describe, expect, it } from 'vitest';
import { NameTakenError, StaleRoomError, type Store } from '../../src/storage/store.js';
import type { Member } from '../../src/types.js';
import { makeMember } from '../unit/export-fixtures.js';
import { makeAgent, makeMessage, makeRoom, makeUser } from '../unit/storage-helpers.js';

/** An agent member of a test room. */
export function member(participantId: string, name: string): Member {
  return makeMember({ name, participant_id: participantId, language_preference: 'en', timezone_preference: 'UTC' });
}

export function describeStoreGuarantees(label: string, makeStore: () => Promise<Store>, cleanup: (s: Store) => Promise<void>): void {
  describe(`Store guarantees: ${label}`, () => {
    const withStore = (fn: (store: Store) => Promise<void>) => async () => {
      const store = await makeStore();
      try {
        await fn(store);
      } finally {
        await cleanup(store);
      }
    };

    it(
      'participants: put/get by id, token hash and name key; replace keeps one record; NameTakenError leaves the old record',
      withStore(async (store) => {
        const agent = makeAgent('a1', { name: 'Alpha', token_hashes: ['t1', 't2'] });
        const user = makeUser('u1', { name: 'Bea', token_hashes: ['t3'] });
        await store.putParticipant({ kind: 'agent', record: agent }, 'alpha');
        await store.putParticipant({ kind: 'user', record: user }, 'bea');
        expect(await store.getParticipant('a1')).toEqual({ kind: 'agent', record: agent });
        expect(await store.findParticipantByTokenHash('t2')).toEqual({ kind: 'agent', record: agent });
        expect(await store.findParticipantByTokenHash('t3')).toEqual({ kind: 'user', record: user });
        expect(await store.findParticipantByTokenHash('nope')).toBeUndefined();
        expect(await store.findParticipantByNameKey('bea')).toEqual({ kind: 'user', record: user });
        expect(await store.getParticipant('zzz')).toBeUndefined();

        // Rename and rotate: the old token and key no longer find it.
        const renamed = { ...agent, name: 'Alef', token_hashes: ['t9'] };
        await store.putParticipant({ kind: 'agent', record: renamed }, 'alef');
        expect(await store.findParticipantByTokenHash('t1')).toBeUndefined();
        expect(await store.findParticipantByNameKey('alpha')).toBeUndefined();
        expect(await store.findParticipantByNameKey('alef')).toEqual({ kind: 'agent', record: renamed });

        // Taking another's key fails with NameTakenError and changes nothing.
        const thief = { ...user, name: 'ALEF', token_hashes: ['t10'] };
        const err = await store.putParticipant({ kind: 'user', record: thief }, 'alef').catch((e: unknown) => e);
        expect(err).toBeInstanceOf(NameTakenError);
        expect((err as NameTakenError).takenName).toBe('ALEF');
        expect(await store.getParticipant('u1')).toEqual({ kind: 'user', record: user });
        expect(await store.findParticipantByTokenHash('t10')).toBeUndefined();
        const newcomer = makeAgent('a2', { name: 'alef' });
        await expect(store.putParticipant({ kind: 'agent', record: newcomer }, 'alef')).rejects.toBeInstanceOf(NameTakenError);
        expect(await store.getParticipant('a2')).toBeUndefined();

        expect((await store.listParticipants()).map((p) => p.record.name)).toEqual(['Alef', 'Bea']);
      }),
    );

    it(
      'rooms: create, load, list, summaries, roomsOf; creating an existing id rejects',
      withStore(async (store) => {
        const r1 = makeRoom('r1', { members: [member('a1', 'Alpha')] });
        const r2 = makeRoom('r2', { password_hash: 'x', archived: true, room_name: '第二 room' });
        expect(await store.createRoom(r1)).toBeTypeOf('number');
        await store.createRoom(r2);
        await expect(store.createRoom(makeRoom('r1'))).rejects.toThrow();
        expect(await store.loadRoom('r1')).toEqual({ room: r1, lastSeq: 0, version: expect.any(Number) });
        expect(await store.loadRoom('none')).toBeUndefined();
        expect(await store.listRoomIds()).toEqual(['r1', 'r2']);
        expect(await store.listRoomSummaries(false)).toEqual([
          { room_id: 'r1', room_name: 'Room r1', room_description: 'test', interaction_mode: 'default', member_count: 1, has_password: false, archived: false },
        ]);
        expect((await store.listRoomSummaries(true))[1]).toEqual({
          room_id: 'r2', room_name: '第二 room', room_description: 'test', interaction_mode: 'default', member_count: 0, has_password: true, archived: true,
        });
        expect(await store.roomsOf('a1')).toEqual(['r1']);
        expect(await store.roomsOf('a2')).toEqual([]);
      }),
    );

    it(
      'commits: gapless seqs, state and messages together, versions advance, stale versions reject without a trace',
      withStore(async (store) => {
        const v1 = await store.createRoom(makeRoom('r'));
        const m1 = makeMessage('r', 1, { client_msg_id: 'c1' });
        const m2 = makeMessage('r', 2, { role: 'ai_agent' as never, sender_id: 'a1', sender: 'Alpha' });
        const room2 = makeRoom('r', { members: [member('a1', 'Alpha')], processed_through_seq: 2 });
        const v2 = await store.commitRoom('r', { room: room2, messages: [m1, m2], expectedVersion: v1 });
        expect(v2).not.toBe(v1);
        expect(await store.loadRoom('r')).toEqual({ room: room2, lastSeq: 2, version: v2 });
        expect(await store.roomsOf('a1')).toEqual(['r']);

        // A commit from the old version: StaleRoomError, nothing changes.
        const err = await store
          .commitRoom('r', { room: makeRoom('r', { room_name: 'lost' }), messages: [makeMessage('r', 3)], expectedVersion: v1 })
          .catch((e: unknown) => e);
        expect(err).toBeInstanceOf(StaleRoomError);
        expect(await store.loadRoom('r')).toEqual({ room: room2, lastSeq: 2, version: v2 });
        expect(await store.readMessages('r', { afterSeq: 0, limit: 10 })).toEqual([m1, m2]);

        // A gap or a wrong update rejects before anything is written.
        await expect(store.commitRoom('r', { messages: [makeMessage('r', 4)], expectedVersion: v2 })).rejects.toThrow();
        await expect(store.commitRoom('r', { messages: [makeMessage('r', 1)], expectedVersion: v2 })).rejects.toThrow();
        await expect(
          store.commitRoom('r', { messages: [makeMessage('r', 3), makeMessage('r', 5)], expectedVersion: v2 }),
        ).rejects.toThrow();
        expect(await store.loadRoom('r')).toEqual({ room: room2, lastSeq: 2, version: v2 });
        expect(await store.messageCount()).toBe(2);

        // Messages only: the state stays, the version still moves.
        const m3 = makeMessage('r', 3);
        const v3 = await store.commitRoom('r', { messages: [m3], expectedVersion: v2 });
        expect(await store.loadRoom('r')).toEqual({ room: room2, lastSeq: 3, version: v3 });
        await expect(store.commitRoom('nope', { messages: [], expectedVersion: 1 })).rejects.toThrow();
      }),
    );

    it(
      'new versions of a message replace the old in every read (edit, delete), also within one commit',
      withStore(async (store) => {
        let v = await store.createRoom(makeRoom('r'));
        const m1 = makeMessage('r', 1, { text_content: 'first draft', client_msg_id: 'c1' });
        v = await store.commitRoom('r', { messages: [m1], expectedVersion: v });
        const edited = { ...m1, text_content: 'final text', edited_at: '2026-01-02T00:00:00.000Z' };
        const m2 = makeMessage('r', 2);
        const m2deleted = { ...m2, deleted: true, text_content: '' };
        v = await store.commitRoom('r', { messages: [edited, m2, m2deleted], expectedVersion: v });
        expect(await store.getMessage(m1.message_id)).toEqual(edited);
        expect(await store.getMessage(m2.message_id)).toEqual(m2deleted);
        expect(await store.readMessages('r', { afterSeq: 0, limit: 10 })).toEqual([edited, m2deleted]);
        expect(await store.searchMessages('r', 'draft', 10)).toEqual([]);
        expect(await store.searchMessages('r', 'FINAL', 10)).toEqual([edited]);
        expect(await store.findByClientMsgId('r', m1.sender_id!, 'c1')).toEqual(edited);
        expect(await store.loadRoom('r')).toMatchObject({ lastSeq: 2 });
        expect(await store.messageCount()).toBe(2);
      }),
    );

    it(
      'paging, search (Chinese, wildcards), per-sender and person seqs, client_msg_id',
      withStore(async (store) => {
        let v = await store.createRoom(makeRoom('r'));
        await store.createRoom(makeRoom('other'));
        const texts = ['你好，世界', 'Hello World', '100% sure_thing', 'hidden 你好', '世界和平', 'deleted 世界'];
        const msgs = texts.map((text, i) =>
          makeMessage('r', i + 1, {
            text_content: text,
            sender_id: i % 2 === 0 ? 'u1' : 'a1',
            role: (i % 2 === 0 ? 'user' : 'ai_agent') as never,
            visible: i !== 3,
            deleted: i === 5,
            client_msg_id: `c${i}`,
          }),
        );
        v = await store.commitRoom('r', { messages: msgs, expectedVersion: v });
        const seqs = (list: { seq: number }[]) => list.map((m) => m.seq);
        expect(seqs(await store.readMessages('r', { afterSeq: 2, limit: 2 }))).toEqual([3, 4]);
        expect(seqs(await store.readMessages('r', { afterSeq: 2, beforeSeq: 4, limit: 10 }))).toEqual([3]);
        expect(seqs(await store.readMessages('r', { beforeSeq: 5, limit: 2 }))).toEqual([3, 4]);
        expect(seqs(await store.readMessages('r', { limit: 2 }))).toEqual([5, 6]);
        expect(seqs(await store.readMessages('r', { afterSeq: 6, limit: 5 }))).toEqual([]);
        expect(await store.readMessages('other', { afterSeq: 0, limit: 5 })).toEqual([]);

        expect(seqs(await store.searchMessages('r', '世界', 10))).toEqual([1, 5]);
        expect(seqs(await store.searchMessages('r', '你好', 10))).toEqual([1]);
        expect(seqs(await store.searchMessages('r', 'hello world', 10))).toEqual([2]);
        expect(seqs(await store.searchMessages('r', '%', 10))).toEqual([3]);
        expect(seqs(await store.searchMessages('r', 'e_t', 10))).toEqual([3]);
        expect(seqs(await store.searchMessages('r', 'o_w', 10))).toEqual([]);
        expect(seqs(await store.searchMessages('r', '_', 10))).toEqual([3]);
        expect(seqs(await store.searchMessages('r', '世界', 1))).toEqual([1]);
        expect(await store.searchMessages('other', '世界', 10)).toEqual([]);

        expect(await store.lastSeqBySender('r', 'u1')).toBe(5);
        expect(await store.lastSeqBySender('r', 'a1')).toBe(6);
        expect(await store.lastSeqBySender('r', 'x')).toBe(0);
        expect(await store.lastPersonSeq('r')).toBe(5);
        expect(await store.lastPersonSeq('other')).toBe(0);
        expect((await store.findByClientMsgId('r', 'a1', 'c1'))?.seq).toBe(2);
        expect(await store.findByClientMsgId('r', 'u1', 'c1')).toBeUndefined();
        expect(await store.messageCount()).toBe(6);
      }),
    );

    it(
      'reads return the caller\'s own copies',
      withStore(async (store) => {
        const room = makeRoom('r', { members: [member('a1', 'Alpha')] });
        let v = await store.createRoom(room);
        room.room_name = 'changed after create';
        const m = makeMessage('r', 1);
        v = await store.commitRoom('r', { messages: [m], expectedVersion: v });
        m.text_content = 'changed after commit';
        const loaded = (await store.loadRoom('r'))!;
        loaded.room.members.pop();
        const read = (await store.readMessages('r', { afterSeq: 0, limit: 1 }))[0]!;
        read.text_content = 'mutated';
        expect((await store.loadRoom('r'))!.room.members).toHaveLength(1);
        expect((await store.loadRoom('r'))!.room.room_name).toBe('Room r');
        expect((await store.getMessage(m.message_id))!.text_content).toBe('message 1 — 你好');
      }),
    );

    it(
      'keeps a record exactly as written (key order, unicode, optional fields)',
      withStore(async (store) => {
        let v = await store.createRoom(makeRoom('r'));
        const m = makeMessage('r', 1, { text_content: 'emoji 👩‍💻, a NUL \u0000, \\ "quotes" 中文', mentions: ['Alpha', '贝塔'] });
        v = await store.commitRoom('r', { messages: [m], expectedVersion: v });
        const back = (await store.getMessage(m.message_id))!;
        expect(JSON.stringify(back)).toBe(JSON.stringify(m));
        expect(v).toBeTypeOf('number');
        expect(await store.searchMessages('r', 'nul', 5)).toEqual([m]);
      }),
    );
  });
}
