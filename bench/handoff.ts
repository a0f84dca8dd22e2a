// Turn hand-off latency: from the moment an agent's answer is acknowledged (its `result`
// frame) to the moment the next agent receives its `agent_turn` event, over WebSocket.
//   npx tsx bench/handoff.ts [handoffs=500]
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import WebSocket from 'ws';
import { cpuMs, percentile, rest, startBenchServer } from './util.js';

export interface HandoffResult {
  handoffs: number;
  /** Answer acknowledged → next agent_turn received (0 when the turn lands before the ack). */
  p50Ms: number;
  p99Ms: number;
  /** Answer sent → next agent_turn received: the whole hop as the agents see it. */
  sendToTurnP50Ms: number;
  sendToTurnP99Ms: number;
  /** Every answer-sent → next-turn latency, in order (ms). */
  samples: number[];
  /** Server CPU (user + system, all threads) per hand-off over the run, in ms. */
  serverCpuMsPerHandoff: number;
  /** The same over the second half of the run only: without the first half's JIT warm-up. */
  serverCpuMsPerHandoffSecondHalf: number;
}

interface Agent {
  name: string;
  ws: WebSocket;
  onTurn: (at: number) => void;
  onResult: (at: number) => void;
}

async function connect(url: string, token: string, name: string): Promise<Agent> {
  const ws = new WebSocket(`${url.replace('http', 'ws')}/ws`);
  const agent: Agent = { name, ws, onTurn: () => undefined, onResult: () => undefined };
  await new Promise((r) => ws.once('open', r));
  ws.on('message', (raw) => {
    const at = performance.now();
    const frame = JSON.parse(String(raw));
    if (frame.type === 'event' && frame.event === 'agent_turn' && frame.data.agent_name === name) agent.onTurn(at);
    if (frame.type === 'result') agent.onResult(at);
  });
  ws.send(JSON.stringify({ type: 'auth', token }));
  await new Promise<void>((resolve) => {
    const check = (raw: WebSocket.RawData) => {
      if (JSON.parse(String(raw)).type === 'auth_ok') {
        ws.off('message', check);
        resolve();
      }
    };
    ws.on('message', check);
  });
  return agent;
}

export async function runHandoffBench(handoffs = 500): Promise<HandoffResult> {
  const dataDir = await mkdtemp(join(tmpdir(), 'bench-handoff-'));
  const server = await startBenchServer({ DATA_DIR: dataDir, RATE_LIMIT_PER_TOKEN: '0', RATE_LIMIT_PER_ADDRESS: '0' });
  try {
    const user = (await rest(server.url, 'register_user', { name: 'host' })).data;
    const room = (await rest(server.url, 'create_room', { room_name: 'Handoff' }, user.token)).data.room;
    await rest(server.url, 'update_room', { room_id: room.room_id, max_auto_rounds: 1000 }, user.token);
    const agents: Agent[] = [];
    for (const name of ['A', 'B']) {
      const reg = (await rest(server.url, 'register_agent', { name })).data;
      await rest(server.url, 'join_room', { room_id: room.room_id }, reg.token);
      agents.push(await connect(server.url, reg.token, name));
    }
    const latencies: number[] = [];
    const cpuBefore = cpuMs(server.child.pid!);
    const half = Math.floor(handoffs / 2);
    let cpuHalf = cpuBefore;
    const sendToTurn: number[] = [];
    await new Promise<void>((resolve) => {
      // One hand-off: the answer's ack and the next agent's turn, in whichever order they land.
      let ackAt: number | null = null;
      let turnAt: number | null = null;
      let next: Agent | null = null;
      let sent = 0;
      let sentAt = 0;
      const answer = (agent: Agent) => {
        sentAt = performance.now();
        agent.ws.send(JSON.stringify({ type: 'call', id: String(++sent), tool: 'send_message', args: { room_id: room.room_id, text_content: `answer ${sent}` } }));
      };
      const settle = () => {
        if (ackAt === null || turnAt === null || next === null) return;
        latencies.push(Math.max(0, turnAt - ackAt));
        sendToTurn.push(turnAt - sentAt);
        if (latencies.length === half) cpuHalf = cpuMs(server.child.pid!);
        if (latencies.length >= handoffs) return resolve();
        const agent = next;
        ackAt = turnAt = null;
        next = null;
        answer(agent);
      };
      for (const agent of agents) {
        agent.onTurn = (at) => {
          if (sent === 0) return answer(agent); // the first turn, started by the person
          turnAt = at;
          next = agent;
          settle();
        };
        agent.onResult = (at) => {
          ackAt = at;
          settle();
        };
      }
      void rest(server.url, 'send_message', { room_id: room.room_id, text_content: 'start' }, user.token);
    });
    const cpuAfter = cpuMs(server.child.pid!);
    const cpu = cpuAfter - cpuBefore;
    for (const agent of agents) agent.ws.close();
    return {
      handoffs: latencies.length,
      p50Ms: percentile(latencies, 50),
      p99Ms: percentile(latencies, 99),
      sendToTurnP50Ms: percentile(sendToTurn, 50),
      sendToTurnP99Ms: percentile(sendToTurn, 99),
      samples: sendToTurn,
      serverCpuMsPerHandoff: Math.round((cpu / latencies.length) * 1000) / 1000,
      serverCpuMsPerHandoffSecondHalf: Math.round(((cpuAfter - cpuHalf) / (latencies.length - half)) * 1000) / 1000,
    };
  } finally {
    await server.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(JSON.stringify(await runHandoffBench(Number(process.argv[2] ?? 500)), null, 2));
}
