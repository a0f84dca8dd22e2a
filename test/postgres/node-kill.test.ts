// Nodes that die (SIGKILL) while they serve clients (SPEC §11): their clients' presence goes
// offline after the grace period, a deadline they scheduled still fires on another node within
// 5 s, and under load with nodes killed and restarted again and again no acknowledged message
// is lost and seq stays gapless.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningServer } from '../../src/server.js';
import { restCall, type ServerProcess } from '../helpers/process.js';
import { TestSocket, wsUrl } from '../helpers/ws.js';
import { kill, newSite, ok, spawnNode, startNode, type ClusterSite } from './cluster-nodes.js';
import { pgTestsEnabled, startPgServer, type PgServer } from './pg-server.js';

const enabled = pgTestsEnabled();
let pgServer: PgServer | undefined;
const inProcess: RunningServer[] = [];
const processes = new Set<ServerProcess>();

async function spawn(site: ClusterSite, env: Record<string, string> = {}): Promise<ServerProcess> {
  const node = await spawnNode(site, env);
  processes.add(node);
  void node.exited.then(() => processes.delete(node));
  return node;
}

if (enabled) {
  beforeAll(async () => {
    pgServer = await startPgServer();
  });
  afterAll(async () => {
    for (const node of processes) node.child.kill('SIGKILL');
    for (const node of inProcess) await node.close().catch(() => undefined);
    await pgServer?.stop();
  });
}

