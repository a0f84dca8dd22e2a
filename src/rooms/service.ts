// Room rules: create, join, leave, settings, members, host, and the isolation checks every
// other service uses (`requireMember`).
import { AppError } from '../errors.js';
import type { EventBus, RoomEvent } from '../events/bus.js';
import { hashPassword, verifyPassword } from '../identity/secrets.js';
import { FailureDelay } from '../limits/rate-limits.js';
import { findRecord, saveRecord } from '../identity/records.js';
import type { Presence } from '../identity/presence.js';
import type { RoundsDriver } from '../rounds/driver.js';
import type { EngineAction } from '../rounds/types.js';
import type { Store } from '../storage/store.js';
import type { Caller, InteractionMode, Member, Room, RoomRecord, SystemStatus } from '../types.js';
import type { Committer } from './commit.js';
import { presentRoom, presentRoomSummary } from './present.js';
import { newRoomId } from './rules.js';

export interface CreateRoomInput {
  room_name: string;
  room_description?: string;
  password?: string;
  interaction_mode?: InteractionMode;
  user_participation?: boolean;
  timezone?: string;
  language?: string;
}

export interface UpdateRoomInput {
  room_description?: string;
  password?: string | null;
  interaction_mode?: InteractionMode;
  user_participation?: boolean;
  max_auto_rounds?: number;
  turn_timeout_ms?: number | null;
}

export interface RoomDefaults {
  language: string;
  timezone: string;
}

export class RoomService {
  private readonly passwordFailures = new FailureDelay();

  constructor(
    private readonly store: Store,
    private readonly committer: Committer,
    private readonly driver: RoundsDriver,
    private readonly presence: Presence,
    private readonly bus: EventBus,
    private readonly defaults: RoomDefaults,
    private readonly now: () => number,
  ) {}

  requireRoom(roomId: string): RoomRecord {
    const room = this.store.getRoom(roomId);
    if (!room) throw new AppError('room_not_found', `Room ${roomId} not found`);
    return room;
  }

  /** Isolation: only members read a room or act in it. */
  requireMember(roomId: string, caller: Caller): { room: RoomRecord; member: Member } {
    const room = this.requireRoom(roomId);
    const member = room.members.find((m) => m.participant_id === caller.id);
    if (!member) throw new AppError('not_a_member', 'You are not a member of this room');
    return { room, member };
  }

  isAdmin(room: RoomRecord, caller: Caller): boolean {
    return room.created_by_id === caller.id || room.members.some((m) => m.participant_id === caller.id && m.is_host);
  }

  requireAdmin(roomId: string, caller: Caller): { room: RoomRecord; member: Member } {
    const found = this.requireMember(roomId, caller);
    if (!this.isAdmin(found.room, caller)) throw new AppError('forbidden', 'Only the room creator or host may do this');
    return found;
  }

  requireWritable(room: RoomRecord): void {
    if (room.archived) throw new AppError('forbidden', 'This room is archived and read-only');
  }

  listRooms(includeArchived: boolean) {
    return this.store
      .listRooms()
      .filter((r) => includeArchived || !r.archived)
      .map(presentRoomSummary);
  }

  getRoom(roomId: string, caller: Caller): Room {
    return presentRoom(this.requireMember(roomId, caller).room);
  }

  async createRoom(caller: Caller, input: CreateRoomInput): Promise<Room> {
    const now = new Date(this.now());
    const room: RoomRecord = {
      room_id: newRoomId(input.room_name, now),
      room_name: input.room_name,
      room_description: input.room_description ?? '',
      created_at: now.toISOString(),
      created_by: caller.name,
      created_by_id: caller.id,
      password_hash: input.password ? await hashPassword(input.password) : null,
      interaction_mode: input.interaction_mode ?? 'default',
      user_participation: input.user_participation ?? true,
      system_status: 'active',
      language: input.language ?? this.defaults.language,
      timezone: input.timezone ?? this.defaults.timezone,
      members: [],
      announcement: { user_announcement: '', announcement_publisher: '', timestamp: null, system_announcement: '' },
      current_round: null,
      history_rounds: [],
      settings: { display_time_format: '24h', display_date_format: 'yyyy-MM-dd', max_auto_rounds: 10, turn_timeout_ms: null },
      archived: false,
      processed_through_seq: 0,
    };
    room.members.push(this.newMember(room, caller, now));
    await Promise.all([this.store.putRoom(room), this.addToParticipant(caller, room.room_id)]);
    this.bus.publishAccess({ type: 'joined', room_id: room.room_id, participant_id: caller.id });
    return presentRoom(room);
  }

