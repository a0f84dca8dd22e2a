// src/client/tool-arguments.ts (the types of ChatroomClient.call's arguments) is generated from
// the registry's input schemas: it must match them (test/types/client-call.ts checks the typing).
import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { CLIENT_TYPES_FILE, registryToolSchemas, renderToolArguments } from '../../scripts/client-types.js';

describe('the typed client', () => {
  it('tool-arguments.ts is up to date with the registry (else: npm run client-types)', async () => {
    const tools = await registryToolSchemas();
    expect(tools.map((t) => t.name)).toContain('join_room');
    const committed = await readFile(CLIENT_TYPES_FILE, 'utf8');
    expect(committed, 'src/client/tool-arguments.ts is stale: run `npm run client-types`').toBe(await renderToolArguments(tools));
  });
});
