// Audit lines (SPEC §10): admin actions are written to the log with `audit: true`, the caller,
// the room, the action and the change; never a secret (no password, no token). One table says
// which tools are audited and what of their arguments and answer the line keeps.
import type { Logger } from '../logger.js';
import type { Caller } from '../types.js';

export interface AuditLine {
  audit: true;
  action: string;
  caller: { id: string; name: string; role: string } | null;
  room_id: string | null;
  change: Record<string, unknown>;
  address?: string | null;
  request_id?: string | undefined;
}

type Args = Record<string, unknown>;
type Answer = Record<string, unknown> | undefined;
type Describe = (args: Args, answer: Answer) => { room_id?: string | null; change: Record<string, unknown> } | null;

/** A text kept in the line, cut short: an audit line says what changed, it is not an archive. */
const clip = (value: unknown): unknown => (typeof value === 'string' && value.length > 200 ? `${value.slice(0, 200)}…` : value);

const roomId = (args: Args): string | null => (typeof args.room_id === 'string' ? args.room_id : null);

/** The audited tools and what their line keeps. `null`: this call is not audited (login by token). */
const AUDITED: Record<string, Describe> = {
  remove_member: (args) => ({ change: { removed: args.name } }),
  update_room: (args) => {
    const { room_id: _room, password, ...rest } = args;
    // Whether the password changed, never what it is.
    const change: Record<string, unknown> = { ...rest };
    if (password !== undefined) change.password = password === null ? 'cleared' : 'set';
    return { change };
  },
  pass_turn: () => ({ change: { turn: 'passed' } }),
  set_room_status: (args) => ({ change: { system_status: args.system_status } }),
  archive_room: () => ({ change: { archived: true } }),
  set_announcement: (args) => ({ change: { user_announcement: clip(args.user_announcement) } }),
  import_chat_history: (args, answer) => {
    const room = answer?.room as { room_id?: string; room_name?: string } | undefined;
    return { room_id: room?.room_id ?? null, change: { room_name: room?.room_name ?? args.room_name, imported_messages: answer?.imported_messages } };
  },
  rotate_token: () => ({ change: { token: 'rotated' } }),
  // Only a person's login by name and password (a login by token changes nothing).
  login: (args) => (typeof args.password === 'string' ? { room_id: null, change: { method: 'password', name: args.name } } : null),
};

export function isAudited(tool: string): boolean {
  return Object.hasOwn(AUDITED, tool);
}

/** The audit line of a successful call, or null when the call is not an audited action. */
export function auditLine(tool: string, args: unknown, answer: unknown, caller: Caller | null | undefined): AuditLine | null {
  if (!isAudited(tool)) return null;
  const a = (args ?? {}) as Args;
  const result = (answer ?? undefined) as Answer;
  const described = AUDITED[tool]!(a, result);
  if (!described) return null;
  // login has no caller yet: the participant it logged in as is the one acting.
  const who = caller ?? participantOf(result?.participant);
  return {
    audit: true,
    action: tool,
    caller: who ? { id: who.id, name: who.name, role: who.role } : null,
    room_id: described.room_id !== undefined ? described.room_id : roomId(a),
    change: described.change,
  };
}

/** Who a login answer names (its participant record), as the line shows a caller. */
function participantOf(participant: unknown): { id: string; name: string; role: string } | null {
  if (!participant || typeof participant !== 'object') return null;
  const p = participant as Record<string, unknown>;
  const id = p.user_id ?? p.agent_id;
  if (typeof id !== 'string' || typeof p.name !== 'string') return null;
  return { id, name: p.name, role: p.agent_id ? 'ai_agent' : 'user' };
}

/** Writes the line at info level (LOG_LEVEL=warn and above hide it like the call lines). */
export function writeAudit(logger: Logger, line: AuditLine): void {
  logger.info(line, `audit: ${line.action}`);
}