  async joinRoom(caller: Caller, roomId: string, password: string | undefined): Promise<Room> {
    const room = this.requireRoom(roomId);
    if (room.members.some((m) => m.participant_id === caller.id)) return presentRoom(room);
    this.requireWritable(room);
    if (room.password_hash) {
      if (!password) throw new AppError('wrong_password', 'This room needs a password');
      const key = `${caller.id}\u0000${room.room_id}`;
      await this.passwordFailures.beforeAttempt(key);
      if (!(await verifyPassword(password, room.password_hash))) {
        this.passwordFailures.failed(key);
        throw new AppError('wrong_password', 'Wrong room password');
      }
      this.passwordFailures.succeeded(key);
      // The slow hash yielded: someone may have joined us meanwhile.
      if (room.members.some((m) => m.participant_id === caller.id)) return presentRoom(room);
    }
    const member = this.newMember(room, caller, new Date(this.now()));
    room.members.push(member);
    // Subscribe the newcomer's sockets first, so they receive their own member_join too.
    this.bus.publishAccess({ type: 'joined', room_id: room.room_id, participant_id: caller.id });
    await Promise.all([
      this.runEngine(room, { type: 'member_joined', name: member.name, role: member.role }, [
        { event: 'member_join', room_id: room.room_id, data: { member: structuredClone(member) } },
      ]),
      this.addToParticipant(caller, room.room_id),
    ]);
    return presentRoom(room);
  }

  async leaveRoom(caller: Caller, roomId: string): Promise<Room> {
    const { room, member } = this.requireMember(roomId, caller);
    await this.removeFromRoom(room, member);
    return presentRoom(room);
  }

  async removeMember(caller: Caller, roomId: string, name: string): Promise<Room> {
    const { room } = this.requireAdmin(roomId, caller);
    const target = room.members.find((m) => m.name.toLowerCase() === name.toLowerCase());
    if (!target) throw new AppError('not_found', `${name} is not a member of this room`);
    await this.removeFromRoom(room, target);
    return presentRoom(room);
  }

  async setStatus(caller: Caller, roomId: string, status: SystemStatus): Promise<Room> {
    const { room } = this.requireAdmin(roomId, caller);
    this.requireWritable(room);
    if (room.system_status !== status) {
      room.system_status = status;
      await this.runEngine(room, { type: 'status_changed' });
    }
    return presentRoom(room);
  }

  async setAnnouncement(caller: Caller, roomId: string, text: string): Promise<Room> {
    const { room } = this.requireAdmin(roomId, caller);
    this.requireWritable(room);
    room.announcement = {
      ...room.announcement,
      user_announcement: text,
      announcement_publisher: caller.name,
      timestamp: new Date(this.now()).toISOString(),
    };
    await this.commitWithUpdate(room);
    return presentRoom(room);
  }

  async updateRoom(caller: Caller, roomId: string, input: UpdateRoomInput): Promise<Room> {
    const { room } = this.requireAdmin(roomId, caller);
    this.requireWritable(room);
    if (input.room_description !== undefined) room.room_description = input.room_description;
    if (input.password !== undefined) room.password_hash = input.password ? await hashPassword(input.password) : null;
    if (input.user_participation !== undefined) room.user_participation = input.user_participation;
    if (input.max_auto_rounds !== undefined) room.settings.max_auto_rounds = input.max_auto_rounds;
    if (input.turn_timeout_ms !== undefined) room.settings.turn_timeout_ms = input.turn_timeout_ms;
    if (input.interaction_mode !== undefined && input.interaction_mode !== room.interaction_mode) {
      room.interaction_mode = input.interaction_mode;
      await this.runEngine(room, { type: 'mode_changed' });
    } else {
      await this.commitWithUpdate(room);
    }
    return presentRoom(room);
  }

  /** Archiving pauses the room (no more turns) and makes it read-only; it stays exportable. */
  async archiveRoom(caller: Caller, roomId: string): Promise<Room> {
    const { room } = this.requireMember(roomId, caller);
    if (room.created_by_id !== caller.id) throw new AppError('forbidden', 'Only the room creator may archive it');
    if (room.archived) return presentRoom(room);
    room.archived = true;
    room.system_status = 'paused';
    await this.runEngine(room, { type: 'status_changed' });
    return presentRoom(room);
  }

