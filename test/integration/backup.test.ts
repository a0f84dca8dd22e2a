// Backups of a live DATA_DIR and the restore path the README describes.
import { mkdtemp, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { restCall, runCli, spawnServer, userWithRoom } from '../helpers/process.js';
import { PACKAGE_ROOT } from '../../src/paths.js';
import { startTestServer, tempDataDir } from '../helpers/server.js';

describe('backup and restore', () => {
  it('copies a live DATA_DIR consistently while messages keep flowing, and a server starts on the copy', async () => {
    const dataDir = await tempDataDir();
    const live = await spawnServer({ DATA_DIR: dataDir });
    const { user, room } = await userWithRoom(live.url, 'Backer', 'Backed Up');
    // An agent member (round state in rooms.json) and an upload, both to come back from the copy.
    const agent = (await restCall(live.url, 'register_agent', { name: 'BackedAgent' })).body.data;
    await restCall(live.url, 'join_room', { room_id: room.room_id }, agent.token);
    const attachment = Buffer.from('设计文档 v1\n'.repeat(100));
    const form = new FormData();
    form.set('file', new Blob([attachment]), '设计.txt');
    const uploaded = await fetch(`${live.url}/api/v1/rooms/${room.room_id}/uploads`, {
      method: 'POST',
      headers: { authorization: `Bearer ${user.token}` },
      body: form,
    }).then((r) => r.json() as Promise<{ ok: boolean; data: { file_url: string } }>);
    expect(uploaded.ok).toBe(true);

    const ackedBeforeBackup = new Set<string>();
    let backupStarted = false;
    let stop = false;
    const writers = Array.from({ length: 8 }, async (_, w) => {
      for (let i = 0; !stop; i++) {
        const answer = await restCall(live.url, 'send_message', { room_id: room.room_id, text_content: `w${w}-${i}` }, user.token);
        if (!backupStarted) ackedBeforeBackup.add(answer.body.data.message.message_id);
      }
    });
    // Some traffic is acknowledged before the backup starts.
    await expect.poll(() => ackedBeforeBackup.size, { timeout: 10_000 }).toBeGreaterThanOrEqual(40);
    const target = path.join(await mkdtemp(path.join(os.tmpdir(), 'chatroom-backup-')), 'copy');
    backupStarted = true;
    const snapshotOfAcks = new Set(ackedBeforeBackup);
    const result = await runCli({ DATA_DIR: dataDir }, ['backup', target]);
    stop = true;
    await Promise.all(writers);
    expect(result.code).toBe(0);
    expect(result.output).toContain('Backed up');
    live.child.kill('SIGTERM');
    await live.exited;

    // Restore: start a server on the copy.
    const restored = await startTestServer({ dataDir: target });
    try {
      const seqs: number[] = [];
      const ids = new Set<string>();
      for (let after = 0; ; ) {
        const { messages } = await restored.ok('get_messages', { room_id: room.room_id, after_seq: after, limit: 200 }, user.token);
        if (messages.length === 0) break;
        for (const m of messages) {
          seqs.push(m.seq);
          ids.add(m.message_id);
        }
        after = messages.at(-1).seq;
      }
      expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, i) => i + 1));
      for (const id of snapshotOfAcks) expect(ids.has(id)).toBe(true);
      const next = await restored.ok('send_message', { room_id: room.room_id, text_content: 'after restore' }, user.token);
      expect(next.message.seq).toBe(seqs.length + 1);

      const restoredRoom = (await restored.ok('get_room', { room_id: room.room_id }, user.token)).room;
      expect(restoredRoom.members.map((m: { name: string }) => m.name)).toEqual(['Backer', 'BackedAgent']);
      expect(restoredRoom.current_round?.agent_queue).toContain('BackedAgent');
      const download = await fetch(restored.url + uploaded.data.file_url, { headers: { authorization: `Bearer ${user.token}` } });
      expect(download.status).toBe(200);
      expect(Buffer.from(await download.arrayBuffer()).equals(attachment)).toBe(true);
    } finally {
      await restored.stop();
    }
  });

  it('refuses a non-empty target', async () => {
    const dataDir = await tempDataDir();
    const target = await tempDataDir();
    await writeFile(path.join(target, 'keep.txt'), 'x');
    const result = await runCli({ DATA_DIR: dataDir }, ['backup', target]);
    expect(result.code).toBe(1);
    expect(result.output).toContain('not empty');
  });
});

describe('the command line of start and backup', () => {
  it('a bare agent-chatroom prints the help and starts nothing; the help says `start` serves', async () => {
    const dataDir = path.join(await tempDataDir(), 'never-created');
    const bare = await runCli({ DATA_DIR: dataDir }, []);
    expect(bare.code).toBe(0);
    expect(bare.output).toContain('agent-chatroom <command>');
    expect(bare.output).toMatch(/^\s+start\s+run the server/m);
    expect(bare.output).toContain('Without a command this help is printed and nothing starts');
    expect(bare.output).not.toContain('listening on');
    await expect(stat(dataDir)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('--help prints the usage and does nothing else; unknown flags and stray arguments are refused', async () => {
    const dataDir = path.join(await tempDataDir(), 'never-created');
    const startHelp = await runCli({ DATA_DIR: dataDir }, ['start', '--help']);
    expect(startHelp.code).toBe(0);
    expect(startHelp.output).toContain('Usage: agent-chatroom start');
    const backupHelp = await runCli({ DATA_DIR: dataDir }, ['backup', '--help']);
    expect(backupHelp.code).toBe(0);
    expect(backupHelp.output).toContain('Usage: agent-chatroom backup');
    // Neither served nor copied anything: no data directory, no backup named "--help".
    await expect(stat(dataDir)).rejects.toMatchObject({ code: 'ENOENT' });
    await expect(stat(path.join(PACKAGE_ROOT, '--help'))).rejects.toMatchObject({ code: 'ENOENT' });
    for (const args of [['start', '--port', '4000'], ['start', 'extra'], ['backup', 'a', 'b'], ['backup', '--to', 'x']]) {
      const refused = await runCli({ DATA_DIR: dataDir }, args);
      expect(refused.code, args.join(' ')).toBe(2);
      expect(refused.output).toContain('Usage: agent-chatroom');
    }
    const version = await runCli({}, ['--version']);
    expect(version.code).toBe(0);
    expect(version.output.trim()).toMatch(/^\d+\.\d+\.\d+/);
  });
});
