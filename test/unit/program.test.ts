// requireProgram (src/agent/program.ts): every runner checks the program it will start, at start.
import { chmod, mkdtemp, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { StartError } from '../../src/agent/connect.js';
import { requireProgram } from '../../src/agent/program.js';

describe('requireProgram', () => {
  it('finds a program on PATH or by its path (relative to the directory it will run in)', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'program-test-'));
    const script = path.join(dir, 'my-cli');
    await writeFile(script, '#!/bin/sh\necho hi\n');
    await chmod(script, 0o755);
    expect(requireProgram('my-cli', { pathEnv: dir })).toBe(script);
    expect(requireProgram('./my-cli', { cwd: dir, pathEnv: '' })).toBe(script);
    expect(requireProgram(script, { pathEnv: '' })).toBe(script);
  });

  it('names the missing program and what to install, in one line', async () => {
    const empty = await mkdtemp(path.join(os.tmpdir(), 'program-test-'));
    const missing = () => requireProgram('claude', { install: 'Claude Code (npm install -g @anthropic-ai/claude-code)', pathEnv: empty });
    expect(missing).toThrow(StartError);
    expect(missing).toThrow('Cannot find the program "claude" on PATH: install Claude Code (npm install -g @anthropic-ai/claude-code), or give its path after "--"');
    expect(() => requireProgram('no-such-cli', { pathEnv: empty })).toThrow('Cannot find the program "no-such-cli" on PATH');
    // A file that is not executable is not a program.
    const plain = path.join(empty, 'notes.txt');
    await writeFile(plain, 'x');
    await chmod(plain, 0o644);
    expect(() => requireProgram(plain)).toThrow(`Cannot run ${plain}: not an executable file`);
  });
});
