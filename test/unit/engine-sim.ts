// A tiny room simulator for the pure turn engine: holds the room (members, presence, status,
// mode, message seqs), the engine's RoundState, a fake clock and the single timer, and applies
// actions the way the driver does (records and system messages take the next seqs).
import { expect } from 'vitest';
import { applyAction } from '../../src/rounds/engine.js';
import type { MessageRoom } from '../../src/rounds/engine-messages.js';
import type { CurrentRound, EngineAction, EngineEffect, EngineResult, RoomView, RoundState } from '../../src/rounds/types.js';

export const T0 = Date.UTC(2025, 0, 1, 0, 0, 0);
export const TIMEOUT = 180_000;

export interface SimOptions {
  mode?: 'default' | 'host';
  language?: string;
  maxAutoRounds?: number;
  turnTimeoutMs?: number;
  /** Agent members, in join order. */
  agents?: string[];
  /** Person members, joined after the agents unless `peopleFirst`. */
  people?: string[];
  /** Agents that start offline (all others online). */
  offline?: string[];
  /** Join order when both kinds are given: people first (so a person is host). Default: agents first. */
  peopleFirst?: boolean;
}

interface Member {
  name: string;
  role: 'ai_agent' | 'user';
}

export class Room {
  mode: 'default' | 'host';
  status: 'active' | 'paused' = 'active';
  language: string;
  maxAutoRounds: number;
  turnTimeoutMs: number;
  members: Member[] = [];
  host: string | null = null;
  creator: string | null = null;
  online = new Set<string>();
  now = T0;
  seq = 0;
  lastPersonSeq = 0;
  state: RoundState = { current_round: null, history_rounds: [], processed_through_seq: 0, paused_mentions: [] };
  /** The armed timer's deadline (ISO) or null. */
  timer: string | null = null;
  /** Effects of the last successful call. */
  last: EngineEffect[] = [];
  /** Every effect so far, in order. */
  log: EngineEffect[] = [];
  /** Every invisible record / system message written, as the driver would. */
  written: { seq: number; effect: Extract<EngineEffect, { type: 'record' | 'system_message' }> }[] = [];
  private ids = 0;

  constructor(opts: SimOptions = {}) {
    this.mode = opts.mode ?? 'default';
    this.language = opts.language ?? 'zh-CN';
    this.maxAutoRounds = opts.maxAutoRounds ?? 3; // the v2 default of settings.max_auto_rounds
    this.turnTimeoutMs = opts.turnTimeoutMs ?? TIMEOUT;
    const agents = (opts.agents ?? []).map((name) => ({ name, role: 'ai_agent' as const }));
    const people = (opts.people ?? []).map((name) => ({ name, role: 'user' as const }));
    const order = opts.peopleFirst ? [...people, ...agents] : [...agents, ...people];
    for (const m of order) this.join(m.name, m.role, !(opts.offline ?? []).includes(m.name));
    this.last = [];
  }

  get agents(): string[] {
    return this.members.filter((m) => m.role === 'ai_agent').map((m) => m.name);
  }

  role(name: string): 'ai_agent' | 'user' {
    const m = this.members.find((x) => x.name === name);
    if (!m) throw new Error(`no member ${name}`);
    return m.role;
  }

  view(): RoomView {
    const host = this.members.find((m) => m.name === this.host) ?? null;
    return {
      mode: this.mode,
      status: this.status,
      agents: this.agents,
      host: host?.name ?? null,
      hostIsAgent: host?.role === 'ai_agent',
      maxAutoRounds: this.maxAutoRounds,
      turnTimeoutMs: this.turnTimeoutMs,
      language: this.language,
      lastSeq: this.seq,
      lastPersonSeq: this.lastPersonSeq,
    };
  }

  /** The room as the driver's message builder reads it; participant ids are `id:<name>`. */
  messageRoom(): MessageRoom {
    return {
      room_id: 'room',
      language: this.language,
      timezone: 'UTC',
      members: this.members.map((m) => ({ name: m.name, participant_id: participantId(m.name) })),
    };
  }

  get round(): CurrentRound | null {
    return this.state.current_round;
  }

  get running(): CurrentRound | null {
    const r = this.state.current_round;
    return r && !r.completed ? r : null;
  }

  get holder(): string | null {
    return this.running?.turn?.agent ?? null;
  }

  apply(action: EngineAction): EngineResult {
    const online = new Set([...this.online].filter((n) => this.agents.includes(n)));
    const result = applyAction(this.view(), this.state, action, {
      now: this.now,
      online,
      newRoundId: () => `r${++this.ids}`,
    });
    if (!result.ok) return result;
    this.state = result.state;
    this.last = result.effects;
    this.log.push(...result.effects);
    for (const e of result.effects) {
      if (e.type === 'timer') this.timer = e.deadline;
      if (e.type === 'record' || e.type === 'system_message') this.written.push({ seq: ++this.seq, effect: e });
    }
    return result;
  }

  // ── actions ──

