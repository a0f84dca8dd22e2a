// Participant records in the file store share repeated values (shared-values.ts): reads still
// hand out records the caller owns, equal to what was put, through every path (snapshot load,
// journal replay, direct writes), and the shared values never leak a change into another record.
import { describe, expect, it } from 'vitest';
import { SharedValues } from '../../src/storage/shared-values.js';
import type { ParticipantRecord } from '../../src/storage/store.js';
import type { Member } from '../../src/types.js';
import { fileStoresPerTest, makeAgent, makeRoom, makeUser } from './storage-helpers.js';

const fs = fileStoresPerTest();

describe('shared values of participant records', () => {
  it('shares repeated strings and empty lists, keeps everything else as it is', () => {
    const shared = new SharedValues();
    const a = shared.share(JSON.parse(JSON.stringify(makeAgent('a1', { capabilities: [], skip_list: ['x'] }))));
    const b = shared.share(JSON.parse(JSON.stringify(makeAgent('a2', { capabilities: [] }))));
    expect(a.capabilities).toBe(b.capabilities);
    expect(Object.isFrozen(a.capabilities)).toBe(true);
    expect(a).toEqual(makeAgent('a1', { capabilities: [], skip_list: ['x'] }));
    expect(() => (a.capabilities as string[]).push('y')).toThrow();
  });

  for (const syncSnapshotBytes of [0, 1 << 20]) {
    it(`hands out records equal to what was put and the caller's own (${syncSnapshotBytes ? 'direct writes' : 'journal'}, then reopened)`, async () => {
      const put: ParticipantRecord[] = [
        { kind: 'agent', record: makeAgent('a1', { capabilities: [], skip_list: [] }) },
        { kind: 'agent', record: makeAgent('a2', { capabilities: ['code'], skip_list: [] }) },
        { kind: 'user', record: makeUser('u1', { rooms: [] }) },
      ];
      const check = async (store: ReturnType<typeof fs.store>): Promise<void> => {
        for (const p of put) {
          const id = p.kind === 'agent' ? p.record.agent_id : p.record.user_id;
          const got = await store.getParticipant(id);
          expect(got).toEqual(p);
          // The copy is the caller's: changing it changes nothing stored.
          if (got?.kind === 'agent') {
            got.record.capabilities.push('changed');
            got.record.skip_list.push('changed');
          } else got?.record.rooms.push('changed');
        }
        for (const p of put) expect(await store.getParticipant(p.kind === 'agent' ? p.record.agent_id : p.record.user_id)).toEqual(p);
        expect((await store.listParticipants()).length).toBe(3);
      };
      const store = fs.store(undefined, { syncSnapshotBytes, compactEveryMs: 0 });
      await store.open();
      for (const p of put) await store.putParticipant(p, p.record.name.toLowerCase());
      await check(store);
      await store.close();
      const reopened = fs.store(undefined, { compactEveryMs: 0 });
      await reopened.open();
      await check(reopened);
    });

    it(`keeps room members equal to what was committed and the caller's own (${syncSnapshotBytes ? 'direct writes' : 'journal'}, then reopened)`, async () => {
      const member = (id: string): Member => ({
        name: `m-${id}`,
        role: 'ai_agent',
        introduce: '',
        status: 'offline',
        last_active: '2026-11-01T00:00:00.000Z',
        is_host: false,
        skip_list: [],
        language_preference: 'zh-CN',
        timezone_preference: 'Asia/Shanghai',
        participant_id: id,
        joined_at: '2026-11-01T00:00:00.000Z',
      });
      const room = makeRoom('room-1', { members: [member('a1'), member('a2')] });
      const store = fs.store(undefined, { syncSnapshotBytes, compactEveryMs: 0 });
      await store.open();
      await store.createRoom(room);
      const loaded = (await store.loadRoom('room-1'))!;
      expect(loaded.room).toEqual(room);
      loaded.room.members[0]!.skip_list.push('changed');
      const next = { ...room, members: [...room.members, member('a3')] };
      await store.commitRoom('room-1', { room: next, messages: [], expectedVersion: loaded.version });
      expect((await store.loadRoom('room-1'))!.room).toEqual(next);
      await store.close();
      const reopened = fs.store(undefined, { compactEveryMs: 0 });
      await reopened.open();
      expect((await reopened.loadRoom('room-1'))!.room).toEqual(next);
    });
  }
});
