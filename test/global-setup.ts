// Transpiles src/ once before the suite (esbuild, about a second): tests that run the server as
// a child process (SIGKILL, restart, CLI) start the compiled server, which starts far faster
// than through tsx. Type checking is `npm run typecheck`'s job, not this one's.
import path from 'node:path';
import { build } from 'esbuild';
import { PACKAGE_ROOT } from '../src/paths.js';

export const TEST_DIST = path.join(PACKAGE_ROOT, '.test-dist');

export default async function setup(): Promise<void> {
  await build({
    entryPoints: [path.join(PACKAGE_ROOT, 'src/**/*.ts')],
    outdir: path.join(TEST_DIST, 'src'),
    format: 'esm',
    platform: 'node',
    target: 'node20',
    sourcemap: 'inline',
    logLevel: 'warning',
  });
}