  post(sender: string, opts: { mentions?: string[]; endTurn?: boolean } = {}): EngineResult {
    const role = this.role(sender);
    const seq = ++this.seq;
    const personBefore = this.lastPersonSeq;
    if (role === 'user') this.lastPersonSeq = seq;
    const result = this.apply({
      type: 'message',
      sender,
      role,
      isAdmin: sender === this.host || sender === this.creator,
      seq,
      mentions: opts.mentions ?? [],
      endTurn: opts.endTurn ?? true,
    });
    if (!result.ok) {
      // A refused message is never written.
      this.seq -= 1;
      this.lastPersonSeq = personBefore;
    }
    return result;
  }

  skip(agent: string, reason?: string): EngineResult {
    return this.apply(reason === undefined ? { type: 'skip', agent } : { type: 'skip', agent, reason });
  }

  /** Advances the clock to the armed deadline and fires the timer. */
  fire(): EngineResult {
    if (this.timer === null) throw new Error('no timer armed');
    this.now = Math.max(this.now, Date.parse(this.timer));
    this.timer = null;
    return this.apply({ type: 'timeout' });
  }

  tick(ms: number): void {
    this.now += ms;
  }

  join(name: string, role: 'ai_agent' | 'user', online = true): EngineResult {
    this.members.push({ name, role });
    if (this.host === null) this.host = name;
    if (this.creator === null) this.creator = name;
    if (role === 'ai_agent' && online) this.online.add(name);
    return this.apply({ type: 'member_joined', name, role });
  }

  leave(name: string): EngineResult {
    const role = this.role(name);
    this.members = this.members.filter((m) => m.name !== name);
    this.online.delete(name);
    if (this.host === name) this.host = this.members[0]?.name ?? null;
    return this.apply({ type: 'member_left', name, role });
  }

  goOnline(name: string): EngineResult {
    this.online.add(name);
    return this.apply({ type: 'came_online', name });
  }

  /** Presence lapses silently (the engine only looks when it issues a turn). */
  goOffline(name: string): void {
    this.online.delete(name);
  }

  pause(): EngineResult {
    this.status = 'paused';
    return this.apply({ type: 'status_changed' });
  }

  resume(): EngineResult {
    this.status = 'active';
    return this.apply({ type: 'status_changed' });
  }

  setMode(mode: 'default' | 'host'): EngineResult {
    this.mode = mode;
    return this.apply({ type: 'mode_changed' });
  }

  /** By default the first person member calls it (else the creator); `byPerson` follows the caller's role. */
  startRound(by = this.members.find((m) => m.role === 'user')?.name ?? this.creator ?? 'admin'): EngineResult {
    const byPerson = this.members.find((m) => m.name === by)?.role !== 'ai_agent';
    return this.apply({ type: 'start_round', by, byPerson });
  }

  pass(by = this.creator ?? 'admin'): EngineResult {
    return this.apply({ type: 'pass_turn', by });
  }

  extend(agent: string): EngineResult {
    return this.apply({ type: 'extend_turn', agent });
  }

  restart(): EngineResult {
    return this.apply({ type: 'restart' });
  }

  // ── reading effects ──

  /** Compact, exact rendering of effects; deadlines relative to the clock when emitted. */
  fmt(effects: readonly EngineEffect[] = this.last): string[] {
    return effects.map((e) => fmtEffect(e, this.now));
  }
}

export const participantId = (name: string): string => `id:${name}`;

export function fmtEffect(e: EngineEffect, now: number): string {
  const rel = (iso: string | null) => (iso === null ? 'off' : `+${(Date.parse(iso) - now) / 1000}s`);
  switch (e.type) {
    case 'round_start':
      return `round_start ${e.round_id} ${e.kind} [${e.agent_queue.join(',')}]`;
    case 'agent_turn':
      return `agent_turn ${e.round_id} ${e.agent_name} ${e.reason}${e.can_skip ? '' : ' no-skip'} ${rel(e.deadline)}`;
    case 'round_end':
      return `round_end ${e.round_id} ${e.reason}`;
    case 'record':
      return `record ${e.round_id} ${e.agent} ${e.skip_reason} ${e.text}`;
    case 'system_message':
      return `system ${e.round_id ?? '-'} ${e.text}`;
    case 'timer':
      return `timer ${rel(e.deadline)}`;
  }
}

/** Throws unless the result is ok; returns its effects rendered. */
export function ok(result: EngineResult, sim: Room): string[] {
  if (!result.ok) throw new Error(`refused: ${result.code} ${result.message}`);
  return sim.fmt(result.effects);
}

/**
 * Each command is refused (with `refusal`: the error code, or what the result must match) and
 * the engine state is left as it was: the very same object.
 */
export function expectRefused(sim: Room, refusal: string | Record<string, unknown>, ...commands: Array<(sim: Room) => EngineResult>): void {
  const before = sim.state;
  const expected = { ok: false, ...(typeof refusal === 'string' ? { code: refusal } : refusal) };
  for (const command of commands) expect(command(sim)).toMatchObject(expected);
  expect(sim.state).toBe(before);
}
