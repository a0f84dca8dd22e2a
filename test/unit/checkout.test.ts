// The checkout stays clean after the documented steps: `npm pack` (docs/agents.md, README) writes
// agent-chatroom-<version>.tgz into it, and git must not offer it for a commit.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { PACKAGE_ROOT } from '../../src/paths.js';

describe('the checkout', () => {
  it('ignores the tarball npm pack leaves in it', () => {
    const { name, version } = JSON.parse(readFileSync(path.join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { name: string; version: string };
    const tarball = `${name}-${version}.tgz`;
    // `git check-ignore` prints the path and exits 0 when it is ignored (1 when it is not).
    expect(execFileSync('git', ['check-ignore', tarball], { cwd: PACKAGE_ROOT, encoding: 'utf8' }).trim()).toBe(tarball);
  });
});
