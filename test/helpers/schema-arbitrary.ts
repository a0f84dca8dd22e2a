// fast-check arbitraries generated from the tools' JSON Schemas (zod v4 `z.toJSONSchema`): the
// fuzz suite covers every argument of every tool as the tool declares it, with values that fit
// the schema (so the handlers run, not only the validator), values just outside it (one past a
// length or range limit, the wrong type, a missing required key, an unknown key) and real ids
// from the fixture where an argument names one.
import fc from 'fast-check';

export type JsonSchema = {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  items?: JsonSchema;
  minItems?: number;
  maxItems?: number;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  format?: string;
  enum?: unknown[];
  const?: unknown;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  allOf?: JsonSchema[];
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  default?: unknown;
};

/** Values from the fixture, by argument name: an id that exists makes the handler do real work. */
export type Hints = Record<string, readonly unknown[]>;

/** Anything at all, for "wrong type" cases. */
const anyValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.string({ maxLength: 20 }),
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.string({ maxLength: 5 }), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 5 }), fc.string({ maxLength: 5 }), { maxKeys: 2 }),
);

/** Strings that stress a text field: scripts, emoji, controls, markup, lookalikes. */
const nastyString: fc.Arbitrary<string> = fc.oneof(
  fc.string({ unit: 'grapheme', maxLength: 30 }),
  fc.string({ unit: 'binary', maxLength: 30 }),
  fc.constantFrom('', ' ', '@', '@@@@', '\u0000', '\u202e', '<script>alert(1)</script>', '../../etc/passwd', '%00', '${x}', '{{x}}', '中文，测试。', '😀‍💻', 'A\u0301', '\u0410lice', '\ud800'),
);

function patternString(pattern: string): fc.Arbitrary<string> | null {
  for (const flags of ['', 'u']) {
    try {
      const arb = fc.stringMatching(new RegExp(pattern, flags));
      fc.sample(arb, { numRuns: 1, seed: 1 });
      return arb;
    } catch {
      // not a pattern fast-check can generate from: try the next flags, then give up
    }
  }
  return null;
}

function stringArb(schema: JsonSchema): fc.Arbitrary<string> {
  const min = schema.minLength ?? 0;
  const max = schema.maxLength ?? Math.max(min, 64);
  const fitting = schema.pattern ? patternString(schema.pattern) : null;
  const sized = fc.string({ minLength: min, maxLength: Math.min(max, min + 64) });
  const options: Array<fc.WeightedArbitrary<string>> = [
    { weight: 4, arbitrary: fitting ?? sized },
    { weight: 1, arbitrary: nastyString },
  ];
  if (schema.format === 'uuid') options.push({ weight: 2, arbitrary: fc.uuid() });
  // Just inside and just outside the length limits.
  if (schema.maxLength !== undefined && schema.maxLength <= 100_000) {
    options.push({ weight: 1, arbitrary: fc.constantFrom('x'.repeat(schema.maxLength), '中'.repeat(schema.maxLength + 1)) });
  }
  if (min > 0) options.push({ weight: 1, arbitrary: fc.constant('x'.repeat(min - 1)) });
  return fc.oneof(...options);
}

function numberArb(schema: JsonSchema, integer: boolean): fc.Arbitrary<number> {
  const min = schema.minimum ?? (schema.exclusiveMinimum !== undefined ? schema.exclusiveMinimum + 1 : -1e9);
  const max = schema.maximum ?? (schema.exclusiveMaximum !== undefined ? schema.exclusiveMaximum - 1 : 1e9);
  const inside = integer ? fc.integer({ min: Math.max(min, Number.MIN_SAFE_INTEGER), max: Math.min(max, Number.MAX_SAFE_INTEGER) }) : fc.double({ min, max, noNaN: true });
  return fc.oneof(
    { weight: 4, arbitrary: inside },
    { weight: 1, arbitrary: fc.constantFrom(min, max, min - 1, max + 1, 0.5, -0, Number.MAX_SAFE_INTEGER + 2) },
  );
}

/** An arbitrary for values of `schema`: mostly fitting, sometimes just outside. */
export function schemaArbitrary(schema: JsonSchema, hints: Hints = {}, depth = 0): fc.Arbitrary<unknown> {
  const fitting = fittingArbitrary(schema, hints, depth);
  return fc.oneof({ weight: 9, arbitrary: fitting }, { weight: 1, arbitrary: anyValue });
}

function fittingArbitrary(schema: JsonSchema, hints: Hints, depth: number): fc.Arbitrary<unknown> {
  if (schema.const !== undefined) return fc.constant(schema.const);
  if (schema.enum) return fc.oneof({ weight: 5, arbitrary: fc.constantFrom(...schema.enum) }, { weight: 1, arbitrary: nastyString });
  const alternatives = schema.anyOf ?? schema.oneOf;
  if (alternatives && alternatives.length > 0) return fc.oneof(...alternatives.map((s) => schemaArbitrary(s, hints, depth + 1)));
  if (schema.allOf && schema.allOf.length > 0) return fittingArbitrary(Object.assign({}, ...schema.allOf), hints, depth);
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  switch (type) {
    case 'string':
      return stringArb(schema);
    case 'integer':
      return numberArb(schema, true);
    case 'number':
      return numberArb(schema, false);
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array': {
      if (depth > 4) return fc.constant([]);
      const items = schema.items ? schemaArbitrary(schema.items, hints, depth + 1) : anyValue;
      const min = schema.minItems ?? 0;
      const max = schema.maxItems ?? min + 5;
      return fc.oneof(
        { weight: 4, arbitrary: fc.array(items, { minLength: min, maxLength: Math.min(max, min + 5) }) },
        // One more entry than allowed.
        { weight: 1, arbitrary: fc.array(items, { minLength: max + 1, maxLength: max + 1 }) },
      );
    }
    case 'object':
      return depth > 4 ? fc.constant({}) : objectArbitrary(schema, hints, depth);
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}

function objectArbitrary(schema: JsonSchema, hints: Hints, depth: number): fc.Arbitrary<Record<string, unknown>> {
  const properties = schema.properties ?? {};
  const required = new Set(schema.required ?? []);
  const fields = Object.fromEntries(
    Object.entries(properties).map(([key, sub]) => {
      const known = hints[key];
      const value = schemaArbitrary(sub, hints, depth + 1);
      return [key, known && known.length > 0 ? fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...known) }, { weight: 2, arbitrary: value }) : value];
    }),
  );
  const record = fc.record(fields, { requiredKeys: Object.keys(properties).filter((k) => required.has(k)) });
  return fc.oneof(
    { weight: 12, arbitrary: record },
    // A required key left out.
    {
      weight: 1,
      arbitrary: record.chain((value) => {
        const keys = Object.keys(value).filter((k) => required.has(k));
        return keys.length === 0 ? fc.constant(value) : fc.constantFrom(...keys).map((k) => omit(value, k));
      }),
    },
    // A key the schema does not know.
    { weight: 1, arbitrary: fc.tuple(record, fc.string({ minLength: 1, maxLength: 12 }), anyValue).map(([value, key, extra]) => ({ ...value, [key]: extra })) },
  );
}

function omit(value: Record<string, unknown>, key: string): Record<string, unknown> {
  const { [key]: _dropped, ...rest } = value;
  return rest;
}
