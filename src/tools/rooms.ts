// Room tools: create, list, get, join, leave, status, announcement, settings, members, archive.
import { z } from 'zod';
import { describer } from '../i18n/tool-text.js';
import { AppError } from '../errors.js';
import { hashPassword, verifyPassword } from '../identity/secrets.js';
import { FailureDelay } from '../limits/rate-limits.js';
import type { Command } from '../runtime/commands.js';
import type { Caller, Member } from '../types.js';
import { defineTool } from './registry.js';
import type { ToolServices } from './services.js';
import { language, password, roomDescription, roomId, roomName, timezone } from '../protocol/schemas.js';

const mode = z.enum(['default', 'host']);

export function roomTools(app: ToolServices) {
  const say = describer(app.config.defaultLanguage);
  const { rooms, reads, limits } = app;
  const passwordFailures = new FailureDelay();

  /** A new member as it joins: profile from the participant record, status from presence. */
  async function newMember(caller: Caller): Promise<Member> {
    const found = await app.participants.get(caller);
    const agent = found?.kind === 'agent' ? found.record : undefined;
    const user = found?.kind === 'user' ? found.record : undefined;
    const now = app.now();
    return {
      name: caller.name,
      role: caller.role,
      introduce: agent?.introduce ?? '',
      status: app.presence.isOnline(caller.id) ? 'online' : 'offline',
      last_active: new Date(app.presence.lastActive(caller.id) ?? now).toISOString(),
      is_host: false,
      skip_list: agent?.skip_list ?? [],
      capabilities: agent?.capabilities ?? [],
      language_preference: agent?.preferred_language ?? user?.language ?? app.config.defaultLanguage,
      timezone_preference: agent?.timezone ?? user?.timezone ?? app.config.displayTimezone,
      participant_id: caller.id,
      joined_at: new Date(now).toISOString(),
    };
  }

  /** The slow password check runs outside the room's queue; the join re-checks the hash it used. */
  async function checkRoomPassword(caller: Caller, roomId: string, password: string | undefined): Promise<string | null> {
    const room = await rooms.room(roomId);
    if (room.password_hash === null || room.members.some((m) => m.participant_id === caller.id)) return room.password_hash;
    if (!password) throw new AppError('wrong_password', 'This room needs a password');
    const key = `${caller.id}\u0000${roomId}`;
    await passwordFailures.beforeAttempt(key);
    if (!(await verifyPassword(password, room.password_hash))) {
      passwordFailures.failed(key);
      throw new AppError('wrong_password', 'Wrong room password');
    }
    passwordFailures.succeeded(key);
    return room.password_hash;
  }

  /**
   * A tool that runs one command on a room and answers with the room. Slow work (a password
   * hash) happens while the command is built, outside the room's queue.
   */
  function roomCommand<S extends z.ZodType<{ room_id: string }>>(
    name: string,
    description: string,
    input: S,
    command: (args: z.infer<S>, caller: Caller) => Command | Promise<Command>,
  ) {
    return defineTool({
      name,
      description,
      input,
      handler: async (args, ctx) => ({ room: await rooms.execute(args.room_id, await command(args, ctx.caller)) }),
    });
  }

  return [
    defineTool({
      name: 'create_room',
      description: say({ 'zh-CN': '创建房间；创建者自动加入，作为第一个成员成为主持人。', en: 'Create a room; the creator joins it and, being first, is its host.' }),
      input: z
        .object({
          room_name: roomName,
          room_description: roomDescription.optional(),
          password: password.optional(),
          interaction_mode: mode.optional(),
          user_participation: z.boolean().optional(),
          timezone: timezone.optional(),
          language: language.optional(),
        })
        .strict(),
      handler: async ({ password, ...args }, ctx) => {
        if (password) await limits.consumePasswordSet(ctx.caller.id);
        const password_hash = password ? await hashPassword(password) : null;
        return { room: await rooms.create(ctx.caller, { ...args, password_hash }, await newMember(ctx.caller)) };
      },
    }),
    defineTool({
      name: 'list_rooms',
      description: say({
        'zh-CN': '列出房间（仅公开字段：名称、描述、模式、成员数、has_password）。',
        en: 'List rooms (public fields only: name, description, mode, member count, has_password).',
      }),
      input: z.object({ include_archived: z.boolean().optional() }).strict(),
      handler: async (args) => ({ rooms: await app.store.listRoomSummaries(args.include_archived ?? false) }),
    }),
    defineTool({
      name: 'get_room',
      description: say({ 'zh-CN': '获取你所在的房间，包括成员和当前轮次。', en: 'Get a room you are a member of, with members and the current round.' }),
      input: z.object({ room_id: roomId }).strict(),
      handler: async (args, ctx) => ({ room: await reads.getRoom(args.room_id, ctx.caller) }),
    }),
    roomCommand(
      'join_room',
      say({ 'zh-CN': '加入房间（有密码的房间只在第一次加入时需要密码）。', en: 'Join a room (password needed once for protected rooms).' }),
      z.object({ room_id: roomId, password: password.optional() }).strict(),
      async (args, caller) => {
        const passwordHash = await checkRoomPassword(caller, args.room_id, args.password);
        return { type: 'join', caller, member: await newMember(caller), passwordHash };
      },
    ),
    // SPEC §7 lists `password?` for join_room and leave_room alike: accepted here, never needed.
    roomCommand('leave_room', say({ 'zh-CN': '离开房间。', en: 'Leave a room.' }), z.object({ room_id: roomId, password: password.optional() }).strict(), (_args, caller) => ({ type: 'leave', caller })),
    roomCommand(
      'set_room_status',
      say({
        'zh-CN': '暂停或恢复房间（房间管理员和每位用户成员）。暂停的房间不分配发言轮次。',
        en: 'Pause or resume a room (room admins and every person member). Paused rooms issue no turns.',
      }),
      z.object({ room_id: roomId, system_status: z.enum(['active', 'paused']) }).strict(),
      (args, caller) => ({ type: 'set_status', caller, status: args.system_status }),
    ),
    roomCommand(
      'set_announcement',
      say({ 'zh-CN': '设置房间公告（房间管理员）。', en: "Set the room's announcement (room admins)." }),
      z.object({ room_id: roomId, user_announcement: z.string().max(2000) }).strict(),
      (args, caller) => ({ type: 'announce', caller, text: args.user_announcement }),
    ),
    roomCommand(
      'update_room',
      say({
        'zh-CN': '修改房间设置（房间管理员）：描述、密码（null 表示清除）、模式、用户参与、max_auto_rounds、turn_timeout_ms。',
        en: 'Change room settings (room admins): description, password (null clears), mode, user participation, max_auto_rounds, turn_timeout_ms.',
      }),
      z
        .object({
          room_id: roomId,
          room_description: roomDescription.optional(),
          password: password.nullable().optional(),
          interaction_mode: mode.optional(),
          user_participation: z.boolean().optional(),
          max_auto_rounds: z.number().int().min(1).max(1000).optional(),
          turn_timeout_ms: z.number().int().min(1000).max(86_400_000).nullable().optional(),
        })
        .strict(),
      async ({ room_id, password, ...changes }, caller) => {
        // Permission first (a non-admin learns nothing from a slow hash), then hash outside the queue.
        const room = await reads.memberRoom(room_id, caller);
        if (room.created_by_id !== caller.id && !room.members.some((m) => m.participant_id === caller.id && m.is_host)) {
          throw new AppError('forbidden', 'Only the room creator or host may do this');
        }
        if (password) await limits.consumePasswordSet(caller.id);
        const password_hash = password === undefined ? undefined : password ? await hashPassword(password) : null;
        const change = { ...changes, ...(password_hash !== undefined ? { password_hash } : {}) };
        return { type: 'update_settings', caller, change };
      },
    ),
    roomCommand(
      'remove_member',
      say({
        'zh-CN': '把成员移出房间（房间管理员）。如果它正持有发言轮次，轮次交给下一位。',
        en: 'Remove a member from the room (room admins). If it held the turn, the turn moves on.',
      }),
      z.object({ room_id: roomId, name: z.string().min(1).max(64) }).strict(),
      (args, caller) => ({ type: 'remove', caller, name: args.name }),
    ),
    defineTool({
      name: 'get_room_stats',
      description: say({
        'zh-CN': '房间内每个智能体的轮次统计（仅成员）：回答、跳过、超时、被管理员跳过、离线的轮次数，以及回答用时的中位数。',
        en: 'Per-agent turn statistics of a room (members only): turns answered, skipped, timed out, passed, offline, and the median answer time.',
      }),
      input: z.object({ room_id: roomId }).strict(),
      handler: async (args, ctx) => ({ stats: await reads.stats(ctx.caller, args.room_id) }),
    }),
    roomCommand(
      'archive_room',
      say({
        'zh-CN': '归档房间（仅创建者）：变为只读，除非特别要求否则不在 list_rooms 中显示，仍可导出。',
        en: 'Archive the room (creator only): read-only, hidden from list_rooms unless asked, still exportable.',
      }),
      z.object({ room_id: roomId }).strict(),
      (_args, caller) => ({ type: 'archive', caller }),
    ),
  ];
}
