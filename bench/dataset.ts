// Writes a large DATA_DIR directly (far faster than through the API): rooms with messages,
// and one person who is a member of every room, with a known token for the bench to use.
import { randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { link, mkdir, writeFile } from 'node:fs/promises';
import { once } from 'node:events';
import { join } from 'node:path';
import { hashToken } from '../src/identity/secrets.js';
import type { AgentRecord, Member, Message, RoomRecord, UserRecord } from '../src/types.js';

const WORDS = ['架构', '设计', 'review', 'Agent', 'hello', '数据库', '性能', '测试', 'deploy', 'message', '接口', 'latency', '方案', 'schema'];

export interface Dataset {
  token: string;
  roomIds: string[];
  /** Tokens of the generated agents (`agentToken(dataset, i)`); agent i is a member of room i % rooms. */
  agentSecret: string;
  agents: number;
  /** Each room r ≥ 1 has its own host person (`ownerToken(agentSecret, r)`); `token`'s person is in room 0 only. */
  owners?: boolean;
}

/** The token of generated agent `i` (the dataset stores only its hash). */
export const agentToken = (secret: string, i: number): string => `act_bench_${secret}_${i}`;
export const agentName = (i: number): string => `bench-agent-${i}`;
export const DATASET_FILE = 'bench-dataset.json';
export const ownerToken = (secret: string, room: number): string => `act_bench_owner_${secret}_${room}`;

/**
 * Gives each room r ≥ 1 its own host person in place of the one person of every room (who
 * keeps room 0): a person in 10,000 rooms turns every presence change into 10,000 room commits,
 * which is not what a bench of joins or status changes means to measure.
 */
export function giveRoomsOwners(users: UserRecord[], rooms: RoomRecord[], secret: string): void {
  const everyone = users[0]!;
  everyone.rooms = [rooms[0]!.room_id];
  for (const [r, room] of rooms.entries()) {
    if (r === 0) continue;
    const owner: UserRecord = { ...everyone, user_id: `bench-owner-id-${r}`, name: `bench-owner-${r}`, rooms: [], token_hashes: [hashToken(ownerToken(secret, r))] };
    users.push(owner);
    room.members = room.members.map((m) => (m.participant_id === everyone.user_id ? { ...m, name: owner.name, participant_id: owner.user_id } : m));
    room.created_by = owner.name;
    room.created_by_id = owner.user_id;
  }
}

function text(i: number): string {
  let out = '';
  for (let j = 0; j < 10; j++) out += `${WORDS[(i * 7 + j * 13 + (i >> 3)) % WORDS.length]} `;
  return `${out}#${i}`;
}

/**
 * Writes `rooms` rooms of `messagesPerRoom` messages each; with `bigRoom`, the first room gets
 * that many messages instead (start-up and cold reads of one large room). With `agents`, that
 * many registered agents, agent i an offline member of room i % rooms (participants at scale).
 * With `linkLogsFrom`, the logs are hard links to those of a data set written before with the
 * same room counts (room ids are fixed by the room's number): the same messages under other
 * state files (the 10M set without its participants, or its big room alone) at no disk cost.
 */
export async function writeDataset(
  dataDir: string,
  rooms: number,
  messagesPerRoom: number,
  options: { bigRoom?: number; agents?: number; owners?: boolean; linkLogsFrom?: string } = {},
): Promise<Dataset> {
  const token = `act_bench_${randomUUID()}`;
  const agentSecret = randomUUID().slice(0, 8);
  const agentCount = options.agents ?? 0;
  const userId = randomUUID();
  const now = new Date('2026-11-01T00:00:00.000Z');
  const roomIds = Array.from({ length: rooms }, (_, r) => `bench-room-${r}-20261101000000-abcdefgh${r}`);
  const user: UserRecord = {
    user_id: userId,
    name: 'bench',
    language: 'zh-CN',
    timezone: 'Asia/Shanghai',
    rooms: roomIds,
    last_active: now.toISOString(),
    created_at: now.toISOString(),
    token_hashes: [hashToken(token)],
    password_hash: null,
  };
  const roomRecords: RoomRecord[] = roomIds.map((room_id, r) => ({
    room_id,
    room_name: 'Bench',
    room_description: '',
    created_at: now.toISOString(),
    created_by: 'bench',
    created_by_id: userId,
    password_hash: null,
    interaction_mode: 'default',
    user_participation: true,
    system_status: 'active',
    language: 'zh-CN',
    timezone: 'Asia/Shanghai',
    members: [
      {
        name: 'bench',
        role: 'user',
        introduce: '',
        status: 'offline',
        last_active: now.toISOString(),
        is_host: true,
        skip_list: [],
        language_preference: 'zh-CN',
        timezone_preference: 'Asia/Shanghai',
        participant_id: userId,
        joined_at: now.toISOString(),
      },
    ],
    announcement: { user_announcement: '', announcement_publisher: '', timestamp: null, system_announcement: '' },
    current_round: null,
    history_rounds: [],
    settings: { display_time_format: '24h', display_date_format: 'yyyy-MM-dd', max_auto_rounds: 10, turn_timeout_ms: null },
    archived: false,
    processed_through_seq: r === 0 && options.bigRoom !== undefined ? options.bigRoom : messagesPerRoom,
  }));
  const agents: AgentRecord[] = [];
  for (let i = 0; i < agentCount; i++) {
    const agent: AgentRecord = {
      agent_id: `bench-agent-id-${i}`,
      name: agentName(i),
      introduce: '',
      rooms: [],
      status: 'offline',
      last_active: now.toISOString(),
      capabilities: [],
      skip_list: [],
      language_support: ['zh-CN'],
      preferred_language: 'zh-CN',
      timezone: 'Asia/Shanghai',
      created_at: now.toISOString(),
      token_hashes: [hashToken(agentToken(agentSecret, i))],
    };
    agents.push(agent);
    const member: Member = {
      ...roomRecords[i % rooms]!.members[0]!,
      name: agent.name,
      role: 'ai_agent',
      is_host: false,
      participant_id: agent.agent_id,
    };
    roomRecords[i % rooms]!.members.push(member);
  }
  await mkdir(join(dataDir, 'room_messages'), { recursive: true });
  const users = [user];
  if (options.owners) giveRoomsOwners(users, roomRecords, agentSecret);
  await writeFile(join(dataDir, 'users.json'), `[\n${users.map((u) => JSON.stringify(u)).join(',\n')}\n]`);
  // One record a line, as the server writes its snapshots.
  await writeFile(join(dataDir, 'agents.json'), `[\n${agents.map((a) => JSON.stringify(a)).join(',\n')}\n]`);
  await writeFile(join(dataDir, 'rooms.json'), JSON.stringify(roomRecords));
  let n = 0;
  for (const [r, room_id] of roomIds.entries()) {
    const count = r === 0 && options.bigRoom !== undefined ? options.bigRoom : messagesPerRoom;
    if (options.linkLogsFrom !== undefined) {
      const file = join('room_messages', `${room_id}.jsonl`);
      await link(join(options.linkLogsFrom, file), join(dataDir, file));
      continue;
    }
    // Written in chunks: a million lines joined at once would pass V8's string limit.
    const out = createWriteStream(join(dataDir, 'room_messages', `${room_id}.jsonl`));
    let lines: string[] = [];
    const flush = async () => {
      if (!out.write(`${lines.join('\n')}\n`)) await once(out, 'drain');
      lines = [];
    };
    for (let seq = 1; seq <= count; seq++) {
      const message: Message = {
        message_id: randomUUID(),
        room_id,
        seq,
        timestamp: new Date(now.getTime() + seq * 1000).toISOString(),
        sender: 'bench',
        sender_id: userId,
        role: 'user',
        text_content: text(n++),
        text_content_i18n: null,
        source_language: 'zh-CN',
        file_url: '',
        file_type: '',
        mentions: [],
        visible: true,
        processed: false,
        response_to: null,
        display_timezone: 'Asia/Shanghai',
        round_id: null,
        skip_reason: null,
        deleted: false,
      };
      lines.push(JSON.stringify(message));
      if (lines.length === 10_000) await flush();
    }
    if (lines.length > 0) await flush();
    out.end();
    await once(out, 'finish');
  }
  const dataset: Dataset = { token, roomIds, agentSecret, agents: agentCount, owners: options.owners === true };
  // For benches that run against the directory later (bench/server-scale.ts): not read by the server.
  await writeFile(join(dataDir, DATASET_FILE), JSON.stringify(dataset));
  return dataset;
}
