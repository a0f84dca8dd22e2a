import { runWsBench } from './ws.js';
const ws = await runWsBench({ sockets: 300, rate: 100, durationS: 20, warmupS: 3, targets: ['chatroom'] });
const fan = ws.results[0]!;
console.log('RESULT ' + JSON.stringify({ p50: fan.latency_ms.p50, p90: fan.latency_ms.p90, p99: fan.latency_ms.p99, max: fan.latency_ms.max, mean: fan.latency_ms.mean, lost: fan.lost, elu: fan.client_event_loop_utilization, cpu: fan.server_cpu_us_per_message }));
process.exit(0);
