// `npm run cluster -- [N]`: starts N local nodes (default 3) on one PostgreSQL for trying
// scale-out on one machine (docs/scale-out.md). Needs DATABASE_URL; the nodes share DATA_DIR
// (./data-cluster by default) and a LINK_SECRET made here, and listen on PORT, PORT+1, …
// (default 3001…). Ctrl-C stops them all.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { PACKAGE_ROOT } from '../src/paths.js';

const count = Number(process.argv[2] ?? 3);
const databaseUrl = process.env.DATABASE_URL;
if (!databaseUrl) {
  console.error('npm run cluster needs DATABASE_URL=postgres://user:password@host:5432/database');
  process.exit(1);
}
if (!Number.isInteger(count) || count < 1 || count > 16) {
  console.error(`the node count must be 1–16, got ${process.argv[2]}`);
  process.exit(1);
}
const basePort = Number(process.env.PORT ?? 3001);
const env = {
  ...process.env,
  STORE: 'postgres',
  DATABASE_URL: databaseUrl,
  DATA_DIR: process.env.DATA_DIR ?? path.join(process.cwd(), 'data-cluster'),
  LINK_SECRET: process.env.LINK_SECRET ?? randomBytes(32).toString('hex'),
  LOG_FORMAT: 'json',
};
const children: ChildProcess[] = [];
for (let i = 0; i < count; i++) {
  const port = basePort + i;
  const child = spawn(process.execPath, [path.join(PACKAGE_ROOT, 'dist', 'src', 'cli.js'), 'start'], {
    env: { ...env, PORT: String(port), ALLOWED_ORIGINS: `http://127.0.0.1:${port},http://localhost:${port}` },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  children.push(child);
  console.error(`node ${i + 1}: http://127.0.0.1:${port}`);
}
const stop = () => {
  for (const child of children) child.kill('SIGTERM');
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
await Promise.all(children.map((c) => new Promise((resolve) => c.once('exit', resolve))));
