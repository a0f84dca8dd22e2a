// One round of the room-runtime comparison (BENCHMARKS.md, "Room runtime against the commit
// before it"): durable sends with 64 senders, turn hand-off and fan-out, each with the bench
// code of the checkout it runs in. Run it alternately in two checkouts:
//   for i in 1 2 3; do (cd A && npx tsx bench/compare-round.ts); (cd B && npx tsx bench/compare-round.ts); done
// (each checkout built first with `npm run build`: the send and hand-off benches start dist/).
import { runHandoffBench } from './handoff.js';
import { runSendBench } from './http-send.js';
import { runWsBench } from './ws.js';

const send = await runSendBench(5);
const handoff = await runHandoffBench(500);
const ws = await runWsBench({ sockets: 300, rate: 100, durationS: 20, warmupS: 3, targets: ['chatroom'] });
const s64 = send.concurrency.find((c) => c.senders === 64)!;
const fan = ws.results[0]!;
console.log(
  'RESULT ' +
    JSON.stringify({
      send64: s64,
      handoff: { p50: handoff.sendToTurnP50Ms, p99: handoff.sendToTurnP99Ms },
      fanout: { p50: fan.latency_ms.p50, p99: fan.latency_ms.p99, lost: fan.lost, ooo: fan.out_of_order },
    }),
);
process.exit(0);
