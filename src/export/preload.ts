// Loads the export's heavy modules (pdfkit with fontkit, sharp, the HTML sanitiser) and parses
// the fonts once, in the background right after the server has started, one module per turn of
// the event loop. Loading a module is one synchronous block of 0.1-0.3 s that nothing can split:
// paid while the server has just started instead of in the middle of the first export, so an
// export never holds the event loop that long (SPEC §10).
import { Writable } from 'node:stream';
import type { ExportInput } from './format.js';
import type { Message, Room } from '../types.js';

let started: Promise<void> | null = null;

function nullSink(): Writable {
  return new Writable({ write: (_chunk, _enc, cb) => cb() });
}

const WARM_TEXTS = [
  '好的，我来看一下这个问题。根据日志，超时发生在第三轮 😀。',
  'I checked the **retry logic**: the cap is `30s`, see [docs](https://example.com).\n\n- one\n- two\n\n> quote',
  '```ts\nexport function backoff(attempt: number): number {\n  return Math.min(5000, 100 * 2 ** attempt); // 指数退避\n}\n```',
  '| 指标 | 值 |\n|---|---|\n| p99 | 180 ms |',
];

function warmUpInput(): ExportInput {
  const room: Room = {
    room_id: 'warm-up-20260101000000-aaaaaaaa', room_name: 'Warm up', room_description: '', created_at: '2026-01-01T00:00:00.000Z',
    created_by: 'a', has_password: false, interaction_mode: 'default', user_participation: true, system_status: 'active',
    language: 'zh-CN', timezone: 'Asia/Shanghai',
    members: [{ name: 'a', role: 'user', introduce: '', status: 'online', last_active: '2026-01-01T00:00:00.000Z', is_host: true, skip_list: [], language_preference: 'zh-CN', timezone_preference: 'Asia/Shanghai', participant_id: 'a', joined_at: '2026-01-01T00:00:00.000Z' }],
    announcement: { user_announcement: '公告', announcement_publisher: 'a', timestamp: null, system_announcement: '' },
    current_round: null, history_rounds: [], settings: { display_time_format: '24h', display_date_format: 'yyyy-MM-dd', max_auto_rounds: 3, turn_timeout_ms: null },
    archived: false,
  };
  const messages: Message[] = Array.from({ length: 40 }, (_, i) => ({
    message_id: `m${i}`, room_id: room.room_id, seq: i + 1, timestamp: new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString(),
    sender: 'a', sender_id: 'a', role: i % 2 ? 'ai_agent' : 'user', text_content: WARM_TEXTS[i % WARM_TEXTS.length]!, text_content_i18n: null,
    source_language: 'zh-CN', file_url: '', file_type: '', mentions: [], visible: true, processed: true, response_to: null,
    display_timezone: 'Asia/Shanghai', round_id: i % 3 ? 'r' : null, skip_reason: null, deleted: false,
  }));
  return { room, messages, exportedAt: new Date(0), timezone: 'Asia/Shanghai' };
}

export function preloadExportModules(): Promise<void> {
  started ??= (async () => {
    const step = async (load: () => Promise<unknown>): Promise<void> => {
      await new Promise<void>((resolve) => setImmediate(resolve));
      await load().catch(() => undefined); // the export itself reports what is missing
    };
    await step(() => import('./pdf.js'));
    await step(async () => {
      const { bundledFonts, loadFaces } = await import('./pdf-canvas.js');
      await loadFaces(bundledFonts());
    });
    await step(() => import('./images.js'));
    await step(() => import('./html.js'));
    await step(() => import('./import.js'));
    // A small export to a null sink: the code paths are compiled and the font caches filled
    // before the first real export (a cold first export runs several times slower). It yields
    // like any export.
    await step(async () => {
      const [{ writePdfExport }, { writeHtmlExport }] = await Promise.all([import('./pdf.js'), import('./html.js')]);
      await writePdfExport(warmUpInput(), nullSink());
      await writeHtmlExport(warmUpInput(), nullSink());
    });
  })();
  return started;
}
