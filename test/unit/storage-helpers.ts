// Shared by the storage tests and their child-process fixture: record factories, temp dirs and
// a logger that keeps what it logs.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { pino, type Logger } from 'pino';
import type { AgentRecord, Message, RoomRecord, UserRecord } from '../../src/types.js';

export async function tempDir(): Promise<{ dir: string; cleanup: () => Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'chatroom-store-'));
  return { dir, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

export interface LogLine {
  level: number;
  msg: string;
  [key: string]: unknown;
}

/** A pino logger whose lines land in `lines` (parsed). */
export function memoryLogger(): { logger: Logger; lines: LogLine[]; warnings: () => LogLine[] } {
  const lines: LogLine[] = [];
  const logger = pino({ level: 'debug' }, { write: (s: string) => void lines.push(JSON.parse(s) as LogLine) });
  return { logger, lines, warnings: () => lines.filter((l) => l.level === 40) };
}

export function makeMessage(roomId: string, seq: number, over: Partial<Message> = {}): Message {
  return {
    message_id: randomUUID(),
    room_id: roomId,
    seq,
    timestamp: new Date().toISOString(),
    sender: 'alice',
    sender_id: 'u-alice',
    role: 'user',
    text_content: `message ${seq} — 你好`,
    text_content_i18n: null,
    source_language: 'en',
    file_url: '',
    file_type: '',
    mentions: [],
    visible: true,
    processed: false,
    response_to: null,
    display_timezone: 'UTC',
    round_id: null,
    skip_reason: null,
    deleted: false,
    ...over,
  };
}

export function makeRoom(roomId: string, over: Partial<RoomRecord> = {}): RoomRecord {
  return {
    room_id: roomId,
    room_name: `Room ${roomId}`,
    room_description: 'test',
    created_at: '2026-01-01T00:00:00.000Z',
    created_by: 'alice',
    created_by_id: 'u-alice',
    password_hash: null,
    interaction_mode: 'default',
    user_participation: true,
    system_status: 'active',
    language: 'en',
    timezone: 'UTC',
    members: [],
    announcement: { user_announcement: '', announcement_publisher: '', timestamp: null, system_announcement: '' },
    current_round: null,
    history_rounds: [],
    settings: { display_time_format: '24h', display_date_format: 'yyyy-MM-dd', max_auto_rounds: 10, turn_timeout_ms: null },
    archived: false,
    processed_through_seq: 0,
    ...over,
  };
}

export function makeAgent(agentId: string, over: Partial<AgentRecord> = {}): AgentRecord {
  return {
    agent_id: agentId,
    name: `agent-${agentId}`,
    introduce: 'hi',
    rooms: [],
    status: 'offline',
    last_active: '2026-01-01T00:00:00.000Z',
    capabilities: [],
    skip_list: [],
    language_support: ['en'],
    preferred_language: 'en',
    timezone: 'UTC',
    created_at: '2026-01-01T00:00:00.000Z',
    token_hashes: ['abc'],
    ...over,
  };
}

export function makeUser(userId: string, over: Partial<UserRecord> = {}): UserRecord {
  return {
    user_id: userId,
    name: `user-${userId}`,
    language: 'en',
    timezone: 'UTC',
    rooms: [],
    last_active: '2026-01-01T00:00:00.000Z',
    created_at: '2026-01-01T00:00:00.000Z',
    token_hashes: ['def'],
    password_hash: null,
    ...over,
  };
}
