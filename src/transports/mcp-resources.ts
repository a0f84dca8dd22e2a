// Rooms as MCP resources (SPEC §7.1): each room the caller belongs to is two resources, its state
// and its recent messages, as JSON. Reads go through the same membership check as get_room and
// get_messages, so a non-member learns nothing. Which events change which resource is decided
// here too (both eras notify from it).
import type { App } from '../app.js';
import { AppError } from '../errors.js';
import { yourTurn, type RoomEvent } from '../protocol/events.js';
import type { Caller } from '../types.js';

export const ROOM_URI_PREFIX = 'chatroom://rooms/';
/** How many of the newest messages the messages resource holds (as get_context's default). */
export const RECENT_MESSAGES = 50;

const JSON_TYPE = 'application/json';

export const ROOM_RESOURCE_TEMPLATES = [
  {
    uriTemplate: `${ROOM_URI_PREFIX}{room_id}`,
    name: 'room',
    title: 'Room state',
    description: 'A room you are a member of: status, announcement, members, current round and your turn (JSON).',
    mimeType: JSON_TYPE,
  },
  {
    uriTemplate: `${ROOM_URI_PREFIX}{room_id}/messages`,
    name: 'room-messages',
    title: 'Recent messages',
    description: `The ${RECENT_MESSAGES} newest messages of a room you are a member of, in seq order (JSON).`,
    mimeType: JSON_TYPE,
  },
];

export function roomStateUri(roomId: string): string {
  return `${ROOM_URI_PREFIX}${roomId}`;
}

export function roomMessagesUri(roomId: string): string {
  return `${ROOM_URI_PREFIX}${roomId}/messages`;
}

/** The room a resource URI names, and which of its resources; null for a URI that is not ours. */
export function parseRoomUri(uri: string): { roomId: string; kind: 'state' | 'messages' } | null {
  if (!uri.startsWith(ROOM_URI_PREFIX)) return null;
  const rest = uri.slice(ROOM_URI_PREFIX.length);
  const match = /^([A-Za-z0-9_-]{1,64})(\/messages)?$/.exec(rest);
  if (!match) return null;
  return { roomId: match[1]!, kind: match[2] ? 'messages' : 'state' };
}

/** The resources of the rooms the caller belongs to. */
export async function listRoomResources(app: App, caller: Caller) {
  const roomIds = await app.store.roomsOf(caller.id);
  const resources = [];
  for (const roomId of roomIds) {
    const room = await app.rooms.currentRoom(roomId).catch(() => undefined);
    if (!room || !room.members.some((m) => m.participant_id === caller.id)) continue;
    resources.push(
      { uri: roomStateUri(roomId), name: room.room_name, title: room.room_name, description: 'Room state (JSON)', mimeType: JSON_TYPE },
      {
        uri: roomMessagesUri(roomId),
        name: `${room.room_name} messages`,
        title: `${room.room_name}: recent messages`,
        description: `The ${RECENT_MESSAGES} newest messages (JSON)`,
        mimeType: JSON_TYPE,
      },
    );
  }
  return resources;
}

/** One resource's contents; `room_not_found` / `not_a_member` as get_room answers them. */
export async function readRoomResource(app: App, caller: Caller, uri: string) {
  const parsed = parseRoomUri(uri);
  if (!parsed) throw new AppError('not_found', `No resource "${uri.slice(0, 200)}": rooms are ${ROOM_URI_PREFIX}{room_id} and ${ROOM_URI_PREFIX}{room_id}/messages`);
  if (parsed.kind === 'state') {
    const record = await app.reads.memberRoom(parsed.roomId, caller);
    const room = await app.reads.getRoom(parsed.roomId, caller);
    return { uri, mimeType: JSON_TYPE, text: JSON.stringify({ room, your_turn: yourTurn(record, caller.name) }) };
  }
  const messages = await app.reads.page(caller, parsed.roomId, { before_seq: Number.MAX_SAFE_INTEGER, limit: RECENT_MESSAGES });
  return { uri, mimeType: JSON_TYPE, text: JSON.stringify({ room_id: parsed.roomId, messages }) };
}

/** The resources an event changes: messages on a message, the state on everything else that shows in it. */
export function changedUris(event: RoomEvent): string[] {
  switch (event.event) {
    case 'message_new':
    case 'message_update':
      // A new message also moves the round (turns), so the state changes with it.
      return [roomMessagesUri(event.room_id), roomStateUri(event.room_id)];
    case 'agent_turn':
    case 'room_update':
    case 'round_start':
    case 'round_end':
    case 'member_join':
    case 'member_leave':
      return [roomStateUri(event.room_id)];
    case 'member_status_change':
      return [];
  }
}