describe.skipIf(!enabled)('a node killed with SIGKILL', () => {
  it("its clients go offline after the grace period, unless another node still serves them", async () => {
    const site = await newSite(pgServer!);
    // Node A (here) declares a node dead 3 s after its last heartbeat; node B is a process.
    const a = await startNode(site, {}, { socketGraceMs: 3000 });
    inProcess.push(a);
    const b = await spawn(site);
    const person = await ok(a.url, 'register_user', { name: 'Watcher' });
    const gone = await ok(b.url, 'register_agent', { name: 'Gone' });
    const both = await ok(b.url, 'register_agent', { name: 'Both' });
    const { room } = await ok(a.url, 'create_room', { room_name: 'Presence room' }, person.token);
    await ok(b.url, 'join_room', { room_id: room.room_id }, gone.token);
    await ok(b.url, 'join_room', { room_id: room.room_id }, both.token);
    const goneSocket = await TestSocket.connect(wsUrl(b.url), gone.token);
    const bothOnB = await TestSocket.connect(wsUrl(b.url), both.token);
    const bothOnA = await TestSocket.connect(wsUrl(a.url), both.token);
    const watcher = await TestSocket.connect(wsUrl(a.url), person.token);
    // Both agents are stored online, and node B has recorded that it serves them.
    const statuses = async () => {
      const { room: current } = await ok(a.url, 'get_room', { room_id: room.room_id }, person.token);
      return Object.fromEntries(current.members.map((m: { name: string; status: string }) => [m.name, m.status]));
    };
    await expect.poll(statuses).toMatchObject({ Gone: 'online', Both: 'online' });
    const db = new pg.Client({ connectionString: site.databaseUrl });
    await db.connect();
    const servedByB = async () =>
      (await db.query('SELECT count(*)::int AS n FROM chatroom_node_presence p JOIN chatroom_nodes USING (node_id) WHERE participant_id = ANY($1)', [[gone.agent_id, both.agent_id]])).rows[0].n;
    await expect.poll(servedByB).toBeGreaterThanOrEqual(3); // Gone on B; Both on B and A

    const mark = watcher.mark();
    const killedAt = Date.now();
    await kill(b);
    // B beat at most 2 s before it died; A waits for 3 s of silence (+ its own beat interval):
    // the change comes within 8 s of the kill (the wait's own limit), and not at once.
    const offline = await watcher.waitForEventFrom(mark, 'member_status_change', (d) => d.member.name === 'Gone' && d.member.status === 'offline', 8000);
    expect(Date.now() - killedAt).toBeGreaterThanOrEqual(900);
    expect(offline.data.member.status).toBe('offline');
    await watcher.barrier();
    expect(watcher.since(mark).filter((f: any) => f.type === 'event' && f.event === 'member_status_change' && f.data.member.name === 'Both')).toEqual([]);
    expect(await statuses()).toMatchObject({ Gone: 'offline', Both: 'online' });
    await db.end();
    for (const socket of [goneSocket, bothOnB, bothOnA, watcher]) await socket.close();
  });

  it('a deadline scheduled by the killed node fires on another node within 5 s of it', async () => {
    const site = await newSite(pgServer!);
    const a = await startNode(site);
    inProcess.push(a);
    const b = await spawn(site, { TURN_TIMEOUT_MS: '2500' });
    const person = await ok(a.url, 'register_user', { name: 'Dana' });
    const bot = await ok(b.url, 'register_agent', { name: 'Silent' });
    const { room } = await ok(a.url, 'create_room', { room_name: 'Orphan deadline' }, person.token);
    await ok(b.url, 'join_room', { room_id: room.room_id }, bot.token);
    const botSocket = await TestSocket.connect(wsUrl(b.url), bot.token);
    const watcher = await TestSocket.connect(wsUrl(a.url), person.token);
    // The person posts through node B: B issues the turn and schedules its deadline.
    await ok(b.url, 'send_message', { room_id: room.room_id, text_content: 'Silent, your turn.' }, person.token);
    const turn = await watcher.waitForEvent('agent_turn', (d) => d.agent_name === 'Silent');
    const deadline = Date.parse(turn.data.deadline);
    await kill(b);
    expect(Date.now()).toBeLessThan(deadline);
    // Within 5 s of the deadline: the wait's own limit.
    const timedOut = await watcher.waitForEvent('message_new', (d) => d.message.skip_reason === 'timeout', deadline - Date.now() + 5000);
    expect(Date.now()).toBeGreaterThanOrEqual(deadline);
    expect(timedOut.data.message.sender).toBe('Silent');
    const { messages } = await ok(a.url, 'get_messages', { room_id: room.room_id, after_seq: 0 }, person.token);
    expect(messages.filter((m: { skip_reason: string | null }) => m.skip_reason === 'timeout')).toHaveLength(1);
    await watcher.close();
    await botSocket.close();
  });

  it('20 node kills under load: no acknowledged message is lost, seq stays gapless, retries never duplicate', async () => {
    const site = await newSite(pgServer!);
    const nodes = await Promise.all([spawn(site), spawn(site), spawn(site)]);
    // A node being restarted is still in the list with its dead address: calls to it fail and
    // the sender moves on, as a client behind a load balancer would.
    const url = (i: number) => nodes[i % nodes.length]!.url;
    const people = await Promise.all(Array.from({ length: 9 }, (_, i) => ok(url(i), 'register_user', { name: `Sender${i}` })));
    const { room } = await ok(url(0), 'create_room', { room_name: 'Kill room' }, people[0].token);
    for (const [i, p] of people.entries()) if (i > 0) await ok(url(i), 'join_room', { room_id: room.room_id }, p.token);

    const acked = new Map<string, number>();
    let stop = false;
    // Each sender starts on its own node and moves to the next one when a call fails (the node
    // died mid-call), retrying the same client_msg_id until it is acknowledged.
    const sender = async (i: number) => {
      let target = i;
      for (let k = 0; !stop; k++) {
        const key = `s${i}-${k}`;
        for (;;) {
          const answer = await restCall(url(target), 'send_message', { room_id: room.room_id, text_content: key, client_msg_id: key }, people[i].token).catch(() => null);
          if (answer?.body.ok) {
            acked.set(key, answer.body.data.message.seq);
            break;
          }
          if (answer && answer.status < 500) throw new Error(`send ${key}: ${JSON.stringify(answer.body)}`);
          target++;
          // A pause before the retry (a client's backoff, so a restarting node is not hammered),
          // not a wait for an outcome.
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      }
    };
    const senders = people.map((_, i) => sender(i));
    // Kill the nodes in turn; each restarts in the background while the next one is killed
    // (it is up again before its own next kill).
    const restarts: Array<Promise<void> | undefined> = [];
    for (let kills = 0; kills < 20; kills++) {
      const before = acked.size;
      await expect.poll(() => acked.size, { timeout: 10_000 }).toBeGreaterThan(before + 5);
      const victim = kills % nodes.length;
      await restarts[victim];
      await kill(nodes[victim]!);
      restarts[victim] = spawn(site).then((node) => {
        nodes[victim] = node;
      });
    }
    await Promise.all(restarts);
    const beforeStop = acked.size;
    await expect.poll(() => acked.size, { timeout: 10_000 }).toBeGreaterThan(beforeStop + 10);
    stop = true;
    await Promise.all(senders);

    const log: Array<{ seq: number; text_content: string }> = [];
    for (let after = 0; ; ) {
      const { messages } = await ok(url(0), 'get_messages', { room_id: room.room_id, after_seq: after, limit: 200 }, people[0].token);
      if (messages.length === 0) break;
      log.push(...messages);
      after = messages.at(-1).seq;
    }
    expect(log.map((m) => m.seq)).toEqual(Array.from({ length: log.length }, (_, i) => i + 1));
    const texts = log.map((m) => m.text_content);
    expect(new Set(texts).size).toBe(texts.length);
    const bySeq = new Map(log.map((m) => [m.seq, m.text_content]));
    for (const [key, seq] of acked) expect(bySeq.get(seq)).toBe(key);
    expect(acked.size).toBeGreaterThan(100);
  }, 180_000);
});
