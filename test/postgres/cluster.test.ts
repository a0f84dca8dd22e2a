// The whole server on PostgreSQL (STORE=postgres, SPEC §11): one node behaves as the file store
// does, and several nodes on one database serve one room together — a participant known to one
// node works on another, a turn given on one node reaches an agent connected to another, every
// node's subscribers see every message in seq order without a gap or a repeat, concurrent senders
// on all nodes get a gapless seq, and a silent agent's deadline fires exactly once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../src/config.js';
import type { RunningServer } from '../../src/server.js';
import { restCall } from '../helpers/process.js';
import { TestSocket } from '../helpers/ws.js';
import { newSite, ok, startNode } from './cluster-nodes.js';
import { pgTestsEnabled, startPgServer, type PgServer } from './pg-server.js';

const enabled = pgTestsEnabled();
let pgServer: PgServer | undefined;
const nodes: RunningServer[] = [];

async function startNodes(count: number, turnTimeoutMs = 60_000, overrides: Partial<Config> = {}): Promise<RunningServer[]> {
  const site = await newSite(pgServer!);
  const started: RunningServer[] = [];
  for (let i = 0; i < count; i++) {
    const node = await startNode(site, { turnTimeoutMs, ...overrides });
    started.push(node);
    nodes.push(node);
  }
  return started;
}

const wsUrl = (node: RunningServer) => `${node.url.replace('http', 'ws')}/ws`;

if (enabled) {
  beforeAll(async () => {
    pgServer = await startPgServer();
  });
  afterAll(async () => {
    for (const node of nodes) await node.close().catch(() => undefined);
    await pgServer?.stop();
  });
}

