// The a2a-agent command line: credentials for the remote agent, checked without echoing them.
import { describe, expect, it } from 'vitest';
// @ts-expect-error plain JS module of the page (checked by tsconfig.public.json)
import { agentCommands } from '../../public/agent-commands.js';
import { parseA2aAgentArgs } from '../../src/a2a-agent/run.js';
import { parseHeader } from '../../src/a2a-agent/remote.js';

const base = ['--room', 'r1', '--name', 'Remote', '--card', 'https://agent.example/.well-known/agent-card.json'];

describe('a2a-agent arguments', () => {
  it('reads the card, repeated --header and --bearer-env into the headers sent to the remote agent', () => {
    const options = parseA2aAgentArgs([...base, '--header', 'X-Api-Key: abc:def', '--header', 'X-Team: blue', '--bearer-env', 'REMOTE_TOKEN'], { REMOTE_TOKEN: 'tok-1' });
    expect(options).toMatchObject({
      rooms: ['r1'],
      name: 'Remote',
      card: 'https://agent.example/.well-known/agent-card.json',
      headers: { 'X-Api-Key': 'abc:def', 'X-Team': 'blue', Authorization: 'Bearer tok-1' },
    });
  });

  it('needs --card, and a set --bearer-env variable', () => {
    expect(() => parseA2aAgentArgs(['--room', 'r1', '--name', 'Remote'], {})).toThrow(/--card/);
    expect(() => parseA2aAgentArgs([...base, '--bearer-env', 'MISSING'], {})).toThrow(/MISSING is not set/);
  });

  it('refuses a malformed header without repeating its value', () => {
    expect(() => parseHeader('no colon secret-value')).toThrow(/Name: value/);
    let message = '';
    try {
      parseHeader('Bad Name: secret-value');
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toMatch(/Name: value/);
    expect(message).not.toContain('secret-value');
    expect(() => parseHeader('X-Empty:')).toThrow(/Name: value/);
    expect(parseHeader('Authorization: Bearer x y')).toEqual(['Authorization', 'Bearer x y']);
  });

  it("takes the page's add-agent line as it is, once the card URL is filled in", () => {
    for (const hasPassword of [false, true]) {
      const { a2a } = agentCommands({ url: 'http://127.0.0.1:3000', roomId: 'r-1', name: 'Alpha', preset: 'claude', hasPassword }) as { a2a: string };
      const argv = a2a
        .replace('<CARD_URL>', 'https://agent.example/.well-known/agent-card.json')
        .replace('<PASSWORD>', 'pw')
        .split(' ')
        .slice(2); // agent-chatroom a2a-agent
      expect(parseA2aAgentArgs(argv, {})).toMatchObject({
        url: 'http://127.0.0.1:3000',
        rooms: ['r-1'],
        name: 'Alpha',
        card: 'https://agent.example/.well-known/agent-card.json',
        ...(hasPassword ? { roomPassword: 'pw' } : {}),
      });
    }
  });

  it('prints the usage for --help', () => {
    expect(parseA2aAgentArgs(['--help'], {})).toBe('help');
  });
});
