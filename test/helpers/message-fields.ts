// The fields of a plain message as SPEC §7 stores it, shared by the hand-built fixtures and the
// integration test that checks every field the server stores.
import type { SkipReason } from '../../src/types.js';

/**
 * A text message in a zh-CN room on Asia/Shanghai time: no translation, no file, no mentions,
 * visible, processed, no reply, in no round, not a skip record, not deleted. A new object each
 * call (its `mentions` array is not shared).
 */
export function plainMessageFields() {
  return {
    text_content_i18n: null,
    source_language: 'zh-CN',
    file_url: '',
    file_type: '',
    mentions: [] as string[],
    visible: true,
    processed: true,
    response_to: null as string | null,
    display_timezone: 'Asia/Shanghai',
    round_id: null as string | null,
    skip_reason: null as SkipReason | null,
    deleted: false,
  };
}
