// The room runtime on the in-memory store with a manual clock: commands of one room run one
// after the other and share commits; a failed commit changes nothing and publishes nothing; a
// failing command does not disturb the others of its batch; deadlines fire from the injected
// timers; presence changes become member status.
import { afterEach, describe, expect, it } from 'vitest';
import { InProcessBus } from '../../src/events/bus.js';
import { Presence } from '../../src/identity/presence.js';
import type { RoomEvent } from '../../src/protocol/events.js';
import type { Draft } from '../../src/runtime/commands.js';
import { inDraft } from '../../src/runtime/room-runtime.js';
import type { Rooms } from '../../src/runtime/rooms.js';
import { MemoryStore, type WriteKind } from '../../src/storage/memory-store.js';
import { readChanges } from '../../src/runtime/change-events.js';
import { StaleRoomError, type CommitReads, type RoomChangesSince, type RoomCommit } from '../../src/storage/store.js';
import type { Message, Room } from '../../src/types.js';
import { ManualClock } from '../helpers/clock.js';
import { caller, member, testRooms, TURN_MS } from '../helpers/runtime.js';


let rooms: Rooms | undefined;
afterEach(() => rooms?.stop());

async function world(options: { failWrites?: () => boolean } = {}) {
  const clock = new ManualClock();
  const commits: string[] = [];
  const store = new MemoryStore({
    beforeWrite: (kind: WriteKind) => {
      if (options.failWrites?.()) throw Object.assign(new Error('injected'), { code: 'EIO' });
      commits.push(kind);
    },
  });
  const bus = new InProcessBus();
  const events: RoomEvent[] = [];
  bus.subscribe((e) => events.push(e));
  const presence = new Presence(clock.now, clock);
  rooms = testRooms(store, bus, presence, clock);
  const person = caller('Ann', 'user');
  const a = caller('Alpha', 'ai_agent');
  const b = caller('Beta', 'ai_agent');
  for (const c of [person, a, b]) presence.touch(c.id);
  const room: Room = await rooms.create(person, { room_name: 'Runtime room' }, member(person, clock));
  for (const c of [a, b]) await rooms.execute(room.room_id, { type: 'join', caller: c, member: member(c, clock), passwordHash: null });
  commits.length = 0;
  events.length = 0;
  return { clock, store, events, commits, presence, rooms, roomId: room.room_id, person, a, b };
}

const post = (text: string, extra: Record<string, unknown> = {}) => ({ text_content: text, ...extra });

