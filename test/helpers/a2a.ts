// A2A test helpers: the SDK's client for a room, request builders, and room agents that answer
// turns (on the typed client) so a round has answers to follow.
import { randomUUID } from 'node:crypto';
import { Role, type Message as A2aMessage, type SendMessageRequest, type Task } from '@a2a-js/sdk';
import { ClientFactory, type Client } from '@a2a-js/sdk/client';
import { ChatroomClient, type TurnAnswer, type TurnInfo } from '../../src/client/index.js';

export const cardUrlOf = (serverUrl: string, roomId: string) => `${serverUrl}/a2a/rooms/${roomId}/.well-known/agent-card.json`;

export function a2aClient(serverUrl: string, roomId: string): Promise<Client> {
  const card = cardUrlOf(serverUrl, roomId);
  return new ClientFactory().createFromUrl(card, card);
}

export const bearer = (token: string) => ({ serviceParameters: { Authorization: `Bearer ${token}` } });

export function userMessage(text: string): A2aMessage {
  return {
    messageId: randomUUID(),
    contextId: '',
    taskId: '',
    role: Role.ROLE_USER,
    parts: [{ content: { $case: 'text', value: text }, mediaType: 'text/plain', filename: '', metadata: {} }],
    metadata: {},
    extensions: [],
    referenceTaskIds: [],
  };
}

export function sendRequest(text: string, returnImmediately = false): SendMessageRequest {
  return {
    tenant: '',
    message: userMessage(text),
    configuration: { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately },
    metadata: {},
  };
}

export const artifactTexts = (task: Task) =>
  task.artifacts.map((a) => ({ name: a.name, text: a.parts.map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('') }));

/**
 * An agent that answers each turn once per new person message (`<name> heard: <text>`) and skips
 * otherwise; `silent` lets its turns run out instead. Close its `client` after the test.
 */
export async function answeringAgent(
  serverUrl: string,
  name: string,
  roomId: string,
  options: { silent?: boolean } = {},
): Promise<{ name: string; token: string; client: ChatroomClient }> {
  const { token } = await ChatroomClient.register(serverUrl, name, { introduce: `${name} answers questions`, capabilities: ['echo', 'testing'] });
  await ChatroomClient.rest(serverUrl, 'join_room', { room_id: roomId }, token);
  const client = new ChatroomClient({ url: serverUrl, token, backoff: { initialMs: 100, maxMs: 1000 } });
  let heard = 0;
  client.onTurn((turn: TurnInfo): TurnAnswer => {
    if (options.silent) return undefined;
    const people = turn.context.messages.filter((m) => m.role === 'user' && m.seq > heard);
    const last = people[people.length - 1];
    if (!last) return turn.can_skip ? { skip: true } : { text: `${name}: nothing new` };
    heard = last.seq;
    return { text: `${name} heard: ${last.text_content}` };
  });
  await client.connect();
  return { name, token, client };
}
