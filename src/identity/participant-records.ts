// Participant records as stored, and the shapes the rest of the server sees of them.
import type { ParticipantRecord } from '../storage/store.js';
import type { Agent, AgentRecord, Participant, User, UserRecord } from '../types.js';

export function toPublicAgent(record: AgentRecord): Agent {
  const { token_hashes: _tokenHashes, ...agent } = record;
  return agent;
}

export function toPublicUser(record: UserRecord): User {
  const { token_hashes: _tokenHashes, password_hash, ...user } = record;
  return { ...user, has_password: password_hash !== null };
}

export function participantOf(found: ParticipantRecord): Participant {
  return found.kind === 'agent'
    ? { kind: 'agent', id: found.record.agent_id, name: found.record.name, role: 'ai_agent' }
    : { kind: 'user', id: found.record.user_id, name: found.record.name, role: 'user' };
}