describe('room runtime', () => {
  it('runs concurrent commands of one room in order and commits them together', async () => {
    const w = await world();
    const sends = Array.from({ length: 20 }, (_, i) => w.rooms.execute(w.roomId, { type: 'post', caller: w.person, input: post(`m${i}`) }));
    const sent = (await Promise.all(sends)) as Message[];
    expect(sent.map((m) => m.seq)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    // The first command commits alone; the 19 queued meanwhile share the next commit.
    expect(w.commits.filter((c) => c === 'commitRoom').length).toBeLessThanOrEqual(2);
    const stored = await w.store.readMessages(w.roomId, { afterSeq: 0, limit: 100 });
    expect(stored.filter((m) => m.visible).map((m) => m.text_content)).toEqual(sent.map((m) => m.text_content));
    const published = w.events.filter((e) => e.event === 'message_new').map((e) => (e.data as { message: Message }).message.seq);
    expect(published).toEqual([...published].sort((x, y) => x - y));
  });

  it('a command that throws leaves the others of its batch untouched', async () => {
    const w = await world();
    const first = w.rooms.execute(w.roomId, { type: 'post', caller: w.person, input: post('hello') });
    // Queued behind the first commit: an empty text (refused) between two good posts.
    const good1 = w.rooms.execute(w.roomId, { type: 'post', caller: w.person, input: post('one') });
    const bad = w.rooms.execute(w.roomId, { type: 'post', caller: w.person, input: post('   ') });
    const good2 = w.rooms.execute(w.roomId, { type: 'post', caller: w.person, input: post('two') });
    await first;
    await expect(bad).rejects.toMatchObject({ code: 'validation_error' });
    const [m1, m2] = (await Promise.all([good1, good2])) as Message[];
    expect(m2!.seq).toBe(m1!.seq + 1);
  });

  it('a command that throws after adding to the batch leaves it as it was (inDraft)', async () => {
    const w = await world();
    const base: Draft = { room: await w.rooms.room(w.roomId), lastSeq: 1, lastPersonSeq: 1, messages: [], events: [], access: [], roomChanged: false, timer: undefined, turnsIssued: [] };
    const kept = await inDraft(base, async (d) => {
      d.turnsIssued.push('Alpha');
      d.room.room_name = 'renamed';
      return 'ok';
    });
    expect(kept.result).toBe('ok');
    const before = JSON.stringify(kept.draft);
    const failing = inDraft(kept.draft, async (d) => {
      d.messages.push({ seq: 2 } as Message);
      d.events.push({ event: 'room_update' } as RoomEvent);
      d.access.push({ type: 'left', room_id: w.roomId, participant_id: 'x' });
      d.turnsIssued.push('Beta');
      d.room.room_name = 'broken';
      d.room.members.pop();
      throw new Error('late failure');
    });
    await expect(failing).rejects.toThrow('late failure');
    expect(JSON.stringify(kept.draft)).toBe(before);
    expect(kept.draft.turnsIssued).toEqual(['Alpha']);
    // The committed state was never touched: each command works on its own copy of the room.
    expect((await w.rooms.room(w.roomId)).room_name).toBe('Runtime room');
  });

  it('a failed commit changes nothing, publishes nothing, and the retry writes anew', async () => {
    let failing = false;
    const w = await world({ failWrites: () => failing });
    const runtime = await w.rooms.require(w.roomId);
    const before = structuredClone(runtime.room);
    failing = true;
    await expect(
      w.rooms.execute(w.roomId, { type: 'post', caller: w.person, input: post('lost?', { client_msg_id: 'k' }) }),
    ).rejects.toMatchObject({ code: 'EIO' });
    expect(w.events).toEqual([]);
    expect(runtime.room).toEqual(before);
    expect(runtime.committedSeq).toBe(0);
    failing = false;
    const retry = (await w.rooms.execute(w.roomId, { type: 'post', caller: w.person, input: post('lost?', { client_msg_id: 'k' }) })) as Message;
    expect(retry.seq).toBe(1);
    // The repeat of a durable message is answered with it and writes nothing.
    const commits = w.commits.length;
    const repeat = (await w.rooms.execute(w.roomId, { type: 'post', caller: w.person, input: post('lost?', { client_msg_id: 'k' }) })) as Message;
    expect(repeat.message_id).toBe(retry.message_id);
    expect(w.commits.length).toBe(commits);
  });

  it("a person's presence change and the call that caused it share one commit", async () => {
    const w = await world();
    await w.rooms.execute(w.roomId, { type: 'presence', participantId: w.person.id, online: false, lastActive: w.clock.now() });
    expect((await w.rooms.room(w.roomId)).members.find((m) => m.participant_id === w.person.id)?.status).toBe('offline');
    w.commits.length = 0;
    // What a call from a person who was offline does: marks them online (the presence change
    // is queued in each of their rooms), then runs its own command.
    const marked = w.rooms.execute(w.roomId, { type: 'presence', participantId: w.person.id, online: true, lastActive: w.clock.now() });
    const paused = w.rooms.execute(w.roomId, { type: 'set_status', caller: w.person, status: 'paused' });
    await Promise.all([marked, paused]);
    expect(w.commits.filter((c) => c === 'commitRoom')).toHaveLength(1);
    const room = await w.rooms.room(w.roomId);
    expect(room.system_status).toBe('paused');
    expect(room.members.find((m) => m.participant_id === w.person.id)?.status).toBe('online');
  });

  it('system_announcement says so while no agent of the room is online, and clears when one comes back (SPEC §4)', async () => {
    const w = await world();
    const runtime = await w.rooms.require(w.roomId);
    expect(runtime.room.announcement.system_announcement).toBe('');
    w.presence.touch(w.person.id);
    w.clock.advance(90_001); // the agents made no call: they go offline
    w.presence.touch(w.person.id);
    await expect.poll(() => runtime.room.members.filter((m) => m.role === 'ai_agent').map((m) => m.status)).toEqual(['offline', 'offline']);
    await expect.poll(() => runtime.room.announcement.system_announcement).toBe('本房间目前没有在线的智能体。');
    expect(w.events.some((e) => e.event === 'room_update' && e.data.room.announcement.system_announcement === '本房间目前没有在线的智能体。')).toBe(true);
    // Paused by the person as well: both conditions, in one notice.
    await w.rooms.execute(w.roomId, { type: 'set_status', caller: w.person, status: 'paused' });
    expect(runtime.room.announcement.system_announcement).toBe('房间已被 Ann 暂停，智能体不会发言，直到房间恢复。本房间目前没有在线的智能体。');
    w.presence.touch(w.a.id);
    await expect.poll(() => runtime.room.announcement.system_announcement).toBe('房间已被 Ann 暂停，智能体不会发言，直到房间恢复。');
    await w.rooms.execute(w.roomId, { type: 'set_status', caller: w.person, status: 'active' });
    expect(runtime.room.announcement.system_announcement).toBe('');
  });

  it("a call of a person who was offline: the presence change it causes and the call's command share one commit", async () => {
    const w = await world();
    w.clock.advance(90_001); // nobody called: everyone goes offline
    const runtime = await w.rooms.require(w.roomId);
    await expect.poll(() => runtime.room.members.map((m) => m.status)).toEqual(['offline', 'offline', 'offline']);
    w.commits.length = 0;
    w.events.length = 0;
    // What the transports do for a call: authenticate (presence.touch marks the person online,
    // which is stored in each of their rooms), then run the tool's command at once.
    w.presence.touch(w.person.id);
    await w.rooms.execute(w.roomId, { type: 'set_status', caller: w.person, status: 'paused' });
    expect(w.commits.filter((c) => c === 'commitRoom')).toHaveLength(1);
    expect(runtime.room.system_status).toBe('paused');
    expect(runtime.room.members.find((m) => m.participant_id === w.person.id)?.status).toBe('online');
    // In that order: the member came online, then paused the room.
    expect(w.events.map((e) => e.event).filter((e) => e === 'member_status_change' || e === 'room_update')).toEqual(['member_status_change', 'room_update']);
  });

  it("a room_update carries the room without history_rounds: its size does not grow with the rounds played", async () => {
    const w = await world();
    const updateSizes: number[] = [];
    const ask = async (): Promise<void> => {
      w.events.length = 0;
      await w.rooms.execute(w.roomId, { type: 'post', caller: w.person, input: post('question') });
      await w.rooms.execute(w.roomId, { type: 'post', caller: w.a, input: post('a') });
      await w.rooms.execute(w.roomId, { type: 'post', caller: w.b, input: post('b') });
      const updates = w.events.filter((e) => e.event === 'room_update');
      expect(updates.length).toBeGreaterThan(0);
      for (const e of updates) {
        expect(e.data.room).not.toHaveProperty('history_rounds');
        expect(e.data.room).toMatchObject({ room_id: w.roomId, members: expect.any(Array) });
        updateSizes.push(JSON.stringify(e).length);
      }
    };
    await ask();
    const first = Math.max(...updateSizes);
    for (let i = 0; i < 30; i++) await ask();
    expect((await w.rooms.room(w.roomId)).history_rounds.length).toBeGreaterThanOrEqual(31);
    expect(Math.max(...updateSizes)).toBeLessThan(first + 200); // round ids of 30 rounds would be ~1,200 bytes more
  });

  it('times a silent agent out from the injected timers, with one record, and only once', async () => {
    const w = await world();
    await w.rooms.execute(w.roomId, { type: 'post', caller: w.person, input: post('question') });
    const runtime = await w.rooms.require(w.roomId);
    expect(runtime.room.current_round?.turn?.agent).toBe('Alpha');
    w.clock.advance(TURN_MS - 1);
    expect(runtime.room.current_round?.turn?.agent).toBe('Alpha');
    w.clock.advance(1);
    await expect.poll(() => runtime.room.current_round?.turn?.agent).toBe('Beta');
    const records = (await w.store.readMessages(w.roomId, { afterSeq: 0, limit: 10 })).filter((m) => m.skip_reason === 'timeout');
    expect(records.map((m) => m.sender)).toEqual(['Alpha']);
    const turns = w.events.filter((e) => e.event === 'agent_turn');
    expect(turns.at(-1)!.data).toMatchObject({ agent_name: 'Beta', agent_queue: ['Alpha', 'Beta'], current_agent_index: 1, pending_mentions: [] });
  });

  it('turns presence changes into member status, stored with the room', async () => {
    const w = await world();
    w.clock.advance(90_001); // nobody called: everyone goes offline
    const runtime = await w.rooms.require(w.roomId);
    await expect.poll(() => runtime.room.members.map((m) => m.status)).toEqual(['offline', 'offline', 'offline']);
    const stored = await w.store.loadRoom(w.roomId);
    expect(stored!.room.members.map((m) => m.status)).toEqual(['offline', 'offline', 'offline']);
    const changes = w.events.filter((e) => e.event === 'member_status_change');
    expect(changes).toHaveLength(3);
    expect(changes[0]!.data).toMatchObject({ member: { status: 'offline', activity: null, note: null } });
  });

  it('set_activity shows an agent busy until its turn ends', async () => {
    const w = await world();
    await w.rooms.execute(w.roomId, { type: 'post', caller: w.person, input: post('question') });
    const answer = await w.rooms.execute(w.roomId, { type: 'set_activity', caller: w.a, activity: 'thinking', note: 'reading the thread' });
    // The answer's member carries the note as the broadcast does (SPEC §7: `activity` and `note`).
    expect(answer).toMatchObject({ member: { name: 'Alpha', status: 'busy', activity: 'thinking', note: 'reading the thread' } });
    const runtime = await w.rooms.require(w.roomId);
    expect(runtime.room.members.find((m) => m.name === 'Alpha')).toMatchObject({ status: 'busy', activity: 'thinking', activity_note: 'reading the thread' });
    await w.rooms.execute(w.roomId, { type: 'skip', caller: w.a, reason: 'model returned 500' });
    expect(runtime.room.members.find((m) => m.name === 'Alpha')).toMatchObject({ status: 'online', activity: null });
    const record = (await w.store.readMessages(w.roomId, { afterSeq: 0, limit: 10 })).find((m) => m.skip_reason === 'skip');
    expect(record?.text_content).toBe('（跳过：model returned 500）');
    const statuses = w.events.filter((e) => e.event === 'member_status_change').map((e) => (e.data as { member: { status: string } }).member.status);
    expect(statuses).toEqual(['busy', 'online']);
  });

  it('idle with a note says why the agent stopped: broadcast with the note, kept until the turn ends', async () => {
    const w = await world();
    await w.rooms.execute(w.roomId, { type: 'post', caller: w.person, input: post('@Alpha please') });
    await w.rooms.execute(w.roomId, { type: 'set_activity', caller: w.a, activity: 'thinking' });
    await w.rooms.execute(w.roomId, { type: 'set_activity', caller: w.a, activity: 'idle', note: 'model error: HTTP 500' });
    const members = () => w.events.filter((e) => e.event === 'member_status_change').map((e) => (e.data as { member: object }).member);
    expect(members().at(-1)).toMatchObject({ name: 'Alpha', status: 'online', activity: null, note: 'model error: HTTP 500' });
    // The mention cannot be skipped: the timeout passes the turn, and the note goes with it.
    w.clock.advance(TURN_MS);
    await expect.poll(() => members().at(-1)).toMatchObject({ name: 'Alpha', status: 'online', activity: null, note: null });
  });

  it('set_activity ends with the turn also when the next turn, in a new round, is the same agent\'s', async () => {
    const w = await world();
    await w.rooms.execute(w.roomId, { type: 'leave', caller: w.b });
    await w.rooms.execute(w.roomId, { type: 'post', caller: w.person, input: post('q1') });
    await w.rooms.execute(w.roomId, { type: 'set_activity', caller: w.a, activity: 'thinking', note: 'hmm' });
    // A second question while Alpha holds the turn: Alpha's skip ends the round, and the next
    // round (for q2) starts with Alpha again, in the same step.
    await w.rooms.execute(w.roomId, { type: 'post', caller: w.person, input: post('q2') });
    w.events.length = 0;
    await w.rooms.execute(w.roomId, { type: 'skip', caller: w.a });
    const runtime = await w.rooms.require(w.roomId);
    expect(runtime.room.current_round).toMatchObject({ completed: false, turn: { agent: 'Alpha' } });
    expect(runtime.room.members.find((m) => m.name === 'Alpha')).toMatchObject({ status: 'online', activity: null });
    const statuses = w.events.filter((e) => e.event === 'member_status_change').map((e) => (e.data as { member: { name: string; status: string } }).member);
    expect(statuses).toMatchObject([{ name: 'Alpha', status: 'online' }]);
    // A turn that goes on keeps the activity: an extension is no new turn.
    await w.rooms.execute(w.roomId, { type: 'set_activity', caller: w.a, activity: 'working' });
    await w.rooms.execute(w.roomId, { type: 'extend', caller: w.a });
    expect(runtime.room.members.find((m) => m.name === 'Alpha')).toMatchObject({ status: 'busy', activity: 'working' });
  });

  it('sends the queue as a room_update when a post changes it during a turn (no agent_turn carries it)', async () => {
    const w = await world();
    await w.rooms.execute(w.roomId, { type: 'post', caller: w.person, input: post('question') });
    const holder = (await w.rooms.require(w.roomId)).room.current_round;
    expect(holder).toMatchObject({ agent_queue: ['Alpha', 'Beta'], pending_mentions: [] });
    w.events.length = 0;
    // A post that leaves the queue as it is sends no room_update.
    await w.rooms.execute(w.roomId, { type: 'post', caller: w.person, input: post('more detail') });
    expect(w.events.map((e) => e.event)).toEqual(['message_new']);
    w.events.length = 0;
    await w.rooms.execute(w.roomId, { type: 'post', caller: w.person, input: post('@Beta please check') });
    expect(w.events.map((e) => e.event)).toEqual(['message_new', 'room_update']);
    const sent = (w.events[1]!.data as { room: Room }).room.current_round;
    const now = (await w.rooms.require(w.roomId)).room.current_round;
    expect(sent).toMatchObject({ agent_queue: now!.agent_queue, current_agent_index: now!.current_agent_index, pending_mentions: ['Beta'] });
  });

  it('an agent joining during a round: one room_update, with the queue that now includes it', async () => {
    const w = await world();
    await w.rooms.execute(w.roomId, { type: 'post', caller: w.person, input: post('question') });
    w.events.length = 0;
    const g = caller('Gamma', 'ai_agent');
    w.presence.touch(g.id);
    await w.rooms.execute(w.roomId, { type: 'join', caller: g, member: member(g, w.clock), passwordHash: null });
    const updates = w.events.filter((e) => e.event === 'room_update');
    expect(updates).toHaveLength(1);
    expect((updates[0]!.data as { room: Room }).room.current_round?.agent_queue).toContain('Gamma');
  });

  it('refuses a 201st member with room_full', async () => {
    const w = await world();
    for (let i = 0; i < 197; i++) {
      const c = caller(`p${i}`, 'user');
      await w.rooms.execute(w.roomId, { type: 'join', caller: c, member: member(c, w.clock), passwordHash: null });
    }
    const late = caller('late', 'user');
    await expect(
      w.rooms.execute(w.roomId, { type: 'join', caller: late, member: member(late, w.clock), passwordHash: null }),
    ).rejects.toMatchObject({ code: 'room_full' });
    expect((await w.rooms.require(w.roomId)).room.members).toHaveLength(200);
  });

  it('a new room has the SPEC defaults, and its guard trips at max_auto_rounds 3 × 2 agents: the 6th answer', async () => {
    const w = await world();
    const runtime = await w.rooms.require(w.roomId);
    expect(runtime.room.settings).toEqual({ display_time_format: '24h', display_date_format: 'yyyy-MM-dd', max_auto_rounds: 3, turn_timeout_ms: null });
    await w.rooms.execute(w.roomId, { type: 'post', caller: w.person, input: post('question') });
    const agents = { Alpha: w.a, Beta: w.b };
    const guardNotices = async () => (await w.store.readMessages(w.roomId, { afterSeq: 0, limit: 100 })).filter((m) => m.role === 'system');
    for (let answer = 1; answer <= 6; answer++) {
      expect(await guardNotices()).toEqual([]);
      // Rounds follow each other (two agents answered, both online): Alpha, Beta, Alpha, …
      const holder = runtime.room.current_round?.turn?.agent;
      expect(holder).toBe(answer % 2 === 1 ? 'Alpha' : 'Beta');
      await w.rooms.execute(w.roomId, { type: 'post', caller: agents[holder as 'Alpha' | 'Beta'], input: post(`answer ${answer}`) });
    }
    expect((await guardNotices()).map((m) => m.text_content)).toEqual(['已达到自动轮次上限（3 轮），等待用户发言或手动开始新一轮。']);
    expect(runtime.room.current_round?.completed).toBe(true);
  });
});

describe('room runtime on a shared store: commits that lose to other nodes', () => {
  /** A MemoryStore whose next `stale` room commits fail as if another node had committed first. */
  class ContendedStore extends MemoryStore {
    stale = 0;
    attempts = 0;
    override async commitRoom(roomId: string, commit: RoomCommit): Promise<number> {
      this.attempts++;
      if (this.stale > 0) {
        this.stale--;
        throw new StaleRoomError(roomId);
      }
      return super.commitRoom(roomId, commit);
    }
  }

  async function contended() {
    const clock = new ManualClock();
    const store = new ContendedStore();
    const presence = new Presence(clock.now, clock);
    rooms = testRooms(store, new InProcessBus(), presence, clock);
    const person = caller('Ann', 'user');
    presence.touch(person.id);
    const room: Room = await rooms.create(person, { room_name: 'Contended' }, member(person, clock));
    return { clock, store, rooms, person, roomId: room.room_id };
  }

  /** Runs the clock in 50 ms steps until `p` settles (the retries wait on the injected timers). */
  async function settle<T>(clock: ManualClock, p: Promise<T>): Promise<PromiseSettledResult<T>> {
    let outcome: PromiseSettledResult<T> | undefined;
    void p.then(
      (value) => (outcome = { status: 'fulfilled', value }),
      (reason: unknown) => (outcome = { status: 'rejected', reason }),
    );
    while (!outcome) {
      await new Promise((r) => setImmediate(r));
      clock.advance(50);
    }
    return outcome;
  }

  it('recomputes and retries a batch that keeps losing, with growing random waits, until it commits', async () => {
    const w = await contended();
    w.store.stale = 60; // more than the 50 attempts that used to give up with internal_error
    const started = w.clock.now();
    const sent = await settle(w.clock, w.rooms.execute(w.roomId, { type: 'post', caller: w.person, input: post('persistent') }));
    expect(sent).toMatchObject({ status: 'fulfilled', value: { seq: 1, text_content: 'persistent' } });
    expect(w.store.attempts).toBe(61);
    expect(w.clock.now() - started).toBeLessThan(15_000);
  });

  it('fails the batch, with nothing kept, only after 15 s without once committing first', async () => {
    const w = await contended();
    w.store.stale = Number.POSITIVE_INFINITY;
    const started = w.clock.now();
    const sent = await settle(w.clock, w.rooms.execute(w.roomId, { type: 'post', caller: w.person, input: post('never') }));
    expect(sent).toMatchObject({ status: 'rejected', reason: expect.any(StaleRoomError) });
    expect(w.clock.now() - started).toBeGreaterThanOrEqual(15_000);
    expect(w.clock.now() - started).toBeLessThan(16_000);
    expect(await w.store.readMessages(w.roomId, { afterSeq: 0, limit: 10 })).toEqual([]);
  });
});

describe('room runtime on a shared store: two nodes, no notifications between them', () => {
  /**
   * The memory store as two nodes would share it: the committed version can be read
   * (`roomVersion`), and a room can be committed under its lock (`commitRoomLocked`, here one
   * synchronous step), whose commit can be made to fail once.
   */
  class SharedMemoryStore extends MemoryStore {
    versionReads = 0;
    failNextLocked = false;

    async roomVersion(roomId: string): Promise<number | undefined> {
      this.versionReads++;
      return (await this.loadRoom(roomId))?.version;
    }

    async commitRoomLocked(
      roomId: string,
      from: { version: number; lastSeq: number },
      build: (changes: RoomChangesSince, reads: CommitReads) => Promise<RoomCommit | null>,
    ): Promise<number | undefined> {
      const loaded = (await this.loadRoom(roomId))!;
      const changes = await readChanges(this, roomId, from, loaded);
      const lastPersonSeq = await this.lastPersonSeq(roomId);
      const commit = await build({ loaded, ...changes, lastPersonSeq }, {
        getMessage: (id) => this.getMessage(id),
        findByClientMsgId: (sender, key) => this.findByClientMsgId(roomId, sender, key),
      });
      if (!commit) return undefined;
      if (this.failNextLocked) {
        this.failNextLocked = false;
        throw Object.assign(new Error('injected'), { code: 'EIO' });
      }
      return this.commitRoom(roomId, { ...commit, expectedVersion: loaded.version });
    }
  }

  /** Nodes A and B on one store, each with its own bus; B holds a copy of the room. */
  async function twoNodes() {
    const clock = new ManualClock();
    const store = new SharedMemoryStore();
    const node = () => {
      const bus = new InProcessBus();
      const events: RoomEvent[] = [];
      bus.subscribe((e) => events.push(e));
      const presence = new Presence(clock.now, clock);
      return { rooms: testRooms(store, bus, presence, clock, { shared: true }), events, presence };
    };
    const a = node();
    const b = node();
    const person = caller('Ann', 'user');
    const alpha = caller('Alpha', 'ai_agent');
    for (const n of [a, b]) for (const c of [person, alpha]) n.presence.touch(c.id);
    const room: Room = await a.rooms.create(person, { room_name: 'Two nodes' }, member(person, clock));
    const onB = (await b.rooms.require(room.room_id))!;
    cleanups.push(() => a.rooms.stop(), () => b.rooms.stop());
    return { clock, store, a, b, onB, person, alpha, roomId: room.room_id };
  }
  const cleanups: (() => void)[] = [];
  afterEach(() => cleanups.splice(0).forEach((stop) => stop()));

  it('a command refused on a copy other nodes left behind is judged again on the stored room', async () => {
    const w = await twoNodes();
    // Alpha joins through A; B hears nothing of it.
    await w.a.rooms.execute(w.roomId, { type: 'join', caller: w.alpha, member: member(w.alpha, w.clock), passwordHash: null });
    expect(w.onB.room.members.map((m) => m.name)).toEqual(['Ann']);
    // On B's copy Alpha is no member: refused there, but the runtime checks the stored version
    // before it answers, takes the newer room, and runs the command again.
    const reads = w.store.versionReads;
    const activity = await w.onB.execute({ type: 'set_activity', caller: w.alpha, activity: 'thinking' });
    expect(activity).toMatchObject({ member: { name: 'Alpha', status: 'busy' } });
    expect(w.store.versionReads).toBe(reads + 1);
    expect(w.onB.room.members.map((m) => m.name)).toEqual(['Ann', 'Alpha']);
    // B published Alpha's join (taken from the store) before its own change.
    expect(w.b.events.map((e) => e.event).filter((e) => e !== 'room_update')).toEqual(['member_join', 'member_status_change']);
  });

  it('a refusal that stands on the stored room is answered, and the rest of its batch commits once', async () => {
    const w = await twoNodes();
    const stranger = caller('Zed', 'ai_agent');
    await w.a.rooms.execute(w.roomId, { type: 'post', caller: w.person, input: post('through A') });
    // Queued together on B, behind B's copy: a stranger's post (never a member) between two posts.
    const first = w.onB.execute({ type: 'post', caller: w.person, input: post('one') });
    const refused = w.onB.execute({ type: 'post', caller: stranger, input: post('let me in') });
    const second = w.onB.execute({ type: 'post', caller: w.person, input: post('two') });
    await expect(refused).rejects.toMatchObject({ code: 'not_a_member' });
    const sent = (await Promise.all([first, second])) as Message[];
    expect(sent.map((m) => m.seq)).toEqual([2, 3]);
    const stored = await w.store.readMessages(w.roomId, { afterSeq: 0, limit: 10 });
    expect(stored.map((m) => m.text_content)).toEqual(['through A', 'one', 'two']);
  });

  it('a locked commit that fails: its callers get the error, only what other nodes committed is published, a retry writes anew', async () => {
    const w = await twoNodes();
    await w.a.rooms.execute(w.roomId, { type: 'post', caller: w.person, input: post('through A') });
    // B's optimistic commit meets A's (stale), so B computes under the lock; that commit fails.
    w.store.failNextLocked = true;
    await expect(w.onB.execute({ type: 'post', caller: w.person, input: post('through B') })).rejects.toMatchObject({ code: 'EIO' });
    const texts = (events: RoomEvent[]) =>
      events.filter((e) => e.event === 'message_new').map((e) => (e.data as { message: Message }).message.text_content);
    expect(texts(w.b.events)).toEqual(['through A']);
    expect(w.onB.committedSeq).toBe(1);
    expect((await w.store.readMessages(w.roomId, { afterSeq: 0, limit: 10 })).map((m) => m.text_content)).toEqual(['through A']);
    // Still within the locked second: the retry commits under the lock.
    const retry = (await w.onB.execute({ type: 'post', caller: w.person, input: post('through B') })) as Message;
    expect(retry.seq).toBe(2);
    expect(texts(w.b.events)).toEqual(['through A', 'through B']);
  });
});
