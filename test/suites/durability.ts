// "Acknowledged means durable": SIGKILL the real server right after acks, restart, compare. A
// suite function, run by test/integration/durability.test.ts on the file store and by
// test/postgres/behaviour.test.ts on PostgreSQL.
import { describe, expect, it } from 'vitest';
import { restCall, spawnServer, userWithRoom } from '../helpers/process.js';
import { storeEnv, tempDataDir } from '../helpers/server.js';

export function durabilitySuites(): void {
  describe('durability across SIGKILL', () => {
    it('keeps every acknowledged message across SIGKILL: 300 concurrent sends, seq 1..300, next is 301', async () => {
      const dataDir = await tempDataDir();
      // The same store across the restart (a PostgreSQL run gives a database here).
      const store = await storeEnv();
      const first = await spawnServer({ DATA_DIR: dataDir, ...store });
      const { user, room } = await userWithRoom(first.url, 'Writer', 'Durable');

      const acked = new Map<string, number>();
      let killed = false;
      await Promise.all(
        Array.from({ length: 300 }, async (_, i) => {
          const answer = await restCall(first.url, 'send_message', { room_id: room.room_id, text_content: `message ${i}` }, user.token);
          expect(answer.body.ok).toBe(true);
          acked.set(answer.body.data.message.message_id, answer.body.data.message.seq);
          if (acked.size === 300) {
            first.child.kill('SIGKILL');
            killed = true;
          }
        }),
      );
      expect(killed).toBe(true);
      expect((await first.exited).signal).toBe('SIGKILL');

      // The lock of the killed process is stale: the new server takes it over.
      const second = await spawnServer({ DATA_DIR: dataDir, ...store });
      try {
        const page1 = await restCall(second.url, 'get_messages', { room_id: room.room_id, after_seq: 0, limit: 200 }, user.token);
        const page2 = await restCall(second.url, 'get_messages', { room_id: room.room_id, after_seq: 200, limit: 200 }, user.token);
        const messages = [...page1.body.data.messages, ...page2.body.data.messages];
        expect(messages.map((m: { seq: number }) => m.seq)).toEqual(Array.from({ length: 300 }, (_, i) => i + 1));
        for (const m of messages) expect(acked.get(m.message_id)).toBe(m.seq);
        expect(new Set(messages.map((m: { text_content: string }) => m.text_content)).size).toBe(300);
        const next = await restCall(second.url, 'send_message', { room_id: room.room_id, text_content: 'after restart' }, user.token);
        expect(next.body.data.message.seq).toBe(301);
      } finally {
        second.child.kill('SIGTERM');
        expect((await second.exited).code).toBe(0);
      }
    });
  });
}
