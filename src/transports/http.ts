// REST gateway: POST /api/v1/tools/{name} serves the tool registry; plus health and the page.
import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import path from 'node:path';
import express, { type NextFunction, type Request, type Response } from 'express';
import helmet from 'helmet';
import { z } from 'zod';
import type { App } from '../app.js';
import { AppError } from '../errors.js';
import { PUBLIC_DIR } from '../paths.js';
import { defaultUploadIo, fileRoutes, type UploadIo } from './files.js';
import { bodyLimit, hostAllowed, hostRefused, sendError } from './http-util.js';
import type { Mount } from './mount.js';

const require = createRequire(import.meta.url);

/**
 * The page's ESM browser builds, found by Node's resolution so they are found wherever npm put
 * the packages (hoisted next to this package when it is installed as a dependency).
 * marked: its exports map sends "." (default condition) to lib/marked.esm.js.
 * dompurify: "." is dist/purify.es.mjs only under the "import" condition, which require.resolve
 * does not use; it resolves to dist/purify.cjs.js, and the ESM build sits next to it.
 * @highlightjs/cdn-assets: no exports map, so the ESM bundle's path resolves as is.
 */
export const VENDOR_FILES: Record<string, string> = {
  '/vendor/marked.esm.js': require.resolve('marked'),
  '/vendor/purify.es.mjs': path.join(path.dirname(require.resolve('dompurify')), 'purify.es.mjs'),
  // highlight.js's own prebuilt ESM bundle (common languages), for code blocks in messages.
  '/vendor/highlight.min.js': require.resolve('@highlightjs/cdn-assets/es/highlight.min.js'),
};

export interface HttpAppOptions {
  /** How uploads are written (tests inject a failing disk here). */
  uploadIo?: UploadIo;
}

export function createHttpApp(app: App, mounts: readonly Mount[] = [], options: HttpAppOptions = {}): express.Express {
  const http = express();
  http.disable('x-powered-by');
  // API answers are never cached; hashing every body for an ETag is wasted work.
  http.set('etag', false);
  http.set('trust proxy', false);
  http.use(
    helmet({
      contentSecurityPolicy: {
        useDefaults: true,
        directives: {
          'default-src': ["'self'"],
          'script-src': ["'self'"],
          'style-src': ["'self'"],
          'img-src': ["'self'", 'data:', 'blob:'],
          'connect-src': ["'self'", 'ws:', 'wss:'],
          'object-src': ["'none'"],
          'frame-ancestors': ["'none'"],
          // Over plain http on 127.0.0.1 an upgrade to https would break every request.
          'upgrade-insecure-requests': app.config.tlsCert ? [] : null,
        },
      },
      strictTransportSecurity: app.config.tlsCert ? undefined : false,
    }),
  );

  http.use((req, res, next) => {
    const incoming = req.get('x-request-id');
    res.locals.requestId = incoming && /^[\w.-]{1,64}$/.test(incoming) ? incoming : randomUUID();
    res.setHeader('X-Request-Id', res.locals.requestId as string);
    next();
  });

  const api = express.Router();
  // DNS-rebinding defence on every REST route, the same rule as the page and /mcp (SPEC §10).
  api.use((req, res, next) => {
    if (hostAllowed(app, req.get('host'))) return next();
    sendError(res, hostRefused(app, req.get('host')), app);
  });
  api.use(express.json({ limit: bodyLimit(app), strict: false }));

  api.get('/health', async (_req, res) => {
    try {
      const [rooms, messages] = await Promise.all([app.store.listRoomIds().then((ids) => ids.length), app.store.messageCount()]);
      res.json({ ok: true, data: { status: 'ok', rooms, messages } });
    } catch {
      res.status(500).json({ ok: false, error: { code: 'internal_error', message: 'Storage is not answering' } });
    }
  });

  // Prometheus text format; no message texts or tokens in it.
  api.get('/metrics', async (_req, res) => {
    res.type(app.metrics.registry.contentType).send(await app.metrics.text());
  });

  api.get('/tools', (_req, res) => {
    res.json({
      ok: true,
      data: {
        tools: app.registry.list().map((t) => ({
          name: t.name,
          description: t.description,
          public: t.public === true,
          input_schema: z.toJSONSchema(t.input, { io: 'input' }),
        })),
      },
    });
  });

  // POST /tools/{name} is served by rest-tools.ts before express sees the request.

  fileRoutes(app, api, options.uploadIo ?? defaultUploadIo);

  // Transports' own routes (e.g. /mcp) and extra API routes come before the API's 404.
  for (const mount of mounts) mount.routes?.(http, api);
  api.use((_req, res) => {
    sendError(res, new AppError('not_found', 'No such endpoint'), app);
  });
  // Body-parser errors (malformed JSON, too large) and anything else thrown in a route.
  api.use((err: unknown, _req: Request, res: Response, _next: NextFunction) => {
    const status = (err as { status?: number; type?: string }).status;
    const type = (err as { type?: string }).type;
    if (type === 'entity.too.large' || status === 413) {
      return sendError(res, new AppError('payload_too_large', 'Request body is too large'), app);
    }
    if (type === 'entity.parse.failed' || (status !== undefined && status >= 400 && status < 500)) {
      return sendError(res, new AppError('validation_error', 'Malformed JSON body'), app);
    }
    return sendError(res, err, app);
  });

  http.use('/api/v1', api);

  const pageHostCheck = (req: Request, res: Response, next: NextFunction) => {
    if (hostAllowed(app, req.get('host'))) return next();
    res
      .status(403)
      .type('text/plain')
      .send(`Host "${req.get('host') ?? ''}" is not allowed. Add it to ALLOWED_HOSTS to serve the page under that name.`);
  };
  // The page's libraries are served from their npm packages, not copied into public/.
  for (const [route, file] of Object.entries(VENDOR_FILES)) {
    http.get(route, pageHostCheck, (_req, res) => {
      res.type('text/javascript').sendFile(file, { maxAge: '1h' });
    });
  }
  http.use('/', pageHostCheck, express.static(PUBLIC_DIR, { index: 'index.html', fallthrough: true }));

  http.use((_req, res) => {
    res.status(404).json({ ok: false, error: { code: 'not_found', message: 'Not found' } });
  });
  return http;
}
