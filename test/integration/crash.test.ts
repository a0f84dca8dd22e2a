// Crash test: SIGKILL the server at random moments under concurrent load, CRASH_RUNS times
// (50 in the suite; `npm run soak` runs more). After each restart no acknowledged message is
// lost or duplicated, seqs have no gap, and every file parses. Beside the message senders, a
// writer registers agents, joins them to the room (which starts rounds) and creates rooms, so
// the snapshots (agents.json, rooms.json) are being replaced when the kill lands: every
// acknowledged registration, membership and room must be in them after the restart.
import { readFileSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { restCall, spawnServer, type ServerProcess, userWithRoom } from '../helpers/process.js';
import { tempDataDir } from '../helpers/server.js';

const RUNS = Number(process.env.CRASH_RUNS ?? 50);
const SENDERS = 8;

async function checkFiles(dataDir: string, roomId: string, acked: ReadonlySet<string>): Promise<number> {
  for (const name of await readdir(dataDir)) {
    if (name.endsWith('.json')) expect(() => JSON.parse(readFileText(dataDir, name))).not.toThrow();
  }
  const logDir = path.join(dataDir, 'room_messages');
  const seen = new Map<string, number>();
  for (const file of await readdir(logDir)) {
    const lines = (await readFile(path.join(logDir, file), 'utf8')).split('\n');
    expect(lines.pop()).toBe(''); // every line is complete
    for (const line of lines) {
      const message = JSON.parse(line) as { message_id: string; seq: number; room_id: string };
      if (message.room_id !== roomId) continue;
      expect(seen.has(message.message_id)).toBe(false); // no duplicate
      seen.set(message.message_id, message.seq);
    }
  }
  for (const id of acked) expect(seen.has(id)).toBe(true); // nothing acknowledged lost
  const seqs = [...seen.values()].sort((a, b) => a - b);
  expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, i) => i + 1));
  return seqs.length;
}

function readFileText(dir: string, name: string): string {
  return readFileSync(path.join(dir, name), 'utf8');
}

interface SnapshotAcks {
  agents: Set<string>;
  members: Set<string>;
  rooms: Set<string>;
}

/** Every acknowledged snapshot change is in the files the restarted server loaded. */
function checkSnapshots(dataDir: string, roomId: string, acked: SnapshotAcks): void {
  const agents = new Set((JSON.parse(readFileText(dataDir, 'agents.json')) as { name: string }[]).map((a) => a.name));
  const rooms = JSON.parse(readFileText(dataDir, 'rooms.json')) as { room_id: string; members: { name: string }[] }[];
  const members = new Set(rooms.find((r) => r.room_id === roomId)!.members.map((m) => m.name));
  const roomIds = new Set(rooms.map((r) => r.room_id));
  for (const name of acked.agents) expect(agents.has(name), `agent ${name}`).toBe(true);
  for (const name of acked.members) expect(members.has(name), `member ${name}`).toBe(true);
  for (const id of acked.rooms) expect(roomIds.has(id), `room ${id}`).toBe(true);
}

/** Registers agents, joins each to the room and lets it create a room, until the server dies. */
async function snapshotWriter(url: string, run: number, roomId: string, acked: SnapshotAcks, isDead: () => boolean): Promise<void> {
  for (let i = 0; !isDead(); i++) {
    try {
      const name = `a${run}_${i}`;
      const registered = await restCall(url, 'register_agent', { name });
      if (!registered.body.ok) continue;
      acked.agents.add(name);
      const token = registered.body.data.token as string;
      if ((await restCall(url, 'join_room', { room_id: roomId }, token)).body.ok) acked.members.add(name);
      const created = await restCall(url, 'create_room', { room_name: `R${run} ${i}` }, token);
      if (created.body.ok) acked.rooms.add(created.body.data.room.room_id);
    } catch {
      return; // connection refused or reset: the server is gone
    }
  }
}

describe('crash safety', () => {
  it(`loses nothing acknowledged over ${RUNS} SIGKILLs at random moments under load`, async () => {
    const dataDir = await tempDataDir();
    let server: ServerProcess = await spawnServer({ DATA_DIR: dataDir });
    const { user, room } = await userWithRoom(server.url, 'Crash', 'Crash');
    const acked = new Set<string>();
    const snapshotAcks: SnapshotAcks = { agents: new Set(), members: new Set(), rooms: new Set() };

    for (let run = 0; run < RUNS; run++) {
      const url = server.url;
      let dead = false;
      const senders = Array.from({ length: SENDERS }, async (_, s) => {
        for (let i = 0; !dead; i++) {
          try {
            const answer = await restCall(url, 'send_message', { room_id: room.room_id, text_content: `r${run} s${s} #${i}` }, user.token);
            if (answer.body.ok) acked.add(answer.body.data.message.message_id);
          } catch {
            return; // connection refused or reset: the server is gone
          }
        }
      });
      const writer = snapshotWriter(url, run, room.room_id, snapshotAcks, () => dead);
      // Not a wait for an outcome: the kill lands at a random moment of the writes (the crash test's point).
      await new Promise((r) => setTimeout(r, 30 + Math.random() * 300));
      server.child.kill('SIGKILL');
      dead = true;
      await server.exited;
      await Promise.all([...senders, writer]);

      server = await spawnServer({ DATA_DIR: dataDir });
      const count = await checkFiles(dataDir, room.room_id, acked);
      checkSnapshots(dataDir, room.room_id, snapshotAcks);
      const next = await restCall(server.url, 'get_messages', { room_id: room.room_id, limit: 1 }, user.token);
      // The newest stored message is the restarted server's newest (none if no send got through).
      expect(next.body.data.messages.map((m: { seq: number }) => m.seq)).toEqual(count > 0 ? [count] : []);
    }
    server.child.kill('SIGTERM');
    expect((await server.exited).code).toBe(0);
    expect(acked.size).toBeGreaterThan(RUNS);
    expect(snapshotAcks.rooms.size).toBeGreaterThan(RUNS / 2);
  }, 600_000);
});
