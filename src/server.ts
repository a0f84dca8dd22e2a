// Composition root: open storage → build services → mount transports; start and stop.
import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { createApp, type App, type AppOptions } from './app.js';
import { withBoundPort, type Config } from './config.js';
import { guardConnections } from './limits/connections.js';
import type { Logger } from './logger.js';
import { createHttpApp } from './transports/http.js';
import { bodyLimit } from './transports/http-util.js';
import { isToolCall, serveToolCall } from './transports/rest-tools.js';
import { mcpMount } from './transports/mcp.js';
import type { MountFactory } from './transports/mount.js';
import { wsMount } from './transports/ws.js';

export interface RunningServer {
  app: App;
  server: http.Server | https.Server;
  port: number;
  url: string;
  /** Stop accepting, close sockets (1001), flush storage. Idempotent. */
  close(): Promise<void>;
}

const mountFactories: MountFactory[] = [wsMount, mcpMount];

export async function startServer(config: Config, logger: Logger, options: AppOptions = {}): Promise<RunningServer> {
  const app = await createApp(config, logger, options);
  const mounts = mountFactories.map((factory) => factory(app));
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
  logger.info({ port, host: config.host, url, dataDir: config.dataDir, messages: app.store.messageCount() }, `listening on ${url}`);

  let closing: Promise<void> | null = null;
  return {
    app,
    server,
    port,
    url,
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
