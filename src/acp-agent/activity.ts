// What the agent is doing, shown to the room while it works (SPEC §12): the ACP updates of one
// prompt turn become `set_activity` calls — `thinking` while it writes (message or thought
// chunks, a plan), `working` with the tool call's title as the note while a tool runs — sent
// at most every THROTTLE_MS (the latest state wins; unchanged states are not resent). The
// streamed answer text is collected here too.
import type { RequestPermissionRequest, SessionUpdate, ToolKind } from '@agentclientprotocol/sdk';

export type Activity = 'thinking' | 'working';

/** At most this many set_activity calls a second (a few, SPEC §12): one per THROTTLE_MS. */
export const THROTTLE_MS = 300;
/** set_activity notes are at most 100 characters (SPEC §7). */
const NOTE_MAX = 100;

export function cutNote(text: string): string {
  const line = text.replace(/\s+/g, ' ').trim();
  const chars = [...line];
  return chars.length > NOTE_MAX ? `${chars.slice(0, NOTE_MAX - 1).join('')}…` : line;
}

export type ReportActivity = (activity: Activity, note: string) => Promise<unknown>;

/**
 * Sends the latest activity, at most one call per THROTTLE_MS. A `working` state (a tool, a
 * permission decision) is never replaced by `thinking` before it was shown: the thinking waits
 * behind it. stop() sends a `working` state still waiting (people should see what was decided
 * for a tool, however short the turn) and drops anything else.
 */
export class ActivityThrottle {
  private sentKey = '';
  private pending: { activity: Activity; note: string } | null = null;
  private after: { activity: Activity; note: string } | null = null;
  private timer: NodeJS.Timeout | null = null;
  private lastSentAt = 0;
  private stopped = false;

  constructor(private readonly report: ReportActivity) {}

  set(activity: Activity, note: string): void {
    if (this.stopped) return;
    const cut = cutNote(note);
    if (`${activity}|${cut}` === this.sentKey && !this.pending) return;
    if (this.pending?.activity === 'working' && activity === 'thinking') this.after = { activity, note: cut };
    else {
      this.pending = { activity, note: cut };
      this.after = null;
    }
    this.schedule();
  }

  private schedule(): void {
    if (this.timer || !this.pending) return;
    const wait = Math.max(0, this.lastSentAt + THROTTLE_MS - Date.now());
    this.timer = setTimeout(() => this.flush(), wait);
  }

  private flush(): void {
    this.timer = null;
    const next = this.pending;
    this.pending = this.after;
    this.after = null;
    if (next && !this.stopped) this.send(next);
    this.schedule();
  }

  private send(state: { activity: Activity; note: string }): void {
    const key = `${state.activity}|${state.note}`;
    if (key === this.sentKey) return;
    this.sentKey = key;
    this.lastSentAt = Date.now();
    void this.report(state.activity, state.note).catch(() => undefined);
  }

  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (this.pending?.activity === 'working') this.send(this.pending);
    this.pending = null;
    this.after = null;
  }
}

/** One prompt turn's view of the agent's updates: the streamed text and the activity. */
export class TurnUpdates {
  private readonly chunks: string[] = [];
  private readonly tools = new Map<string, string>();

  constructor(
    private readonly activity: ActivityThrottle,
    private readonly program: string,
  ) {}

  /** The text the agent streamed as its message. */
  get text(): string {
    return this.chunks.join('');
  }

  apply(update: SessionUpdate): void {
    switch (update.sessionUpdate) {
      case 'agent_message_chunk':
        if (update.content.type === 'text') this.chunks.push(update.content.text);
        this.activity.set('thinking', `${this.program} is writing`);
        break;
      case 'agent_thought_chunk':
        this.activity.set('thinking', `${this.program} is thinking`);
        break;
      case 'plan': {
        const step = update.entries.find((e) => e.status === 'in_progress') ?? update.entries.find((e) => e.status === 'pending');
        this.activity.set('thinking', step ? `plan: ${step.content}` : `${this.program} is planning`);
        break;
      }
      case 'tool_call':
        if (update.status === 'completed' || update.status === 'failed') break;
        this.tools.set(update.toolCallId, update.title);
        this.activity.set('working', update.title);
        break;
      case 'tool_call_update': {
        if (update.title) this.tools.set(update.toolCallId, update.title);
        if (update.status === 'completed' || update.status === 'failed') {
          this.tools.delete(update.toolCallId);
          const other = [...this.tools.values()].at(-1);
          this.activity.set(other ? 'working' : 'thinking', other ?? `${this.program} is thinking`);
        } else {
          const title = this.tools.get(update.toolCallId);
          if (title) this.activity.set('working', title);
        }
        break;
      }
      default:
        break;
    }
  }

  /** Shows a permission decision as the activity note. */
  permission(note: string): void {
    this.activity.set('working', note);
  }
}

/** The kinds `--allow` takes: ACP's tool kinds, plus `all`. */
export const TOOL_KINDS: readonly ToolKind[] = ['read', 'edit', 'delete', 'move', 'search', 'execute', 'think', 'fetch', 'switch_mode', 'other'];

export interface PermissionChoice {
  outcome: { outcome: 'cancelled' } | { outcome: 'selected'; optionId: string };
  /** What the room sees as the activity note. */
  note: string;
}

/**
 * The answer to a permission request by the runner's policy: a tool of an allowed kind gets the
 * agent's "allow once" option, anything else its "reject" option (no reject option: cancelled).
 */
export function choosePermission(request: RequestPermissionRequest, allow: ReadonlySet<string>): PermissionChoice {
  const kind = request.toolCall.kind ?? 'other';
  const title = request.toolCall.title ?? kind;
  const allowed = allow.has('all') || allow.has(kind);
  const prefer = allowed ? (['allow_once', 'allow_always'] as const) : (['reject_once', 'reject_always'] as const);
  const option = prefer.map((k) => request.options.find((o) => o.kind === k)).find((o) => o !== undefined);
  const verdict = allowed ? 'allowed' : 'refused';
  const note = cutNote(`${verdict} ${kind}: ${title}`);
  if (!option) return { outcome: { outcome: 'cancelled' }, note };
  return { outcome: { outcome: 'selected', optionId: option.optionId }, note };
}
