// How long a compaction of the state snapshots holds the event loop (issue 14): opens DATA_DIR,
// changes one room (so rooms.json is dirty) and one participant, compacts, and reports the
// compaction's time and the longest gap between 1 ms timer ticks meanwhile.
//
//   npx tsx bench/compaction-stall.ts --dir DIR [--runs 3]
import { silentLogger } from '../src/logger.js';
import { nameKey } from '../src/identity/names.js';
import { FileStore } from '../src/storage/file-store.js';

function arg(name: string, fallback?: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : fallback;
}

const dir = arg('dir');
if (!dir) throw new Error('--dir DIR');
const store = new FileStore({ dataDir: dir, logger: silentLogger, compactEveryMs: 0, warmIndexes: false, nameKeyOf: nameKey, syncSnapshotBytes: 0 });
await store.open();
const [roomId] = await store.listRoomIds();
for (let run = 0; run < Number(arg('runs', '3')); run++) {
  // A change of each kind, through the journal.
  const loaded = (await store.loadRoom(roomId!))!;
  await store.commitRoom(roomId!, { room: { ...loaded.room, room_description: `run ${run} ${Date.now()}` }, messages: [], expectedVersion: loaded.version });
  const found = (await store.listParticipants())[0]!;
  found.record.last_active = new Date().toISOString();
  await store.putParticipant(found, nameKey(found.record.name));
  let last = performance.now();
  let longest = 0;
  const tick = setInterval(() => {
    const now = performance.now();
    longest = Math.max(longest, now - last);
    last = now;
  }, 1);
  const t0 = performance.now();
  await store.compact();
  const ms = performance.now() - t0;
  clearInterval(tick);
  console.log(JSON.stringify({ run, compaction_ms: Math.round(ms), longest_loop_gap_ms: Math.round(longest * 10) / 10 }));
}
await store.close();