  /** Mirrors a presence change into every room of the participant. */
  presenceChanged(participantId: string, online: boolean, lastActive: number): void {
    for (const room of this.store.listRooms()) {
      const member = room.members.find((m) => m.participant_id === participantId);
      if (!member) continue;
      member.status = online ? 'online' : 'offline';
      member.last_active = new Date(lastActive).toISOString();
      const event: RoomEvent = {
        event: 'member_status_change',
        room_id: room.room_id,
        data: { member: { name: member.name, status: member.status, last_active: member.last_active } },
      };
      if (online && member.role === 'ai_agent' && !room.archived) {
        const outcome = this.driver.apply(room, { type: 'came_online', name: member.name }, { leadEvents: [event], roomChanged: true });
        if (outcome.ok) continue;
      }
      this.store.touchRoom(room);
      this.committer.publish(room.room_id, [event]);
    }
  }

  private async removeFromRoom(room: RoomRecord, member: Member): Promise<void> {
    const wasHost = member.is_host;
    room.members = room.members.filter((m) => m !== member);
    member.is_host = false;
    if (wasHost && room.members.length > 0) {
      // The longest-standing member (earliest join) becomes host; members are kept in join order.
      room.members[0]!.is_host = true;
    }
    const participant = { id: member.participant_id, kind: member.role === 'ai_agent' ? 'agent' : 'user' } as const;
    // Sockets stop receiving the room at once, before anything else of the room is published.
    this.bus.publishAccess({ type: 'left', room_id: room.room_id, participant_id: member.participant_id });
    await Promise.all([
      this.runEngine(room, { type: 'member_left', name: member.name, role: member.role }, [
        { event: 'member_leave', room_id: room.room_id, data: { member: structuredClone(member) } },
      ]),
      this.removeFromParticipant(participant, room.room_id),
    ]);
  }

  /** Applies an engine action and commits it with a room_update; engine refusals are errors. */
  private async runEngine(room: RoomRecord, action: EngineAction, leadEvents: RoomEvent[] = []): Promise<void> {
    const outcome = this.driver.apply(room, action, {
      leadEvents: [...leadEvents, { event: 'room_update', room_id: room.room_id, data: { room: presentRoom(room) } }],
      roomChanged: true,
    });
    if (!outcome.ok) throw new AppError(outcome.code, outcome.message, outcome.details);
    await outcome.done;
  }

  private commitWithUpdate(room: RoomRecord): Promise<void> {
    return this.committer.commit(room.room_id, {
      room,
      events: [{ event: 'room_update', room_id: room.room_id, data: { room: presentRoom(room) } }],
    });
  }

  private newMember(room: RoomRecord, caller: Caller, now: Date): Member {
    const agent = caller.kind === 'agent' ? this.store.getAgent(caller.id) : undefined;
    const user = caller.kind === 'user' ? this.store.getUser(caller.id) : undefined;
    const online = this.presence.isOnline(caller.id);
    return {
      name: caller.name,
      role: caller.role,
      introduce: agent?.introduce ?? '',
      status: online ? 'online' : 'offline',
      last_active: new Date(this.presence.lastActive(caller.id) ?? now.getTime()).toISOString(),
      is_host: room.members.length === 0,
      skip_list: agent?.skip_list ?? [],
      language_preference: agent?.preferred_language ?? user?.language ?? room.language,
      timezone_preference: agent?.timezone ?? user?.timezone ?? room.timezone,
      participant_id: caller.id,
      joined_at: now.toISOString(),
    };
  }

  private async addToParticipant(caller: Pick<Caller, 'id' | 'kind'>, roomId: string): Promise<void> {
    const found = findRecord(this.store, caller);
    if (!found || found.record.rooms.includes(roomId)) return;
    found.record.rooms.push(roomId);
    await saveRecord(this.store, found);
  }

  private async removeFromParticipant(caller: Pick<Caller, 'id' | 'kind'>, roomId: string): Promise<void> {
    const found = findRecord(this.store, caller);
    if (!found || !found.record.rooms.includes(roomId)) return;
    found.record.rooms = found.record.rooms.filter((r) => r !== roomId);
    await saveRecord(this.store, found);
  }
}