describe.skipIf(!enabled)('the server on PostgreSQL', () => {
  it('one node: register, room, turns, paging and restart as on the file store', async () => {
    const [node] = await startNodes(1);
    const person = await ok(node!.url, 'register_user', { name: 'Solo' });
    const agent = await ok(node!.url, 'register_agent', { name: 'SoloBot' });
    const { room } = await ok(node!.url, 'create_room', { room_name: 'Solo room' }, person.token);
    await ok(node!.url, 'join_room', { room_id: room.room_id }, agent.token);
    const agentSocket = await TestSocket.connect(wsUrl(node!), agent.token);
    await ok(node!.url, 'send_message', { room_id: room.room_id, text_content: '你好' }, person.token);
    const turn = await agentSocket.waitForEvent('agent_turn', (d) => d.agent_name === 'SoloBot');
    expect(turn.data).toMatchObject({ agent_queue: ['SoloBot'], current_agent_index: 0, pending_mentions: [] });
    await ok(node!.url, 'send_message', { room_id: room.room_id, text_content: 'answer', client_msg_id: 'c1' }, agent.token);
    const again = await ok(node!.url, 'send_message', { room_id: room.room_id, text_content: 'answer', client_msg_id: 'c1' }, agent.token);
    expect(again.message.seq).toBe(2);
    const { messages } = await ok(node!.url, 'get_messages', { room_id: room.room_id, after_seq: 0 }, person.token);
    expect(messages.map((m: { seq: number; text_content: string }) => [m.seq, m.text_content])).toEqual([[1, '你好'], [2, 'answer']]);
    const found = await ok(node!.url, 'search_messages', { room_id: room.room_id, query: '你' }, person.token);
    expect(found.messages).toHaveLength(1);
    await agentSocket.close();
  });

  it('three nodes serve one room: turns and events cross nodes in seq order, senders everywhere get a gapless seq', async () => {
    const [a, b, c] = await startNodes(3);
    // The person is registered on node A, the agents on B and C: each token is known elsewhere.
    const person = await ok(a!.url, 'register_user', { name: 'Alice' });
    const bot1 = await ok(b!.url, 'register_agent', { name: 'Bot1' });
    const bot2 = await ok(c!.url, 'register_agent', { name: 'Bot2' });
    const { room } = await ok(a!.url, 'create_room', { room_name: 'Cluster room' }, person.token);
    await ok(b!.url, 'join_room', { room_id: room.room_id }, bot1.token);
    await ok(c!.url, 'join_room', { room_id: room.room_id }, bot2.token);

    const watchers = [await TestSocket.connect(wsUrl(a!), person.token), await TestSocket.connect(wsUrl(b!), person.token), await TestSocket.connect(wsUrl(c!), person.token)];
    const bot1Socket = await TestSocket.connect(wsUrl(b!), bot1.token);
    const bot2Socket = await TestSocket.connect(wsUrl(c!), bot2.token);

    // A person's message on node A gives Bot1 (on node B) the turn; its answer on B gives Bot2
    // (on node C) the next one.
    await ok(a!.url, 'send_message', { room_id: room.room_id, text_content: 'Plan the release, please.' }, person.token);
    await bot1Socket.waitForEvent('agent_turn', (d) => d.agent_name === 'Bot1');
    await ok(b!.url, 'send_message', { room_id: room.room_id, text_content: 'Bot1: tests first.' }, bot1.token);
    const turn2 = await bot2Socket.waitForEvent('agent_turn', (d) => d.agent_name === 'Bot2');
    expect(turn2.data).toMatchObject({ agent_queue: ['Bot1', 'Bot2'], current_agent_index: 1 });
    await ok(c!.url, 'send_message', { room_id: room.room_id, text_content: 'Bot2: then docs.' }, bot2.token);

    // 3 nodes × 6 concurrent senders (the person's token on every node).
    const senders = [a!, b!, c!].flatMap((node, n) =>
      Array.from({ length: 6 }, async (_, s) => {
        for (let i = 0; i < 5; i++) await ok(node.url, 'send_message', { room_id: room.room_id, text_content: `n${n} s${s} #${i}` }, person.token);
      }),
    );
    await Promise.all(senders);
    const { messages } = await ok(a!.url, 'get_messages', { room_id: room.room_id, after_seq: 0, limit: 200 }, person.token);
    const seqs = messages.map((m: { seq: number }) => m.seq);
    expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, i) => i + 1));
    expect(messages.filter((m: { text_content: string }) => /^n\d s\d #\d$/.test(m.text_content))).toHaveLength(90);

    // Every node's subscriber saw every message once, in seq order.
    const last = seqs.at(-1)!;
    for (const watcher of watchers) {
      await watcher.waitForEvent('message_new', (d) => d.message.seq === last, 15_000);
      expect(watcher.messageSeqs(room.room_id)).toEqual(seqs);
    }
    // Bot2's answer (committed on node C) ended the first round and started the follow-up round
    // in one commit: every node's subscriber got the same round events, the end as `completed`
    // (the nodes that did not commit it rebuild it from the stored state).
    const rounds = (watcher: TestSocket) =>
      watcher
        .events(room.room_id)
        .filter((f) => f.event === 'round_start' || f.event === 'round_end')
        .map((f: any) => `${f.event}:${f.data.round_id}${f.event === 'round_end' ? `:${f.data.reason}` : ''}`);
    const [first, second] = rounds(watchers[2]!).filter((l) => l.startsWith('round_start'));
    expect(rounds(watchers[2]!)).toEqual([first, `${first!.replace('round_start', 'round_end')}:completed`, second]);
    for (const watcher of watchers) expect(rounds(watcher)).toEqual(rounds(watchers[2]!));
    for (const socket of [...watchers, bot1Socket, bot2Socket]) await socket.close();
  });

  it('a silent agent times out exactly once, whichever node fires the deadline', async () => {
    const [a, b] = await startNodes(2, 1500);
    const person = await ok(a!.url, 'register_user', { name: 'Carol' });
    const bot = await ok(b!.url, 'register_agent', { name: 'Sleepy' });
    const { room } = await ok(a!.url, 'create_room', { room_name: 'Deadline room' }, person.token);
    await ok(b!.url, 'join_room', { room_id: room.room_id }, bot.token);
    const watcher = await TestSocket.connect(wsUrl(a!), person.token);
    // Both nodes hold the room (each armed the deadline): node B is where the agent joined.
    await ok(b!.url, 'get_room', { room_id: room.room_id }, bot.token);
    await ok(a!.url, 'send_message', { room_id: room.room_id, text_content: 'anyone?' }, person.token);
    await watcher.waitForEvent('round_end', () => true, 10_000);
    const { messages } = await ok(b!.url, 'get_messages', { room_id: room.room_id, after_seq: 0 }, person.token);
    expect(messages.filter((m: { skip_reason: string | null }) => m.skip_reason === 'timeout').map((m: { sender: string }) => m.sender)).toEqual(['Sleepy']);
    await watcher.close();
  });

  it('rate limits are one budget across the nodes: calls spread over two nodes share the per-token limit', async () => {
    const [a, b] = await startNodes(2, 60_000, { rateLimitPerToken: 6, rateLimitPerAddress: 0 });
    const person = await ok(a!.url, 'register_user', { name: 'Budget' });
    const statuses: number[] = [];
    for (let i = 0; i < 8; i++) statuses.push((await restCall((i % 2 ? b! : a!).url, 'list_rooms', {}, person.token)).status);
    // Six calls pass in total (three per node), not six per node.
    expect(statuses).toEqual([200, 200, 200, 200, 200, 200, 429, 429]);
    const over = await restCall(b!.url, 'list_rooms', {}, person.token);
    expect(over.body.error).toMatchObject({ code: 'rate_limited' });
  });

  it('an edit and a deletion made on one node reach the subscribers on every node as message_update', async () => {
    const [a, b, c] = await startNodes(3);
    const person = await ok(a!.url, 'register_user', { name: 'Editor' });
    const { room } = await ok(a!.url, 'create_room', { room_name: 'Edit room' }, person.token);
    const watchers = [a!, b!, c!].map((node) => TestSocket.connect(wsUrl(node), person.token));
    const sockets = await Promise.all(watchers);
    const { message } = await ok(a!.url, 'send_message', { room_id: room.room_id, text_content: 'first draft' }, person.token);
    for (const socket of sockets) await socket.waitForEvent('message_new', (d) => d.message.message_id === message.message_id);
    // Edited on node B, deleted on node C: every node's subscriber gets both, in that order.
    await ok(b!.url, 'edit_message', { message_id: message.message_id, text_content: 'final text' }, person.token);
    for (const socket of sockets) await socket.waitForEvent('message_update', (d) => d.message.text_content === 'final text');
    await ok(c!.url, 'delete_message', { message_id: message.message_id }, person.token);
    for (const socket of sockets) {
      await socket.waitForEvent('message_update', (d) => d.message.deleted === true);
      const updates = socket.events(room.room_id).filter((f) => f.event === 'message_update');
      expect(updates.map((f: any) => [f.data.message.seq, f.data.message.text_content, f.data.message.deleted])).toEqual([
        [1, 'final text', false],
        [1, '', true],
      ]);
    }
    for (const socket of sockets) await socket.close();
  });

  it("a socket on one node is subscribed to a room its participant joins through another node", async () => {
    const [a, b] = await startNodes(2);
    const person = await ok(a!.url, 'register_user', { name: 'Host' });
    const agent = await ok(a!.url, 'register_agent', { name: 'Roamer' });
    // The agent's socket is on node B before the room exists; everything else goes through A.
    const socket = await TestSocket.connect(wsUrl(b!), agent.token);
    const { room } = await ok(a!.url, 'create_room', { room_name: 'Joined elsewhere' }, person.token);
    await ok(a!.url, 'send_message', { room_id: room.room_id, text_content: 'before the agent' }, person.token);
    await ok(a!.url, 'join_room', { room_id: room.room_id }, agent.token);
    await socket.waitFor((f) => f.type === 'subscribed' && f.room_id === room.room_id, 10_000, 'subscribed on node B');
    await ok(a!.url, 'send_message', { room_id: room.room_id, text_content: 'after the agent joined' }, person.token);
    await socket.waitForEvent('message_new', (d) => d.message.text_content === 'after the agent joined');
    await socket.close();
  });
});
