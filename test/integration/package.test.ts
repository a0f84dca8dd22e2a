// The package as a user gets it: `npm pack` (which builds dist/ through `prepack`), installed
// globally into a temporary prefix and into a fresh ESM project, then used from other
// directories: `agent-chatroom mcp` answers MCP tools/list over stdio, and
// `import { ChatroomClient } from 'agent-chatroom/client'` type-checks and completes a turn.
// Slow by nature (a TypeScript build and two installs from the local npm cache): one test.
import { execFile } from 'node:child_process';
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { describe, expect, it } from 'vitest';
import { PACKAGE_ROOT } from '../../src/paths.js';
import { createRoomWith, registerAgent, registerUser, serverAndWorkDirForFile } from '../helpers/server.js';

const run = promisify(execFile);
const NPM = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const quiet = ['--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error'];

const shared = serverAndWorkDirForFile('package-test-');

const TURN_SCRIPT = `import { ChatroomClient } from 'agent-chatroom/client';
const [url, token] = process.argv.slice(2);
const client = new ChatroomClient({ url, token });
const me = await client.connect();
client.on('message_new', async ({ message }) => {
  if (message.sender !== me.name) return;
  console.log('posted: ' + message.text_content);
  await client.close();
});
client.onTurn((turn) => ({ text: 'hello from the installed package, ' + turn.context.room.room_name }));
console.log('ready as ' + me.name);
`;

const TYPED_SCRIPT = `import { ChatroomClient, ChatroomError, type TurnAnswer, type TurnInfo } from 'agent-chatroom/client';
const client = new ChatroomClient({ url: 'http://127.0.0.1:3000', token: 'act_x', turnMarginMs: 500 });
client.onTurn((turn: TurnInfo): TurnAnswer => (turn.can_skip ? { skip: true, reason: 'nothing to add' } : { text: turn.context.room.room_name }));
client.on('message_new', (data) => console.log(data.message.seq + 1));
const err: ChatroomError = new ChatroomError('closed', 'x');
// @ts-expect-error an answer needs text or skip
const wrong: TurnAnswer = { txt: 'x' };
// call's arguments are typed from the tools' schemas: a room id is a string.
// @ts-expect-error room_id is a string
void client.call('join_room', { room_id: 1234 });
void client.call('join_room', { room_id: 'design-20260101120000-k3j9x0a1b2' });
console.log(err.code, wrong);
`;

describe('the npm package', () => {
  it('packs, installs globally and into a project, and works from any directory', { timeout: 420_000 }, async () => {
    const packDir = path.join(shared.work, 'pack');
    await mkdir(packDir);
    await run(NPM, ['pack', '--pack-destination', packDir, '--loglevel=error'], { cwd: PACKAGE_ROOT, maxBuffer: 64 * 1024 * 1024 });
    const tarball = path.join(packDir, (await readdir(packDir)).find((f) => f.endsWith('.tgz'))!);
    const { stdout: listing } = await run('tar', ['-tzf', tarball]);
    const files = listing.split('\n');
    expect(files).toContain('package/dist/src/cli.js');
    expect(files).toContain('package/dist/src/client/index.d.ts');
    expect(files).toContain('package/public/index.html');
    // What the shipped README links to ships too.
    expect(files).toEqual(expect.arrayContaining(['package/README.md', 'package/BENCHMARKS.md', 'package/LICENSE', 'package/docs/agents.md']));
    expect(files.some((f) => f.startsWith('package/test/') || f.startsWith('package/src/'))).toBe(false);

    const prefix = path.join(shared.work, 'prefix');
    const project = path.join(shared.work, 'fresh-project');
    await mkdir(project);
    await writeFile(path.join(project, 'package.json'), JSON.stringify({ name: 'fresh-project', version: '1.0.0', type: 'module', private: true }));
    await Promise.all([
      run(NPM, ['install', '-g', '--prefix', prefix, tarball, ...quiet], { cwd: shared.work }),
      run(NPM, ['install', tarball, ...quiet], { cwd: project }),
    ]);

    // 1. The global command, started from a directory that has nothing to do with the package.
    const elsewhere = path.join(shared.work, 'elsewhere');
    await mkdir(elsewhere);
    const transport = new StdioClientTransport({
      command: path.join(prefix, 'bin', 'agent-chatroom'),
      args: ['mcp', '--url', shared.server.url],
      cwd: elsewhere,
      stderr: 'ignore',
    });
    const mcp = new Client({ name: 'package-test', version: '1.0.0' });
    await mcp.connect(transport);
    try {
      const names = (await mcp.listTools()).tools.map((t) => t.name);
      expect(names).toEqual(expect.arrayContaining(['register_agent', 'join_room', 'wait_for_turn', 'send_message', 'skip_response', 'get_context']));
    } finally {
      await mcp.close();
    }
    const help = await run(path.join(prefix, 'bin', 'agent-chatroom'), ['help'], { cwd: elsewhere });
    expect(help.stdout).toContain('cli-agent --room R --name N --preset claude|codex|gemini');
    expect(help.stdout).toContain('a2a-agent --room R --name N --card CARD_URL');

    // 2. The typed client in a fresh ESM project: its types check (strict, library files included)…
    await writeFile(path.join(project, 'typed.ts'), TYPED_SCRIPT);
    await writeFile(
      path.join(project, 'tsconfig.json'),
      JSON.stringify({ compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext', target: 'ES2022', strict: true, noEmit: true, skipLibCheck: false, types: [], lib: ['ES2022', 'DOM'] }, files: ['typed.ts'] }),
    );
    await run(process.execPath, [path.join(PACKAGE_ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.json'], { cwd: project });

    // …and it completes a turn.
    const person = await registerUser(shared.server, 'PackPerson');
    const agent = await registerAgent(shared.server, 'PackAgent');
    const room = await createRoomWith(shared.server, person, 'Package room', [agent]);
    await writeFile(path.join(project, 'turn.mjs'), TURN_SCRIPT);
    const turn = run(process.execPath, ['turn.mjs', shared.server.url, agent.token], { cwd: project, timeout: 30_000 });
    await expect.poll(async () => (await shared.server.ok('get_room', { room_id: room.room_id }, person.token)).room.members.find((m: { name: string }) => m.name === 'PackAgent')?.status, { timeout: 15_000 }).toBe('online');
    await shared.server.ok('send_message', { room_id: room.room_id, text_content: 'Is the package working?' }, person.token);
    const { stdout } = await turn;
    expect(stdout).toContain('ready as PackAgent');
    expect(stdout).toContain('posted: hello from the installed package, Package room');
    const messages = (await shared.server.ok('get_messages', { room_id: room.room_id }, person.token)).messages as Array<{ sender: string; text_content: string }>;
    expect(messages.at(-1)).toMatchObject({ sender: 'PackAgent', text_content: 'hello from the installed package, Package room' });
  });
});
