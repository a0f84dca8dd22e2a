// The fan-out part of bench/compare-round.ts alone, for A/B runs and profiles: 300 subscribed
// sockets, 100 msg/s for 20 s after a 3 s warm-up; prints latency from the scheduled send and
// the server's CPU per message (all threads). Server flags: BENCH_SERVER_NODE_ARGS.
//   npx tsx bench/fanout-only.ts
import { runWsBench } from './ws.js';
const ws = await runWsBench({ sockets: 300, rate: 100, durationS: 20, warmupS: 3, targets: ['chatroom'] });
const fan = ws.results[0]!;
console.log('RESULT ' + JSON.stringify({ p50: fan.latency_ms.p50, p90: fan.latency_ms.p90, p99: fan.latency_ms.p99, max: fan.latency_ms.max, mean: fan.latency_ms.mean, lost: fan.lost, elu: fan.client_event_loop_utilization, cpu: fan.server_cpu_us_per_message }));
process.exit(0);
