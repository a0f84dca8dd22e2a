// The cli-agent's pieces on their own: the presets read each CLI's real output format, the child
// runner kills a whole process group, the failure texts people see, and the command line.
import { execFileSync } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runChild } from '../../src/cli-agent/child.js';
import { parseCliAgentArgs, describeFailure } from '../../src/cli-agent/run.js';
import { claudePreset, codexPreset, geminiPreset, parsePlainOutput } from '../../src/cli-agent/presets.js';
import { parseStdioArgs } from '../../src/mcp/stdio.js';
import { PACKAGE_ROOT } from '../../src/paths.js';

const mcp = { configPath: '/tmp/x/mcp.json', command: '/usr/bin/node', args: ['/pkg/cli.js', 'mcp', '--url', 'http://h:1'], env: { CHATROOM_TOKEN: 'act_t' } };

describe('presets', () => {
  it('claude: flags, resume and MCP; reads the JSON result and its session id', () => {
    expect(claudePreset.plan({ sessionId: null, mcp: null }).args).toEqual(['-p', '--output-format', 'json']);
    expect(claudePreset.plan({ sessionId: 's-1', mcp }).args).toEqual([
      '-p',
      '--output-format',
      'json',
      '--resume',
      's-1',
      '--mcp-config',
      '/tmp/x/mcp.json',
      '--allowedTools',
      'mcp__chatroom__send_message,mcp__chatroom__get_context,mcp__chatroom__get_full_message,mcp__chatroom__search_messages,mcp__chatroom__get_messages',
    ]);
    const ok = JSON.stringify({ type: 'result', subtype: 'success', is_error: false, duration_ms: 1998, num_turns: 1, result: 'Hello', session_id: 'abc', total_cost_usd: 0.01 });
    expect(claudePreset.parse(`${ok}\n`)).toEqual({ text: 'Hello', sessionId: 'abc' });
    const failed = JSON.stringify({ type: 'result', subtype: 'error_max_turns', is_error: true, result: '', session_id: 'abc' });
    expect(claudePreset.parse(failed)).toEqual({ text: '', error: 'error_max_turns', sessionId: 'abc' });
    // stream-json ends with the same result object.
    const stream = [JSON.stringify({ type: 'system', subtype: 'init', session_id: 'abc' }), JSON.stringify({ type: 'assistant', message: {} }), ok].join('\n');
    expect(claudePreset.parse(stream)).toEqual({ text: 'Hello', sessionId: 'abc' });
    expect(claudePreset.parse('')).toEqual({ text: '' });
    expect(claudePreset.parse('Error: not logged in').error).toMatch(/no JSON in the output: Error: not logged in/);
  });

  it('codex: exec --json, resume and -c MCP overrides; reads the JSON lines', () => {
    expect(codexPreset.plan({ sessionId: null, mcp: null }).args).toEqual(['exec', '--json', '--skip-git-repo-check', '-']);
    const args = codexPreset.plan({ sessionId: 'th-1', mcp }).args;
    expect(args.slice(-3)).toEqual(['resume', 'th-1', '-']);
    expect(args).toContain('mcp_servers.chatroom.command="/usr/bin/node"');
    expect(args).toContain('mcp_servers.chatroom.args=["/pkg/cli.js","mcp","--url","http://h:1"]');
    expect(args).toContain('mcp_servers.chatroom.env.CHATROOM_TOKEN="act_t"');
    const lines = [
      { type: 'thread.started', thread_id: '0199a213-81c0-7800-8aa1-bbab2a035a53' },
      { type: 'turn.started' },
      { type: 'item.completed', item: { id: 'item_0', type: 'reasoning', text: '**thinking**' } },
      { type: 'item.completed', item: { id: 'item_1', type: 'command_execution', command: 'ls', aggregated_output: 'a', status: 'completed' } },
      { type: 'item.completed', item: { id: 'item_2', type: 'agent_message', text: 'Done.' } },
      { type: 'turn.completed', usage: { input_tokens: 1, cached_input_tokens: 0, output_tokens: 1 } },
    ];
    expect(codexPreset.parse(lines.map((l) => JSON.stringify(l)).join('\n'))).toEqual({ text: 'Done.', sessionId: '0199a213-81c0-7800-8aa1-bbab2a035a53' });
    const failed = [{ type: 'thread.started', thread_id: 't' }, { type: 'turn.started' }, { type: 'turn.failed', error: { message: 'stream disconnected' } }];
    expect(codexPreset.parse(failed.map((l) => JSON.stringify(l)).join('\n'))).toEqual({ text: '', sessionId: 't', error: 'stream disconnected' });
    expect(codexPreset.parse(JSON.stringify({ type: 'error', message: 'unauthorized' })).error).toBe('unauthorized');
  });

  it('gemini: --output-format json -p; reads {response} or plain text', () => {
    expect(geminiPreset.plan({ sessionId: 'ignored', mcp: null }).args.slice(0, 3)).toEqual(['--output-format', 'json', '-p']);
    expect(geminiPreset.parse(JSON.stringify({ response: 'Paris.', stats: { models: {} } }, null, 2))).toEqual({ text: 'Paris.' });
    expect(geminiPreset.parse(JSON.stringify({ response: '', error: { type: 'ApiError', message: 'quota', code: 429 } }))).toEqual({ text: '', error: 'quota' });
    expect(geminiPreset.parse('Plain answer\n')).toEqual({ text: 'Plain answer' });
    expect(parsePlainOutput('  hi \n')).toEqual({ text: 'hi' });
  });
});

