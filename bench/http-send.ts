// Durable send_message over HTTP: throughput and ack latency with 1, 16 and 64 concurrent
// senders, and ack latency at a fixed 1,000 messages/s. The server runs as its own process
// (built dist if present, else tsx) on a fresh DATA_DIR; every ack is after fsync.
//   npx tsx bench/http-send.ts [seconds-per-step=5]
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { percentile, rest, startBenchServer } from './util.js';

export interface SendBenchResult {
  concurrency: { senders: number; messagesPerSecond: number; p50Ms: number; p99Ms: number }[];
  fixedRate: { targetPerSecond: number; achievedPerSecond: number; p50Ms: number; p99Ms: number };
}

export async function runSendBench(secondsPerStep = 5): Promise<SendBenchResult> {
  const dataDir = await mkdtemp(join(tmpdir(), 'bench-send-'));
  const server = await startBenchServer({ DATA_DIR: dataDir, RATE_LIMIT_PER_TOKEN: '0', RATE_LIMIT_PER_ADDRESS: '0' });
  try {
    const user = (await rest(server.url, 'register_user', { name: 'bench' })).data;
    const room = (await rest(server.url, 'create_room', { room_name: 'Bench' }, user.token)).data.room;
    const send = async (i: number) => {
      const started = performance.now();
      const answer = await rest(server.url, 'send_message', { room_id: room.room_id, text_content: `bench message ${i} 基准测试` }, user.token);
      if (!answer.ok) throw new Error(JSON.stringify(answer.error));
      return performance.now() - started;
    };

    const concurrency: SendBenchResult['concurrency'] = [];
    for (const senders of [1, 16, 64]) {
      const latencies: number[] = [];
      const end = performance.now() + secondsPerStep * 1000;
      let n = 0;
      const t0 = performance.now();
      await Promise.all(
        Array.from({ length: senders }, async () => {
          while (performance.now() < end) latencies.push(await send(n++));
        }),
      );
      const elapsed = (performance.now() - t0) / 1000;
      concurrency.push({
        senders,
        messagesPerSecond: Math.round(latencies.length / elapsed),
        p50Ms: percentile(latencies, 50),
        p99Ms: percentile(latencies, 99),
      });
    }

    // Open loop at a fixed rate: a send starts every millisecond whatever the previous did.
    const rate = 1000;
    const fixed: number[] = [];
    const pending: Promise<void>[] = [];
    const t0 = performance.now();
    const total = rate * secondsPerStep;
    for (let i = 0; i < total; i++) {
      const due = t0 + (i * 1000) / rate;
      const wait = due - performance.now();
      if (wait > 1) await new Promise((r) => setTimeout(r, wait));
      pending.push(send(i).then((ms) => void fixed.push(ms)));
    }
    await Promise.all(pending);
    const elapsed = (performance.now() - t0) / 1000;
    return {
      concurrency,
      fixedRate: { targetPerSecond: rate, achievedPerSecond: Math.round(fixed.length / elapsed), p50Ms: percentile(fixed, 50), p99Ms: percentile(fixed, 99) },
    };
  } finally {
    await server.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(JSON.stringify(await runSendBench(Number(process.argv[2] ?? 5)), null, 2));
}
