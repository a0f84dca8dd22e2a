// Composition root: open storage → build services → mount transports; start and stop.
import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { createApp, type App, type AppOptions } from './app.js';
import { withBoundPort, type Config } from './config.js';
import { preloadExportModules } from './export/preload.js';
import { createA2aMount, type A2aMountOptions } from './gateways/a2a/mount.js';
import { guardConnections } from './limits/connections.js';
import { announceListening, type Logger } from './logger.js';
import { createHttpApp } from './transports/http.js';
import { bodyLimit } from './transports/http-util.js';
import { isToolCall, serveToolCall } from './transports/rest-tools.js';
import { createMcpMount, type McpMountOptions } from './transports/mcp.js';
import type { Mount } from './transports/mount.js';
import { createWsMount, type WsOptions } from './transports/ws.js';

export interface ServerOptions extends AppOptions {
  /** WebSocket hub timers and limits (tests shorten them). */
  ws?: Partial<WsOptions>;
  /** MCP session limits (tests lower them). */
  mcp?: McpMountOptions;
  /** The rooms' A2A interface (tests lower the task bound). */
  a2a?: A2aMountOptions;
}

export interface RunningServer {
  app: App;
  server: http.Server | https.Server;
  port: number;
  url: string;
  /** Open sockets and subscribed rooms of the WebSocket hub. */
  wsStats(): { sockets: number; authenticated: number; rooms: number };
  /** Stop accepting, close sockets (1001), flush storage. Idempotent. */
  close(): Promise<void>;
}

export async function startServer(config: Config, logger: Logger, options: ServerOptions = {}): Promise<RunningServer> {
  // The export's heavy modules load while the store opens, before the server listens: their
  // synchronous module evaluation (0.1-0.3 s) then never stalls a request (export/preload.ts).
  const exportModules = preloadExportModules();
  const app = await createApp(config, logger, options);
  await exportModules;
  const ws = createWsMount(options.ws)(app);
  const mounts: Mount[] = [ws, createMcpMount(options.mcp)(app), createA2aMount(options.a2a)(app)];
  const expressApp = createHttpApp(app, mounts);
  const limit = bodyLimit(app);
  const handler: http.RequestListener = (req, res) => {
    if (isToolCall(req)) void serveToolCall(app, req, res, limit);
    else expressApp(req, res);
  };
  const server =
    config.tlsCert && config.tlsKey
      ? https.createServer({ cert: readFileSync(config.tlsCert), key: readFileSync(config.tlsKey) }, handler)
      : http.createServer(handler);
  // Connections per address capped, headers within HEADERS_TIMEOUT_MS, long keep-alive (SPEC §10).
  guardConnections(server, config);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  // Defaults that depend on the bound port (ALLOWED_ORIGINS) are known only now.
  app.config = withBoundPort(config, port);
  for (const mount of mounts) await mount.attach?.(server);
  const scheme = config.tlsCert ? 'https' : 'http';
  const url = `${scheme}://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`;
  announceListening(logger, { port, host: config.host, url, dataDir: config.dataDir, messages: await app.store.messageCount() });

  let closing: Promise<void> | null = null;
  return {
    app,
    server,
    port,
    url,
    wsStats: () => ws.stats?.() ?? { sockets: 0, authenticated: 0, rooms: 0 },
    close() {
      closing ??= (async () => {
        const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
        for (const mount of mounts) await mount.close?.();
        server.closeAllConnections?.();
        await stopped;
        await app.close();
        logger.info('stopped');
      })();
      return closing;
    },
  };
}
