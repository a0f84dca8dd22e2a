// Child process of bench/ws.ts: runs one target so that its memory is measured alone.
//   chatroom — the real server (startServer) on a temporary DATA_DIR
//   relay    — a bare `ws` relay: auth_ok on any auth frame, and every send_message call
//              broadcast once-serialised as a message_new frame of the same shape
// IPC: → {cmd:'mem'} answers process.memoryUsage() after a full GC (run with --expose-gc);
//      → {cmd:'stop'} stops and exits. Sends {type:'ready', url} once listening.
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { WebSocketServer, type WebSocket } from 'ws';
import { testConfig } from '../src/config.js';
import { silentLogger } from '../src/logger.js';
import { startServer } from '../src/server.js';

type Mode = 'chatroom' | 'relay';

const mode = (process.argv[2] ?? 'chatroom') as Mode;

async function startChatroom(): Promise<{ url: string; stop(): Promise<void> }> {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'chatroom-wsbench-'));
  // Every bench subscriber shares one reader token (registering thousands of people would measure
  // registration, not fan-out), so the per-participant socket cap is lifted for this run.
  const running = await startServer(testConfig({ dataDir, port: 0, maxSocketsPerToken: 100_000, maxConnectionsPerAddress: 1_000_000, rateLimitRegisterPerHour: 0 }), silentLogger);
  return {
    url: running.url,
    async stop() {
      await running.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

async function startRelay(): Promise<{ url: string; stop(): Promise<void> }> {
  const server = http.createServer((_req, res) => res.writeHead(404).end());
  const wss = new WebSocketServer({ server, path: '/ws', perMessageDeflate: false, clientTracking: false });
  const authed = new Set<WebSocket>();
  let seq = 0;
  wss.on('connection', (ws) => {
    ws.on('message', (data) => {
      const frame = JSON.parse(data.toString()) as { type: string; id?: number; args?: { room_id: string; text_content: string } };
      if (frame.type === 'auth') {
        authed.add(ws);
        ws.send(JSON.stringify({ type: 'auth_ok', participant: { kind: 'user', id: randomUUID(), name: 'x', role: 'user' }, rooms: [] }));
      } else if (frame.type === 'call' && frame.args) {
        const message = {
          message_id: randomUUID(),
          room_id: frame.args.room_id,
          seq: ++seq,
          timestamp: new Date().toISOString(),
          sender: 'BenchHost',
          sender_id: randomUUID(),
          role: 'user',
          text_content: frame.args.text_content,
          text_content_i18n: null,
          source_language: 'zh-CN',
          file_url: '',
          file_type: '',
          mentions: [],
          visible: true,
          processed: false,
          response_to: null,
          display_timezone: 'Asia/Shanghai',
          round_id: null,
          skip_reason: null,
          deleted: false,
        };
        ws.send(JSON.stringify({ type: 'result', id: frame.id, ok: true, data: { message } }));
        // Encoded once and shared, like the hub does.
        const event = Buffer.from(JSON.stringify({ type: 'event', event: 'message_new', room_id: message.room_id, data: { message } }));
        for (const peer of authed) if (peer.readyState === 1) peer.send(event, { binary: false });
      }
    });
    ws.on('close', () => authed.delete(ws));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    stop: () =>
      new Promise<void>((resolve) => {
        wss.close();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const target = mode === 'relay' ? await startRelay() : await startChatroom();
const gc = (globalThis as { gc?: () => void }).gc;

process.on('message', (msg: { cmd: string }) => {
  if (msg.cmd === 'mem') {
    gc?.();
    gc?.();
    process.send!({ type: 'mem', usage: process.memoryUsage(), gc: gc !== undefined });
  } else if (msg.cmd === 'stop') {
    void target.stop().then(() => process.exit(0));
  }
});
process.send!({ type: 'ready', url: target.url });
