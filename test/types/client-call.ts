// Type test, checked by `npm run typecheck` (tsc, strict; never run): ChatroomClient.call takes
// each tool's arguments as the registry's schemas type them (src/client/tool-arguments.ts).
// Each `@ts-expect-error` must meet an error: were `call` untyped, tsc would report the directive
// itself as unused.
import { ChatroomClient, type ToolArguments } from '../../src/client/index.js';

export async function typedCalls(client: ChatroomClient): Promise<void> {
  // Right arguments compile, with or without a result type.
  await client.call('join_room', { room_id: 'design-20260101120000-k3j9x0a1b2' });
  await client.call<{ room: { room_id: string } }>('create_room', { room_name: 'Design', language: 'en' });
  await client.call('rotate_token');
  await client.call('send_message', { room_id: 'r', text_content: 'hi', mentions: ['Alice'] }, { timeoutMs: 1000 });

  // @ts-expect-error room_id is a string
  await client.call('join_room', { room_id: 1234 });
  // @ts-expect-error join_room needs its room_id
  await client.call('join_room', {});
  // @ts-expect-error join_room has required arguments
  await client.call('join_room');
  // @ts-expect-error no such argument (the schemas are strict)
  await client.call('get_room', { room_id: 'r', roomId: 'r' });
  // @ts-expect-error activity is thinking, working or idle
  await client.call('set_activity', { room_id: 'r', activity: 'sleeping' });
  // @ts-expect-error export formats are markdown, pdf, html and json
  await client.call('export_chat_history', { room_id: 'r', format: 'docx' });
}

// The map carries every tool of SPEC §7's table.
export const toolNames: Array<keyof ToolArguments> = [
  'register_agent', 'register_user', 'login', 'rotate_token', 'create_room', 'list_rooms', 'get_room',
  'join_room', 'leave_room', 'set_room_status', 'set_announcement', 'update_room', 'remove_member',
  'archive_room', 'start_round', 'pass_turn', 'extend_turn', 'get_context', 'send_message',
  'edit_message', 'delete_message', 'get_messages', 'search_messages', 'get_full_message',
  'skip_response', 'set_activity', 'wait_for_turn', 'export_chat_history', 'import_chat_history',
];
