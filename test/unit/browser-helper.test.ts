// The browser tests' gate (test/helpers/browser.ts): outside CI a missing Chromium skips them
// with the reason printed; in CI it fails the run.
import { mkdtemp, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { chromiumAvailable } from '../helpers/browser.js';

describe('chromiumAvailable', () => {
  it('outside CI: false, saying why and what to install', () => {
    const lines: string[] = [];
    expect(chromiumAvailable({ CHROMIUM_PATH: '/nonexistent/chromium' }, (l) => lines.push(l))).toBe(false);
    expect(lines).toEqual([expect.stringContaining('Browser tests skipped: Chromium not found at /nonexistent/chromium')]);
    expect(lines[0]).toContain('apt-get install chromium fonts-noto-cjk');
  });

  it('in CI: a missing browser is an error, not a skip', () => {
    expect(() => chromiumAvailable({ CI: 'true', CHROMIUM_PATH: '/nonexistent/chromium' }, () => undefined)).toThrow(/never skip in CI/);
  });

  it('true when the binary is there, silently', async () => {
    const file = path.join(await mkdtemp(path.join(os.tmpdir(), 'chromium-')), 'chromium');
    await writeFile(file, '');
    const lines: string[] = [];
    expect(chromiumAvailable({ CHROMIUM_PATH: file }, (l) => lines.push(l))).toBe(true);
    expect(lines).toEqual([]);
  });
});
