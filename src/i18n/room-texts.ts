// Texts the server writes into a room (SPEC §6): in the room's language. Readers tell records
// apart by `skip_reason`, never by these texts (the page renders them in the reader's language).
import { langOf, type Localized } from './language.js';

export type RecordReason = 'skip' | 'timeout' | 'offline' | 'passed';

const RECORD: Localized<Record<RecordReason, string>> = {
  'zh-CN': { skip: '（跳过）', timeout: '（超时跳过）', offline: '（离线跳过）', passed: '（管理员跳过）' },
  en: { skip: '(skipped)', timeout: '(timed out)', offline: '(offline, skipped)', passed: '(passed by an admin)' },
};

/** The text of an invisible engine record; a skip with a reason carries it (`（跳过：reason）`). */
export function recordText(language: string, reason: RecordReason, why?: string): string {
  const lang = langOf(language);
  const because = why?.trim() ?? '';
  if (reason === 'skip' && because !== '') return lang === 'zh-CN' ? `（跳过：${because}）` : `(skipped: ${because})`;
  return RECORD[lang][reason];
}

/** The visible system message when the loop guard trips. */
export function guardNotice(language: string, maxAutoRounds: number): string {
  const n = maxAutoRounds;
  return langOf(language) === 'zh-CN'
    ? `已达到自动轮次上限（${n} 轮），等待用户发言或手动开始新一轮。`
    : `Automatic round limit reached (${n} ${n === 1 ? 'round' : 'rounds'}). Waiting for a person to post or for a new round to be started manually.`;
}

/** Why a room stands still: the conditions `system_announcement` reports (SPEC §4). */
export interface StandingConditions {
  /** Who paused the room while it is paused ('' when not known), null while it runs. */
  pausedBy: string | null;
  guardTripped: boolean;
  /** The room has agents and none of them is online. */
  noAgentOnline: boolean;
}

/** The room's standing notice: one sentence per condition that holds, "" when none does. */
export function systemAnnouncement(language: string, c: StandingConditions): string {
  const zh = langOf(language) === 'zh-CN';
  const parts: string[] = [];
  if (c.pausedBy !== null && c.pausedBy !== '') {
    parts.push(zh ? `房间已被 ${c.pausedBy} 暂停，智能体不会发言，直到房间恢复。` : `The room was paused by ${c.pausedBy}; agents do not speak until it is resumed.`);
  } else if (c.pausedBy !== null) {
    // Paused before who paused it was kept.
    parts.push(zh ? '房间已暂停，智能体不会发言，直到房间恢复。' : 'The room is paused; agents do not speak until it is resumed.');
  }
  if (c.guardTripped) parts.push(zh ? '已达到自动轮次上限，等待用户发言或手动开始新一轮。' : 'The automatic round limit was reached; waiting for a person to post or start a new round.');
  if (c.noAgentOnline) parts.push(zh ? '本房间目前没有在线的智能体。' : 'No agent of this room is online.');
  return parts.join(zh ? '' : ' ');
}

/** The line a turn prompt carries when get_context left older unread messages out (SPEC §7). */
export function omittedLine(language: string, omitted: number): string {
  if (omitted <= 0) return '';
  return langOf(language) === 'zh-CN'
    ? `（还有 ${omitted} 条更早的消息未显示；调用 get_messages 查看。）`
    : `(${omitted} earlier ${omitted === 1 ? 'message' : 'messages'} not shown; call get_messages to read ${omitted === 1 ? 'it' : 'them'}.)`;
}
