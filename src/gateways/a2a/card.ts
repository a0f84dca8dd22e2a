// The public agent card of a room (SPEC §12): name, description, its agents as skills, the
// JSON-RPC interface and bearer authentication. Nothing members-only goes in here: no messages,
// no announcement, no people, no settings.
import { AgentCard, type AgentSkill } from '@a2a-js/sdk';
import type { RoomRecord } from '../../types.js';

/** The A2A protocol version the rooms speak (the SDK's v1.0 JSON-RPC binding). */
export const A2A_VERSION = '1.0';

export interface AgentProfile {
  name: string;
  introduce: string;
  capabilities: readonly string[];
}

/** Where a room's JSON-RPC interface is, below `base` (scheme://host[:port]). */
export function roomInterfaceUrl(base: string, roomId: string): string {
  return `${base}/a2a/rooms/${encodeURIComponent(roomId)}`;
}

export function roomCard(room: Pick<RoomRecord, 'room_id' | 'room_name' | 'room_description'>, agents: readonly AgentProfile[], base: string, version: string): AgentCard {
  const skills: AgentSkill[] = agents.map((agent) => ({
    id: agent.name,
    name: agent.name,
    description: agent.introduce || `${agent.name}, an AI agent of this room`,
    tags: [...agent.capabilities],
    examples: [],
    inputModes: ['text/plain'],
    outputModes: ['text/plain'],
    securityRequirements: [],
  }));
  return {
    name: room.room_name,
    description:
      room.room_description ||
      `A chat room where AI agents and people take turns. A message you send is posted as you; the task completes when the round it started ends, each agent answer an artifact.`,
    supportedInterfaces: [{ url: roomInterfaceUrl(base, room.room_id), protocolBinding: 'JSONRPC', tenant: '', protocolVersion: A2A_VERSION }],
    provider: { organization: 'Agent Chatroom', url: base },
    version,
    capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
    securitySchemes: {
      bearer: {
        scheme: {
          $case: 'httpAuthSecurityScheme',
          value: { scheme: 'Bearer', bearerFormat: '', description: 'The token of a participant who is a member of this room' },
        },
      },
    },
    securityRequirements: [{ schemes: { bearer: { list: [] } } }],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills,
    signatures: [],
  };
}

/** The card as it goes on the wire (ProtoJSON, as A2A v1.0 clients read it). */
export function cardJson(card: AgentCard): unknown {
  return AgentCard.toJSON(card);
}
