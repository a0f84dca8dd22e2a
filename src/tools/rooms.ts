// Room tools: create, list, get, join, leave, status, announcement, settings, members, archive.
import { z } from 'zod';
import type { App } from '../app.js';
import { roomStats } from '../rounds/stats.js';
import { defineTool } from './registry.js';
import { language, password, roomDescription, roomId, roomName, timezone } from './schemas.js';

const mode = z.enum(['default', 'host']);

export function roomTools(app: App) {
  const { rooms } = app;
  return [
    defineTool({
      name: 'create_room',
      description: 'Create a room; the creator joins it and, being first, is its host.',
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
      handler: async (args, ctx) => ({ room: await rooms.createRoom(ctx.caller, args) }),
    }),
    defineTool({
      name: 'list_rooms',
      description: 'List rooms (public fields only: name, description, mode, member count, has_password).',
      input: z.object({ include_archived: z.boolean().optional() }).strict(),
      handler: (args) => ({ rooms: rooms.listRooms(args.include_archived ?? false) }),
    }),
    defineTool({
      name: 'get_room',
      description: 'Get a room you are a member of, with members and the current round.',
      input: z.object({ room_id: roomId }).strict(),
      handler: (args, ctx) => ({ room: rooms.getRoom(args.room_id, ctx.caller) }),
    }),
    defineTool({
      name: 'join_room',
      description: 'Join a room (password needed once for protected rooms).',
      input: z.object({ room_id: roomId, password: password.optional() }).strict(),
      handler: async (args, ctx) => ({ room: await rooms.joinRoom(ctx.caller, args.room_id, args.password) }),
    }),
    defineTool({
      name: 'leave_room',
      description: 'Leave a room.',
      input: z.object({ room_id: roomId }).strict(),
      handler: async (args, ctx) => ({ room: await rooms.leaveRoom(ctx.caller, args.room_id) }),
    }),
    defineTool({
      name: 'set_room_status',
      description: 'Pause or resume a room (room admins: creator and host). Paused rooms issue no turns.',
      input: z.object({ room_id: roomId, system_status: z.enum(['active', 'paused']) }).strict(),
      handler: async (args, ctx) => ({ room: await rooms.setStatus(ctx.caller, args.room_id, args.system_status) }),
    }),
    defineTool({
      name: 'set_announcement',
      description: "Set the room's announcement (room admins).",
      input: z.object({ room_id: roomId, user_announcement: z.string().max(2000) }).strict(),
      handler: async (args, ctx) => ({ room: await rooms.setAnnouncement(ctx.caller, args.room_id, args.user_announcement) }),
    }),
    defineTool({
      name: 'update_room',
      description: 'Change room settings (room admins): description, password (null clears), mode, user participation, max_auto_rounds, turn_timeout_ms.',
      input: z
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
      handler: async ({ room_id, ...changes }, ctx) => ({ room: await rooms.updateRoom(ctx.caller, room_id, changes) }),
    }),
    defineTool({
      name: 'remove_member',
      description: 'Remove a member from the room (room admins). If it held the turn, the turn moves on.',
      input: z.object({ room_id: roomId, name: z.string().min(1).max(64) }).strict(),
      handler: async (args, ctx) => ({ room: await rooms.removeMember(ctx.caller, args.room_id, args.name) }),
    }),
    defineTool({
      name: 'get_room_stats',
      description: 'Per-agent turn statistics of a room (members only): turns answered, skipped, timed out, passed, offline, and the median answer time.',
      input: z.object({ room_id: roomId }).strict(),
      handler: (args, ctx) => {
        const { room } = rooms.requireMember(args.room_id, ctx.caller);
        return { stats: roomStats(room, app.store.roomMessages(room.room_id)) };
      },
    }),
    defineTool({
      name: 'archive_room',
      description: 'Archive the room (creator only): read-only, hidden from list_rooms unless asked, still exportable.',
      input: z.object({ room_id: roomId }).strict(),
      handler: async (args, ctx) => ({ room: await rooms.archiveRoom(ctx.caller, args.room_id) }),
    }),
  ];
}
