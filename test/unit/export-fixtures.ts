// Hand-built Room and Message fixtures for the export tests and bench, the usual export input
// and a sink that keeps what an export writes.
import { Writable } from 'node:stream';
import type { ExportInput } from '../../src/export/format.js';
import type { Member, Message, Room } from '../../src/types.js';
import { plainMessageFields } from '../helpers/message-fields.js';

export const ROOM_ID = 'design-review-20260101000000-abc12345';

export function makeMember(over: Partial<Member> & Pick<Member, 'name'>): Member {
  return {
    role: 'ai_agent',
    introduce: '',
    status: 'online',
    last_active: '2026-01-01T00:00:00.000Z',
    is_host: false,
    skip_list: [],
    language_preference: 'zh-CN',
    timezone_preference: 'Asia/Shanghai',
    participant_id: `id-${over.name}`,
    joined_at: '2026-01-01T00:00:00.000Z',
    ...over,
  };
}

export function makeRoom(over: Partial<Room> = {}): Room {
  return {
    room_id: ROOM_ID,
    room_name: 'Design Review',
    room_description: '架构评审',
    created_at: '2026-01-01T00:00:00.000Z',
    created_by: 'bob',
    has_password: false,
    interaction_mode: 'default',
    user_participation: true,
    system_status: 'active',
    language: 'zh-CN',
    timezone: 'Asia/Shanghai',
    members: [
      makeMember({ name: 'alice', role: 'ai_agent', is_host: true }),
      makeMember({ name: 'bob', role: 'user' }),
      makeMember({ name: 'carol', role: 'ai_agent' }),
    ],
    announcement: {
      user_announcement: '本周五前完成评审',
      announcement_publisher: 'bob',
      timestamp: '2026-01-01T01:00:00.000Z',
      system_announcement: '',
    },
    current_round: null,
    history_rounds: [],
    settings: { display_time_format: '24h', display_date_format: 'yyyy-MM-dd', max_auto_rounds: 10, turn_timeout_ms: null },
    archived: false,
    ...over,
  };
}

let counter = 0;

/** A message; seq and timestamp must be given, the rest has defaults. */
export function makeMessage(over: Partial<Message> & Pick<Message, 'seq'>): Message {
  counter += 1;
  return {
    message_id: `00000000-0000-4000-8000-${String(over.seq).padStart(12, '0')}`,
    room_id: ROOM_ID,
    timestamp: new Date(Date.UTC(2026, 0, 1, 0, 0, over.seq)).toISOString(),
    sender: 'alice',
    sender_id: 'id-alice',
    role: 'ai_agent',
    text_content: `message ${over.seq} (${counter})`,
    ...plainMessageFields(),
    ...over,
  };
}

/** A small conversation covering what the exports must show. */
export function sampleMessages(): Message[] {
  const msgs: Message[] = [];
  const add = (over: Partial<Message>): Message => {
    const m = makeMessage({ seq: msgs.length + 1, ...over });
    msgs.push(m);
    return m;
  };
  const first = add({
    sender: 'bob',
    sender_id: 'id-bob',
    role: 'user',
    timestamp: '2026-01-01T00:00:00.000Z',
    text_content: '你好，世界！请评审这个设计。\n第二行 second line',
  });
  add({
    round_id: 'round-1',
    text_content: [
      '## 结论',
      '',
      'This is **bold**, *italic*, ~~struck~~ and `inline code` with a [link](https://example.com/doc).',
      '',
      '- 第一点 first point',
      '- second point',
      '  1. nested one',
      '  2. nested two',
      '- [x] done task',
      '',
      '> 引用：quoted text',
      '',
      '```ts',
      'const greeting = "hello";',
      'console.log(greeting); // 打印问候',
      '```',
      '',
      '---',
      '',
      'After the rule.',
    ].join('\n'),
    response_to: first.message_id,
  });
  add({ round_id: 'round-1', sender: 'carol', sender_id: 'id-carol', visible: false, skip_reason: 'skip', text_content: 'SKIPPED-RECORD' });
  add({ round_id: 'round-1', sender: 'carol', sender_id: 'id-carol', visible: false, skip_reason: 'timeout', text_content: 'TIMEOUT-RECORD' });
  add({
    round_id: 'round-2',
    sender: 'carol',
    sender_id: 'id-carol',
    text_content: `Long word: ${'W'.repeat(500)} end.`,
    file_url: '/api/v1/rooms/r/files/20260101000000_report%20v2.pdf',
    file_type: 'application/pdf',
  });
  add({ round_id: 'round-2', text_content: '', deleted: true });
  add({ sender: 'bob', sender_id: 'id-bob', role: 'user', text_content: '谢谢大家 thanks', edited_at: '2026-01-01T00:10:00.000Z' });
  return msgs;
}

/** The sample room and conversation, exported at a fixed time in Asia/Shanghai with signed links. */
export function sampleInput(over: Partial<ExportInput> = {}): ExportInput {
  return {
    room: makeRoom(),
    messages: sampleMessages(),
    exportedAt: new Date('2026-01-02T03:04:05.000Z'),
    timezone: 'Asia/Shanghai',
    fileUrl: (u) => `https://chat.example.com${u}?sig=s1`,
    ...over,
  };
}

/** Keeps every chunk written to it; a delay per write makes it a slow reader. */
export class MemorySink extends Writable {
  chunks: Buffer[] = [];
  constructor(private readonly delayMs = 0, highWaterMark?: number) {
    super({ highWaterMark });
  }
  override _write(chunk: Buffer, _enc: BufferEncoding, cb: (err?: Error | null) => void): void {
    this.chunks.push(chunk);
    if (this.delayMs > 0) setTimeout(cb, this.delayMs);
    else cb();
  }
  get bytes(): Buffer {
    return Buffer.concat(this.chunks);
  }
  get text(): string {
    return this.bytes.toString('utf8');
  }
}
