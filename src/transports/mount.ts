// A transport that shares the HTTP server: it may add routes and handle upgrades.
import type http from 'node:http';
import type https from 'node:https';
import type express from 'express';
import type { App } from '../app.js';

export interface Mount {
  /** Adds routes: `http` is the root app (e.g. /mcp), `api` the /api/v1 router. */
  routes?(http: express.Express, api: express.Router): void;
  /** Called once the server listens (e.g. to handle WebSocket upgrades). */
  attach?(server: http.Server | https.Server): void | Promise<void>;
  /** Open sockets and subscribed rooms (the WebSocket mount). */
  stats?(): { sockets: number; authenticated: number; rooms: number };
  /** Stops accepting and closes its connections (WebSocket close 1001). */
  close?(): void | Promise<void>;
}

export type MountFactory = (app: App) => Mount;