describe('the child runner', () => {
  it('kills the whole process group when the signal aborts', async () => {
    const marker = `runner-test-${process.pid}-${Date.now()}`;
    const controller = new AbortController();
    const script = `process.stdout.write('started\\n'); require('node:child_process').spawn(process.execPath, ['-e', 'setInterval(()=>{},1000)', '${marker}'], { stdio: 'ignore' }); setInterval(()=>{},1000);`;
    const pending = runChild({ command: process.execPath, args: ['-e', script], stdin: '', signal: controller.signal, graceMs: 300 });
    // The helper's own command line (the parent's has the marker in quotes).
    const helper = `setInterval(()=>{},1000) ${marker}`;
    await expect.poll(() => execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8' }).includes(helper), { timeout: 5000 }).toBe(true);
    controller.abort();
    const result = await pending;
    expect(result.killed).toBe(true);
    expect(result.stdout).toBe('started\n'); // written before the helper started
    const left = () => execFileSync('ps', ['-eo', 'stat,args'], { encoding: 'utf8' }).split('\n').filter((l) => l.includes(marker) && !l.startsWith('Z'));
    await expect.poll(left, { timeout: 3000 }).toEqual([]);
  });

  it('feeds stdin, reports exit codes and programs that do not exist', async () => {
    const echo = await runChild({ command: process.execPath, args: ['-e', 'process.stdin.pipe(process.stdout)'], stdin: 'prompt text' });
    expect(echo).toMatchObject({ code: 0, stdout: 'prompt text', killed: false });
    const crash = await runChild({ command: process.execPath, args: ['-e', 'console.error("boom\\nreally"); process.exit(4)'], stdin: '' });
    expect(describeFailure('node', crash)).toBe('node exited with code 4: really');
    const missing = await runChild({ command: path.join(PACKAGE_ROOT, 'no-such-cli'), args: [], stdin: 'x' });
    expect(describeFailure('no-such-cli', missing)).toMatch(/^cannot start no-such-cli: .*ENOENT/);
    expect(describeFailure('claude', { ...echo, killed: true })).toBe('claude did not finish before the deadline and was stopped');
    expect(describeFailure('claude', echo, 'rate limited')).toBe('claude reported an error: rate limited');
    expect(describeFailure('claude', echo)).toBeNull();
  });
});

describe('command lines', () => {
  it('cli-agent: the command after "--", presets, and clear refusals', () => {
    const options = parseCliAgentArgs(['--room', 'r1', '--name', 'Cla', '--preset', 'claude', '--', '/opt/claude', '--model', 'sonnet'], {});
    expect(options).toMatchObject({ rooms: ['r1'], name: 'Cla', preset: 'claude', command: ['/opt/claude', '--model', 'sonnet'], url: 'http://127.0.0.1:3000', mcp: false });
    expect(parseCliAgentArgs(['--room', 'r', '--', 'ollama', 'run', 'llama3'], { CHATROOM_TOKEN: 'act_x', CHATROOM_URL: 'http://h:9' })).toMatchObject({
      token: 'act_x',
      url: 'http://h:9',
      preset: null,
      command: ['ollama', 'run', 'llama3'],
    });
    expect(() => parseCliAgentArgs(['--name', 'X', '--preset', 'claude'], {})).toThrow(/--room/);
    expect(() => parseCliAgentArgs(['--room', 'r', '--preset', 'claude'], {})).toThrow(/--name/);
    expect(() => parseCliAgentArgs(['--room', 'r', '--name', 'X', '--preset', 'claude', '--cwd', '/nonexistent/dir'], {})).toThrow('--cwd /nonexistent/dir is not a directory');
    expect(parseCliAgentArgs(['--room', 'r', '--name', 'X', '--preset', 'claude', '--cwd', os.tmpdir()], {})).toMatchObject({ cwd: path.resolve(os.tmpdir()) });
    expect(() => parseCliAgentArgs(['--room', 'r', '--name', 'X'], {})).toThrow(/--preset or the command/);
    expect(() => parseCliAgentArgs(['--room', 'r', '--name', 'X', '--preset', 'gemini', '--mcp'], {})).toThrow(/--mcp works with/);
    expect(parseCliAgentArgs(['--help'], {})).toBe('help');
  });

  it('mcp: the token from --token, CHATROOM_TOKEN or a --config file', () => {
    expect(parseStdioArgs(['--url', 'http://h:1'], { CHATROOM_TOKEN: 'act_env' })).toEqual({ url: 'http://h:1/mcp', token: 'act_env' });
    expect(parseStdioArgs(['--token', 'act_flag'], { CHATROOM_TOKEN: 'act_env' })).toMatchObject({ token: 'act_flag' });
    // The page's channel entry passes "${CHATROOM_TOKEN:-}": unset in the shell, it arrives empty
    // and the proxy waits for register_agent or login instead of sending an empty token.
    expect(parseStdioArgs(['--url', 'http://h:1'], { CHATROOM_TOKEN: '' })).toEqual({ url: 'http://h:1/mcp', token: null });
    expect(() => parseStdioArgs(['--config', '/no/such/file.json'], {})).toThrow(/--config: cannot read/);
  });
});
