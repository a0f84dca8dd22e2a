// `agent-chatroom start --env-file FILE` (SPEC §2): settings from dotenv files, repeatable, the
// process environment winning; a missing file or a bad line stops start-up with one line.
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { EnvFileError, environmentWithFiles, parseEnvFile } from '../../src/env-file.js';
import { PACKAGE_ROOT } from '../../src/paths.js';
import { restOk, runCli, spawnServer } from '../helpers/process.js';

let work: string;
beforeAll(async () => {
  work = await mkdtemp(path.join(os.tmpdir(), 'env-file-'));
});
afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

describe('dotenv files', () => {
  it('reads KEY=VALUE lines, comments, quotes and export', () => {
    const vars = parseEnvFile(
      'x.env',
      ['# production', '', 'PORT=8080', 'export HOST=0.0.0.0', "DATA_DIR='/srv/chat data'", 'NOTE="two\\nlines" # why', 'EMPTY=', 'TZ_NAME=Asia/Shanghai # comment'].join('\n'),
    );
    expect(vars).toEqual({ PORT: '8080', HOST: '0.0.0.0', DATA_DIR: '/srv/chat data', NOTE: 'two\nlines', EMPTY: '', TZ_NAME: 'Asia/Shanghai' });
  });

  it('names the file and the line of a bad line', () => {
    expect(() => parseEnvFile('prod.env', 'PORT=1\nthis is not a setting\n')).toThrow(/prod\.env, line 2/);
    expect(() => parseEnvFile('prod.env', 'A="never closed\n')).toThrow(/prod\.env, line 1/);
    expect(() => parseEnvFile('prod.env', '1BAD=x')).toThrow(EnvFileError);
  });

  it('the example production.env of docs/configuration.md is a valid configuration', async () => {
    const doc = await readFile(path.join(PACKAGE_ROOT, 'docs', 'configuration.md'), 'utf8');
    const example = /## Example: `production\.env`\s+```sh\n([\s\S]*?)```/.exec(doc)?.[1];
    expect(example).toBeDefined();
    const config = loadConfig(parseEnvFile('production.env', example!));
    expect(config.dataDir).toBe('/var/lib/agent-chatroom');
    expect(config.allowedHosts).toContain('chat.example.com');
  });

  it('a later file overrides an earlier one; the environment wins over both', async () => {
    const a = path.join(work, 'a.env');
    const b = path.join(work, 'b.env');
    await writeFile(a, 'PORT=1111\nHOST=a.example\nLOG_LEVEL=debug\n');
    await writeFile(b, 'PORT=2222\n');
    expect(environmentWithFiles([a, b], { LOG_LEVEL: 'warn', OTHER: undefined })).toEqual({ PORT: '2222', HOST: 'a.example', LOG_LEVEL: 'warn' });
  });
});

describe('agent-chatroom start --env-file', () => {
  it('starts with the settings of the files, the environment winning', async () => {
    const dataA = path.join(work, 'data-a');
    const dataB = path.join(work, 'data-b');
    const base = path.join(work, 'base.env');
    const production = path.join(work, 'production.env');
    // PORT in a file loses to the environment's PORT=0 (spawnServer sets it).
    await writeFile(base, `PORT=1\nDATA_DIR=${dataA}\nDEFAULT_LANGUAGE=en\n`);
    await writeFile(production, `DATA_DIR=${dataB}\n`);
    const server = await spawnServer({}, ['start', '--env-file', base, '--env-file', production]);
    try {
      expect(server.port).not.toBe(1);
      expect(existsSync(dataB)).toBe(true);
      expect(existsSync(dataA)).toBe(false);
      // DEFAULT_LANGUAGE=en from the first file: errors about no room are English.
      const user = await restOk(server.url, 'register_user', { name: 'EnvPerson' });
      const res = await fetch(`${server.url}/api/v1/tools/create_room`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${user.token}` },
        body: '{}',
      });
      const body = (await res.json()) as any;
      expect(body.error.code).toBe('validation_error');
      expect(body.error.message).not.toMatch(/[\u4e00-\u9fff]/);
    } finally {
      server.child.kill('SIGTERM');
      await server.exited;
    }
  });

  it('a missing file stops start-up with one line naming it', async () => {
    const missing = path.join(work, 'nope.env');
    const { code, output } = await runCli({}, ['start', '--env-file', missing]);
    // Node 20 itself also reads a --env-file after the script name and stops first (exit 9,
    // "node: FILE: not found"); newer Node leaves it to the command (exit 1). Either way: one line.
    expect(code).not.toBe(0);
    expect(output.trim().split('\n')).toHaveLength(1);
    expect(output).toContain(missing);
  });

  it('a bad line stops start-up with one line naming the file and the line', async () => {
    const bad = path.join(work, 'bad.env');
    await writeFile(bad, '# ok\nPORT=0\nnot a setting\n');
    const { code, output } = await runCli({}, ['start', '--env-file', bad]);
    expect(code).toBe(1);
    expect(output.trim().split('\n')).toHaveLength(1);
    expect(output).toContain(`${bad}, line 3`);
  });

  it('an invalid setting from a file is reported like one from the environment', async () => {
    const file = path.join(work, 'invalid.env');
    await writeFile(file, 'TURN_TIMEOUT_MS=5\n');
    const { code, output } = await runCli({}, ['start', '--env-file', file]);
    expect(code).toBe(1);
    expect(output).toMatch(/TURN_TIMEOUT_MS/);
  });
});
