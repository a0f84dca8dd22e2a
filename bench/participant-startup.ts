// Start-up with many participants, step by step (issue 14): what the server does with the stored
// participants before it serves (store open, the identity indexes, the presence seed), each
// step's time and the heap it leaves behind (after a full GC), in one process.
//
//   node --expose-gc --import tsx bench/participant-startup.ts --dir DIR [--runs 3]
// DIR: a data set written by bench/storage-scale.ts (e.g. --rooms 10000 --per-room 10
// --agents 100000 --owners --runs 0). Each run is a fresh child process.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { silentLogger } from '../src/logger.js';
import { nameKey } from '../src/identity/names.js';
import { Participants } from '../src/identity/participants.js';
import { Presence } from '../src/identity/presence.js';
import { seedParticipants } from '../src/identity/seed.js';
import { FileStore } from '../src/storage/file-store.js';

function arg(name: string, fallback?: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : fallback;
}

const mb = (bytes: number): number => Math.round(bytes / 1e6);

async function measure(dir: string): Promise<Record<string, number>> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('run with node --expose-gc');
  const out: Record<string, number> = {};
  let t = performance.now();
  const step = (name: string): void => {
    out[`${name}_ms`] = Math.round(performance.now() - t);
    gc();
    out[`${name}_heap_mb`] = mb(process.memoryUsage().heapUsed);
    t = performance.now();
  };
  gc();
  out.base_heap_mb = mb(process.memoryUsage().heapUsed);
  t = performance.now();
  const store = new FileStore({ dataDir: dir, logger: silentLogger, compactEveryMs: 0, warmIndexes: false, nameKeyOf: nameKey });
  await store.open();
  step('store_open');
  const participants = new Participants(store, { language: 'en', timezone: 'UTC' });
  const presence = new Presence(Date.now);
  await seedParticipants(store, participants, presence);
  step('identity_and_presence');
  await participants.lookAlikesIndexed();
  step('look_alike_index');
  out.rss_mb = mb(process.memoryUsage().rss);
  presence.stop();
  await store.close();
  return out;
}

if (process.argv.includes('--child')) {
  console.log(JSON.stringify(await measure(arg('dir')!)));
} else {
  const dir = arg('dir');
  if (!dir) throw new Error('--dir DIR');
  for (let r = 0; r < Number(arg('runs', '3')); r++) {
    const child = spawnSync(process.execPath, ['--expose-gc', '--import', 'tsx', fileURLToPath(import.meta.url), '--child', '--dir', dir], { encoding: 'utf8' });
    if (child.status !== 0) throw new Error(child.stderr);
    console.log(child.stdout.trim());
  }
}
