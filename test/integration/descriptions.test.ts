// SPEC §7: the MCP server's instructions and the tool descriptions are in DEFAULT_LANGUAGE,
// Chinese by default and English when it is `en`, written for every tool.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mcpInstructions } from '../../src/mcp/instructions.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

const CJK = /[\u4e00-\u9fff]/;
let zh: TestServer;
let en: TestServer;

beforeAll(async () => {
  zh = await startTestServer({ defaultLanguage: 'zh-CN' });
  en = await startTestServer({ defaultLanguage: 'en' });
});
afterAll(async () => {
  await zh?.stop();
  await en?.stop();
});

async function tools(server: TestServer): Promise<Array<{ name: string; description: string }>> {
  const res = await fetch(`${server.url}/api/v1/tools`);
  return ((await res.json()) as any).data.tools;
}

describe('tool descriptions and MCP instructions in DEFAULT_LANGUAGE', () => {
  it('every tool is described in Chinese by default and in English with DEFAULT_LANGUAGE=en', async () => {
    const zhTools = await tools(zh);
    const enTools = await tools(en);
    expect(zhTools.map((t) => t.name)).toEqual(enTools.map((t) => t.name));
    expect(zhTools.length).toBeGreaterThan(25);
    for (const tool of zhTools) expect(tool.description, tool.name).toMatch(CJK);
    for (const tool of enTools) expect(tool.description, tool.name).not.toMatch(CJK);
    expect(enTools.find((t) => t.name === 'get_context')!.description).toContain('omitted');
    expect(zhTools.find((t) => t.name === 'get_context')!.description).toContain('omitted');
  });

  it('the instructions are written in both languages', () => {
    const zhText = mcpInstructions('zh-CN');
    const enText = mcpInstructions('en');
    expect(zhText).toMatch(CJK);
    expect(enText).not.toMatch(CJK);
    for (const text of [zhText, enText]) {
      for (const tool of ['register_agent', 'wait_for_turn', 'send_message', 'skip_response', 'get_messages', 'can_skip: false', 'end_turn: false']) expect(text).toContain(tool);
    }
    expect(mcpInstructions('en-GB')).toBe(enText);
    expect(mcpInstructions('zh-TW')).toBe(zhText);
  });
});
