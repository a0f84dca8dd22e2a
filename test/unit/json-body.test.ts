// Large REST bodies are parsed in slices (src/transports/json-body.ts): the value, and which
// bodies are refused, must be JSON.parse's. Bodies are cut into small pieces here, so that
// every structure, string, escape and multi-byte character falls across piece boundaries.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseJsonBody } from '../../src/transports/json-body.js';

const sliced = (text: string | Buffer, pieceBytes = 7) =>
  parseJsonBody(typeof text === 'string' ? Buffer.from(text, 'utf8') : text, { slicedFrom: 0, pieceBytes });

/** JSON.parse's verdict on the bytes: the value, or that it throws. */
function reference(bytes: Buffer): { value: unknown } | 'throws' {
  try {
    return { value: JSON.parse(bytes.toString('utf8')) };
  } catch {
    return 'throws';
  }
}

async function verdict(bytes: Buffer, pieceBytes: number): Promise<{ value: unknown } | 'throws'> {
  try {
    return { value: await parseJsonBody(bytes, { slicedFrom: 0, pieceBytes }) };
  } catch (err) {
    expect(err).toBeInstanceOf(SyntaxError);
    return 'throws';
  }
}

describe('parseJsonBody', () => {
  it('parses any JSON value as JSON.parse does, whatever the piece size', async () => {
    await fc.assert(
      fc.asyncProperty(fc.jsonValue(), fc.integer({ min: 1, max: 40 }), fc.constantFrom(0, 2), async (value, pieceBytes, indent) => {
        const text = JSON.stringify(value, null, indent);
        expect(await sliced(text, pieceBytes)).toEqual(JSON.parse(text));
      }),
      { numRuns: 400 },
    );
  });

  it('refuses exactly the bodies JSON.parse refuses (cut, mutated, or with bytes added)', async () => {
    const body = fc.tuple(fc.jsonValue(), fc.integer({ min: 0, max: 1000 }), fc.constantFrom('', ' ', '}', ']', ',', '"', '\\', '{', '[', ':', 'x', '\u00e9', '\u00a0', '\u2028', '\ufeff', ' 1', '\n{}'));
    await fc.assert(
      fc.asyncProperty(body, fc.integer({ min: 1, max: 16 }), fc.constantFrom('cut', 'insert', 'replace', 'append', 'prepend'), async ([value, at, extra], pieceBytes, how) => {
        const text = JSON.stringify({ data: value, more: [1, 'два', { x: null }] });
        const i = at % (text.length + 1);
        const changed =
          how === 'cut' ? text.slice(0, i)
          : how === 'insert' ? text.slice(0, i) + extra + text.slice(i)
          : how === 'replace' ? text.slice(0, i) + extra + text.slice(i + 1)
          : how === 'append' ? text + extra
          : extra + text;
        const bytes = Buffer.from(changed, 'utf8');
        expect(await verdict(bytes, pieceBytes)).toEqual(reference(bytes));
      }),
      { numRuns: 1500 },
    );
  });

  it('decodes like Buffer#toString: multi-byte characters split across pieces, invalid UTF-8, a byte-order mark', async () => {
    const text = JSON.stringify({ text: '一段很长的讨论内容 🎉 émoji ✓'.repeat(20), list: ['中', '😀'] });
    for (let piece = 1; piece <= 8; piece++) expect(await sliced(text, piece)).toEqual(JSON.parse(text));
    // Invalid bytes inside a string become U+FFFD, as JSON.parse of Buffer#toString sees them.
    const invalid = Buffer.concat([Buffer.from('{"a":"x'), Buffer.from([0xff, 0xe4, 0xb8]), Buffer.from('y"}')]);
    expect(await sliced(invalid, 1)).toEqual(JSON.parse(invalid.toString('utf8')));
    // U+FEFF (a byte-order mark) outside a string: JSON.parse refuses it anywhere, so does the
    // sliced parse (its tokenizer skipped it at the start and after { or [). Inside a string it
    // stays (the tokenizer's decoder dropped one that began a string or a piece).
    for (const text of ['\ufeff{"a":1}', '{\ufeff"a":1}', '[\ufeff1]', '[1,\ufeff2]', '{"a":1}\ufeff', '{"a"\ufeff:1}']) {
      for (const piece of [1, 2, 3, 64]) await expect(sliced(text, piece)).rejects.toBeInstanceOf(SyntaxError);
    }
    for (const text of ['{"a":"x\ufeffy"}', '["\\\\\ufeff"]', '["x\\ufeff"]', '["\ufeff\ufeff", "\ufeffa"]', '["\\uFEFFa", "\\uFeFf"]']) {
      for (const piece of [1, 2, 3, 64]) expect(await sliced(text, piece)).toEqual(JSON.parse(text));
    }
    await expect(sliced('["\\\ufeff"]', 1)).rejects.toBeInstanceOf(SyntaxError);
    await expect(sliced('   ', 1)).rejects.toBeInstanceOf(SyntaxError);
  });

  it('keeps a "__proto__" key as an own property, as JSON.parse does, never as a prototype', async () => {
    const hostile = '{"data":{"a":1,"__proto__":{"has_password":true},"b":2,"c":{"__proto__":5}}}';
    for (const pieceBytes of [1, 5, 1 << 20]) {
      const value = (await sliced(hostile, pieceBytes)) as any;
      expect(value).toEqual(JSON.parse(hostile));
      expect(Object.getPrototypeOf(value.data)).toBe(Object.prototype);
      expect(Object.keys(value.data)).toEqual(['a', '__proto__', 'b', 'c']);
      expect(Object.getOwnPropertyDescriptor(value.data.c, '__proto__')?.value).toBe(5);
    }
    expect(({} as Record<string, unknown>).has_password).toBeUndefined();
  });

  it('agrees with JSON.parse on the edge cases of the grammar', async () => {
    const cases = ['"\\ud800"', '"\u0001"', '"a\u0001b"', '01', '-', '-0', '1.', '.5', '1e', '1E+2', '1e-7', '[1,]', '{"a":1,}', '[,1]', 'tru', 'nul', 'null', '"\\x"', '"\\u12"', '"\\u12g4"', '1 2', '[] []', '{} ', ' {}\n\t\r ', '\u00a0{}', '{}\u00a0', '{"a" 1}', '{"a":}', '{a:1}', "{'a':1}", 'NaN', 'Infinity', '"\\/"', '"\\b\\f\\n\\r\\t"', '12345678901234567890123', '1e400', '-1e-400', '[[[[[]]]]]', '[[[[[]]]]', '{"a":[{"b":[]}]}', '""', '"', '"\\"', '[1 2]', '{"a":1 "b":2}', 'true false', '[true,false,null]'];
    for (const text of cases) {
      const bytes = Buffer.from(text, 'utf8');
      for (const pieceBytes of [1, 2, 3, 64]) expect({ text, pieceBytes, verdict: await verdict(bytes, pieceBytes) }).toEqual({ text, pieceBytes, verdict: reference(bytes) });
    }
  });

  it('parses small bodies with JSON.parse at once', async () => {
    expect(await parseJsonBody(Buffer.from('{"room_id":"r"}'))).toEqual({ room_id: 'r' });
    await expect(parseJsonBody(Buffer.from('{"room_id":'))).rejects.toBeInstanceOf(SyntaxError);
  });
});
