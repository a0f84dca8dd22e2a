// The state records a DATA_DIR holds right now, read the way the server reads them at start:
// a snapshot (agents.json, users.json, rooms.json) with the state journal replayed over it
// (journal/state-*.jsonl in order; a record's last line is its newest version; a torn last line
// is left out). The snapshots are checkpoints that trail the journal by up to about a second
// (SPEC §5), so a test that reads what an acknowledged call stored reads through the journal.
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';

type Kind = 'agents' | 'users' | 'rooms';
const LINE_TYPE: Record<Kind, string> = { agents: 'agent', users: 'user', rooms: 'room' };
const ID: Record<Kind, string> = { agents: 'agent_id', users: 'user_id', rooms: 'room_id' };

export async function storedRecords<T = Record<string, any>>(dataDir: string, kind: Kind): Promise<T[]> {
  const byId = new Map<string, T>();
  const id = ID[kind];
  for (const record of JSON.parse(await readFile(path.join(dataDir, `${kind}.json`), 'utf8')) as Record<string, any>[]) byId.set(record[id], record as T);
  const dir = path.join(dataDir, 'journal');
  const files = (await readdir(dir).catch(() => [] as string[])).filter((f) => /^state-\d+\.jsonl$/.test(f)).sort();
  for (const file of files) {
    const lines = (await readFile(path.join(dir, file), 'utf8')).split('\n');
    for (const line of lines) {
      if (line === '') continue;
      let entry: { t: string; r: Record<string, any> };
      try {
        entry = JSON.parse(line);
      } catch {
        continue; // a torn last line (a write cut by a kill): not stored
      }
      if (entry.t === LINE_TYPE[kind]) byId.set(entry.r[id], entry.r as T);
    }
  }
  return [...byId.values()];
}

/** Every byte of state the DATA_DIR holds: the three snapshots and the journal files, as text. */
export async function storedStateText(dataDir: string): Promise<string> {
  const parts: string[] = [];
  for (const name of ['agents.json', 'users.json', 'rooms.json']) parts.push(await readFile(path.join(dataDir, name), 'utf8'));
  const dir = path.join(dataDir, 'journal');
  for (const file of (await readdir(dir).catch(() => [] as string[])).sort()) parts.push(await readFile(path.join(dir, file), 'utf8'));
  return parts.join('\n');
}
