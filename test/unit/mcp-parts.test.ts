// The small pure parts of the MCP layer: room resource URIs, the `token` argument split, the
// channel texts in the room language, and the stdio filter for lines that are not JSON.
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { jsonLinesOnly } from '../../src/mcp/stdio.js';
import { mentionContent, turnContent } from '../../src/transports/mcp-channel.js';
import { changedUris, parseRoomUri } from '../../src/transports/mcp-resources.js';
import { takeTokenArgument } from '../../src/transports/mcp-tools.js';

describe('room resource URIs', () => {
  it('parses the two resources of a room and nothing else', () => {
    expect(parseRoomUri('chatroom://rooms/r_abc')).toEqual({ roomId: 'r_abc', kind: 'state' });
    expect(parseRoomUri('chatroom://rooms/r_abc/messages')).toEqual({ roomId: 'r_abc', kind: 'messages' });
    for (const bad of ['chatroom://rooms/', 'chatroom://rooms/a/b', 'chatroom://rooms/../x', 'test://static-text', 'chatroom://rooms/a/messages/x']) {
      expect(parseRoomUri(bad)).toBeNull();
    }
  });

  it('says which resources an event changes', () => {
    const message = { event: 'message_new', room_id: 'r1', data: { message: {} } } as never;
    expect(changedUris(message)).toEqual(['chatroom://rooms/r1/messages', 'chatroom://rooms/r1']);
    expect(changedUris({ event: 'agent_turn', room_id: 'r1', data: {} } as never)).toEqual(['chatroom://rooms/r1']);
    expect(changedUris({ event: 'member_status_change', room_id: 'r1', data: {} } as never)).toEqual([]);
  });
});

describe('the token argument', () => {
  const authed = { name: 'send_message', public: false } as never;
  const open = { name: 'login', public: true } as never;

  it('is taken off an authed tool’s arguments', () => {
    expect(takeTokenArgument(authed, { room_id: 'r', token: ' tok ' })).toEqual({ args: { room_id: 'r' }, token: 'tok' });
    expect(takeTokenArgument(authed, { room_id: 'r' })).toEqual({ args: { room_id: 'r' }, token: null });
    expect(takeTokenArgument(authed, { room_id: 'r', token: 42 })).toEqual({ args: { room_id: 'r' }, token: null });
  });

  it('stays on a public tool, whose own argument it is (login {token})', () => {
    expect(takeTokenArgument(open, { token: 'tok' })).toEqual({ args: { token: 'tok' }, token: null });
  });
});

describe('channel texts', () => {
  const room = (language: string) => ({ room_id: 'r1', room_name: 'Lab', language }) as never;
  const turn = { can_skip: false, deadline: '2026-01-01T00:00:00.000Z' } as never;
  const last = { sender: 'Ann', text_content: '@bot what now?', seq: 7 } as never;

  it('write the turn in the room language, with how to answer', () => {
    const english = turnContent(room('en'), turn, last);
    expect(english).toContain('It is your turn in the room "Lab"');
    expect(english).toContain('Ann said');
    expect(english).toContain('must answer with send_message');
    expect(english).toContain('2026-01-01T00:00:00.000Z');
    const chinese = turnContent(room('zh-CN'), turn, last);
    expect(chinese).toContain('轮到你在房间「Lab」');
    expect(chinese).toContain('send_message');
  });

  it('write a mention in the room language', () => {
    expect(mentionContent(room('en'), last)).toContain('Ann mentioned you in the room "Lab"');
    expect(mentionContent(room('zh'), last)).toContain('Ann 在房间「Lab」');
  });
});

describe('stdin filter', () => {
  it('passes JSON lines and reports the others', async () => {
    const reported: string[] = [];
    const input = Readable.from(['{"jsonrpc":"2.0","method":"x"}\nnot json\n{"a"', ':1}\n\n']);
    let out = '';
    for await (const chunk of input.pipe(jsonLinesOnly((line) => reported.push(line)))) out += String(chunk);
    expect(out).toBe('{"jsonrpc":"2.0","method":"x"}\n{"a":1}\n');
    expect(reported).toEqual(['not json']);
  });
});
