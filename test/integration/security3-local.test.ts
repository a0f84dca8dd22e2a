// Security, round three (SPEC §10, v3), what a local user can reach: runners never hand the token
// to the program they run and warn about --token on a command line; hooks read a binding only
// inside the project, only the user's own file that no one else may write; every REST call of
// the hooks and the client times out; hook input is capped; claude-init keeps the token file out
// of git.
import { spawn } from 'node:child_process';
import { chmod, chown, mkdir, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { signInOptions } from '../../src/agent/command.js';
import { childEnvironment, TOKEN_ON_COMMAND_LINE_WARNING } from '../../src/agent/secrets.js';
import { restCall } from '../../src/client/rest.js';
import { findProjectFile, PROJECT_FILE } from '../../src/hooks/config.js';
import { claudeInit } from '../../src/hooks/setup.js';
import { CLI } from '../helpers/process.js';
import { registerUser, serverAndWorkDirForFile } from '../helpers/server.js';

const shared = serverAndWorkDirForFile('sec3-local-');

describe('runners keep the token to themselves', () => {
  it('the child environment has no CHATROOM_TOKEN and no variable holding the token', () => {
    const token = 'act_secret-token-value-0123456789';
    const env = childEnvironment({ PATH: '/usr/bin', CHATROOM_TOKEN: token, OTHER: `Bearer ${token}`, HOME: '/home/x' }, token, { CHATROOM_URL: 'http://127.0.0.1:3000' });
    expect(env).toEqual({ PATH: '/usr/bin', HOME: '/home/x', CHATROOM_URL: 'http://127.0.0.1:3000' });
    expect(JSON.stringify(env)).not.toContain(token);
  });

  it('cli-agent runs its program without the token in its environment', async () => {
    const { ok } = shared.server;
    const person = await registerUser(shared.server, 'EnvOwner');
    const { room } = await ok('create_room', { room_name: 'Env Room' }, person.token);
    const dump = path.join(shared.work, 'child-env.json');
    const script = `require('fs').writeFileSync(${JSON.stringify(dump)}, JSON.stringify(process.env)); process.stdout.write('done')`;
    const { token } = await ok('register_agent', { name: 'EnvAgent' });
    await ok('join_room', { room_id: room.room_id }, token);
    const child = spawn(process.execPath, [CLI, 'cli-agent', '--url', shared.server.url, '--room', room.room_id, '--', process.execPath, '-e', script], {
      env: { ...process.env, CHATROOM_TOKEN: token, CHATROOM_STATE_DIR: path.join(shared.work, 'state') },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      await ok('send_message', { room_id: room.room_id, text_content: '@EnvAgent hello', mentions: ['EnvAgent'] }, person.token);
      await expect.poll(() => readFile(dump, 'utf8').catch(() => ''), { timeout: 20_000 }).not.toBe('');
      const seen = JSON.parse(await readFile(dump, 'utf8')) as Record<string, string>;
      expect(seen.CHATROOM_TOKEN).toBeUndefined();
      expect(JSON.stringify(seen)).not.toContain(token);
      expect(seen.CHATROOM_ROOM_ID).toBe(room.room_id);
    } finally {
      child.kill('SIGTERM');
    }
  }, 40_000);

  it('--token on a command line still works but warns; CHATROOM_TOKEN does not warn', () => {
    const write = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    try {
      expect(signInOptions({ token: 'act_x' }, {}).token).toBe('act_x');
      expect(write.mock.calls.map((c) => String(c[0]))).toContain(`${TOKEN_ON_COMMAND_LINE_WARNING}\n`);
      write.mockClear();
      expect(signInOptions({}, { CHATROOM_TOKEN: 'act_y' }).token).toBe('act_y');
      expect(write).not.toHaveBeenCalled();
    } finally {
      write.mockRestore();
    }
  });
});

describe('hook bindings come from the project only', () => {
  const binding = JSON.stringify({ url: 'http://attacker.example', token: 'act_planted', room_id: 'r' });

  it('stops at the repository root and at $HOME: a file planted in a shared parent is not read', async () => {
    const shared1777 = await mkdtemp(path.join(os.tmpdir(), 'sec3-shared-'));
    await chmod(shared1777, 0o1777);
    await writeFile(path.join(shared1777, PROJECT_FILE), binding, { mode: 0o600 });
    const repo = path.join(shared1777, 'repo');
    await mkdir(path.join(repo, '.git'), { recursive: true });
    await mkdir(path.join(repo, 'src', 'deep'), { recursive: true });
    expect(findProjectFile(path.join(repo, 'src', 'deep'), '/nonexistent-home')).toBeNull();
    // Inside the project it is found.
    await writeFile(path.join(repo, PROJECT_FILE), binding, { mode: 0o600 });
    expect(findProjectFile(path.join(repo, 'src', 'deep'), '/nonexistent-home')).toBe(path.join(repo, PROJECT_FILE));
    // $HOME ends the walk as the repository root does.
    const home = path.join(shared1777, 'home');
    await mkdir(path.join(home, 'work'), { recursive: true });
    expect(findProjectFile(path.join(home, 'work'), home)).toBeNull();
  });

  it('refuses a file that others may write, or that belongs to another user', async () => {
    const project = await mkdtemp(path.join(os.tmpdir(), 'sec3-project-'));
    await mkdir(path.join(project, '.git'));
    const file = path.join(project, PROJECT_FILE);
    await writeFile(file, binding, { mode: 0o600 });
    await chmod(file, 0o666);
    expect(findProjectFile(project, '/nonexistent-home')).toBeNull();
    await chmod(file, 0o620);
    expect(findProjectFile(project, '/nonexistent-home')).toBeNull();
    await chmod(file, 0o600);
    expect(findProjectFile(project, '/nonexistent-home')).toBe(file);
    // Only root can give a file away; as another user this process cannot make one to test with.
    if (process.getuid?.() === 0) {
      await chown(file, 4242, 4242);
      expect(findProjectFile(project, '/nonexistent-home')).toBeNull();
    }
  });

  it('claude-init creates .gitignore naming the token file when the project has none', async () => {
    const person = await registerUser(shared.server, 'InitOwner');
    const { room } = await shared.server.ok('create_room', { room_name: 'Init Room' }, person.token);
    const project = await mkdtemp(path.join(os.tmpdir(), 'sec3-init-'));
    await claudeInit({ url: shared.server.url, room: room.room_id, name: 'InitAgent', dir: project, stateDir: path.join(shared.work, 'state'), maxWaitS: 30, log: () => undefined });
    expect((await readFile(path.join(project, '.gitignore'), 'utf8')).split('\n')).toContain(PROJECT_FILE);
  });
});

describe('timeouts and caps', () => {
  it('a REST call to a server that never answers ends with a timeout', async () => {
    const silent = net.createServer((socket) => socket.on('error', () => undefined));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const port = (silent.address() as net.AddressInfo).port;
    try {
      await expect(restCall(`http://127.0.0.1:${port}`, 'get_context', {}, 'act_x', undefined, 300)).rejects.toMatchObject({ code: 'timeout' });
    } finally {
      silent.close();
    }
  });

  it('refuses hook input over the cap without reading it all', async () => {
    const child = spawn(process.execPath, [CLI, 'hook', 'claude-stop'], { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, CHATROOM_STATE_DIR: path.join(shared.work, 'state') } });
    // Listened for at once: the hook may exit while the input is still being written.
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.stdin.on('error', () => undefined);
    const chunk = Buffer.alloc(1024 * 1024, 0x20);
    for (let i = 0; i < 8 && !child.stdin.destroyed; i++) {
      if (!child.stdin.write(chunk)) await new Promise((r) => child.stdin.once('drain', r).once('close', r));
    }
    child.stdin.end();
    const code = await exited;
    expect(code).toBe(1);
    expect(stderr).toMatch(/larger than \d+ bytes/);
  }, 30_000);
});
