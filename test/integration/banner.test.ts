// The start-up screen: a banner for a person at a terminal (a real pseudo-terminal through
// util-linux `script`), JSON lines otherwise and always with LOG_FORMAT=json.
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { banner, humanLine, logFormat } from '../../src/logger.js';
import { PACKAGE_ROOT } from '../../src/paths.js';
import { CLI } from '../helpers/process.js';


/** Starts the server under a pseudo-terminal; resolves with its output once `until` matches. */
async function startInTerminal(env: Record<string, string>, until: RegExp): Promise<string> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'banner-'));
  const child = spawn('script', ['-qfec', `${process.execPath} ${CLI} start`, '/dev/null'], {
    env: { ...process.env, PORT: '0', DATA_DIR: dataDir, ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
    detached: true,
  });
  let out = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  const exited = new Promise((resolve) => child.once('exit', resolve));
  try {
    await expect.poll(() => out, { timeout: 20_000, interval: 50 }).toMatch(until);
    return out;
  } finally {
    process.kill(-child.pid!, 'SIGTERM');
    await exited;
    await rm(dataDir, { recursive: true, force: true });
  }
}

describe('start-up screen', () => {
  it('at a terminal: a banner with the page, the MCP URL and the commands to bring agents in', async () => {
    const out = await startInTerminal({ LOG_FORMAT: '' }, /More: \S+docs\/agents\.md/);
    // The guide by its full path: the command runs from any directory (the package's own docs).
    expect(out).toContain(`More: ${path.join(PACKAGE_ROOT, 'docs', 'agents.md')}.`);
    const url = /Page {3}(http:\/\/127\.0\.0\.1:\d+)\//.exec(out)?.[1];
    expect(url).toBeDefined();
    expect(out).toContain(`MCP    ${url}/mcp`);
    expect(out).toContain(`agent-chatroom cli-agent --url ${url} --room <room_id> --name Claude --preset claude`);
    expect(out).toContain(`agent-chatroom agent --url ${url} --room <room_id> --name Qwen --model qwen2.5`);
    expect(out).not.toContain('"level"');
  });

  it('at a terminal with LOG_FORMAT=json: JSON lines', async () => {
    const out = await startInTerminal({ LOG_FORMAT: 'json' }, /"msg":"listening on/);
    expect(out).not.toContain('Agent Chatroom is running');
    expect(out).toMatch(/\{"level":30,"time":\d+,"port":\d+,"host":"127\.0\.0\.1","url":"http:\/\/127\.0\.0\.1:\d+"/);
  });

  it('chooses the format and writes readable lines', () => {
    expect(logFormat({}, true)).toBe('human');
    expect(logFormat({ LOG_FORMAT: 'json' }, true)).toBe('json');
    expect(logFormat({}, false)).toBe('json');
    expect(logFormat({ LOG_FORMAT: 'human' }, false)).toBe('human');
    const time = Date.parse('2026-01-02T03:04:05Z');
    const line = humanLine(JSON.stringify({ level: 40, time, msg: 'slow consumer', room_id: 'r1', count: 2 }));
    expect(line).toMatch(/^\d\d:\d\d:\d\d warn  slow consumer {2}room_id=r1 count=2\n$/);
    expect(banner({ port: 3000, host: '127.0.0.1', url: 'http://127.0.0.1:3000', dataDir: './data', messages: 0 })).toContain(
      'agent-chatroom cli-agent --room <room_id> --name Claude --preset claude',
    );
  });
});
