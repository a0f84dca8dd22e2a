// Starts the real server on port 0 with a temporary DATA_DIR, and a small REST client.
import { mkdtemp, rm } from 'node:fs/promises';
import { afterAll, beforeAll, expect } from 'vitest';
import os from 'node:os';
import path from 'node:path';
import { testConfig, type Config } from '../../src/config.js';
import { silentLogger } from '../../src/logger.js';

import { startServer, type RunningServer, type ServerOptions } from '../../src/server.js';

export interface TestServer extends RunningServer {
  dataDir: string;
  call<T = any>(tool: string, args?: unknown, token?: string | null): Promise<ToolAnswer<T>>;
  /** Calls a tool and fails the test unless it succeeded. */
  ok<T = any>(tool: string, args?: unknown, token?: string | null): Promise<T>;
  stop(): Promise<void>;
}

export interface ToolAnswer<T> {
  status: number;
  body: { ok: true; data: T } | { ok: false; error: { code: string; message: string; details?: unknown } };
}

/**
 * Expects a REST call to be refused with `status` and the contract `code`, and the error to
 * carry no stack trace. The one helper for "this call fails like so".
 */
export async function expectError(call: Promise<ToolAnswer<unknown>>, status: number, code: string): Promise<void> {
  const answer = await call;
  expect({ status: answer.status, code: answer.body.ok ? 'ok' : answer.body.error.code }).toEqual({ status, code });
  if (!answer.body.ok) expect(JSON.stringify(answer.body.error)).not.toMatch(/at .*\.(ts|js):\d+/);
}

export async function tempDataDir(): Promise<string> {
  return mkdtemp(path.join(os.tmpdir(), 'chatroom-test-'));
}

/**
 * The store the servers of this test file keep their data in: the file store under their
 * DATA_DIR unless a file sets another (test/postgres/behaviour.test.ts runs the shared suites of
 * test/suites/ on PostgreSQL, a fresh database per server). Each test file runs in its own
 * process, so the choice stays within the file.
 */
export interface TestStore {
  /** Configuration for a server in this process (for example `{ store: { kind: 'postgres', … } }`). */
  config(): Promise<Partial<Config>>;
  /** Environment for a server process (spawnServer); call once per test and reuse it across restarts. */
  env(): Promise<Record<string, string>>;
}

let testStore: TestStore | undefined;

export function useTestStore(store: TestStore | undefined): void {
  testStore = store;
}

/** The environment that puts a server process on this file's store ({} = the file store). */
export function storeEnv(): Promise<Record<string, string>> {
  return testStore?.env() ?? Promise.resolve({});
}

export async function startTestServer(overrides: Partial<Config> = {}, options: ServerOptions = {}): Promise<TestServer> {
  const dataDir = overrides.dataDir ?? (await tempDataDir());
  const store = (await testStore?.config()) ?? {};
  // Suites register many participants, open many MCP sessions and fire hundreds of requests at
  // once, all from 127.0.0.1: the per-address limits of SPEC §10 are set out of reach here
  // (test/integration/abuse.test.ts sets them to test them).
  const perAddressLimits = {
    rateLimitRegisterPerHour: 1_000_000,
    rateLimitLoginPerMinute: 1_000_000,
    rateLimitMcpInitPerMinute: 1_000_000,
    maxConnectionsPerAddress: 100_000,
    maxConnections: 100_000,
  };
  const running = await startServer(testConfig({ dataDir, ...perAddressLimits, ...store, ...overrides }), silentLogger, options);
  const call = async <T>(tool: string, args: unknown = {}, token?: string | null): Promise<ToolAnswer<T>> => {
    const res = await fetch(`${running.url}/api/v1/tools/${tool}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: JSON.stringify(args),
    });
    return { status: res.status, body: (await res.json()) as ToolAnswer<T>['body'] };
  };
  return {
    ...running,
    dataDir,
    call,
    async ok<T>(tool: string, args: unknown = {}, token?: string | null): Promise<T> {
      const answer = await call<T>(tool, args, token);
      if (!answer.body.ok) throw new Error(`${tool} failed: ${answer.status} ${JSON.stringify(answer.body.error)}`);
      return answer.body.data;
    },
    async stop() {
      await running.close();
      if (!overrides.dataDir) await rm(dataDir, { recursive: true, force: true });
    },
  };
}

export async function registerAgent(server: TestServer, name: string): Promise<{ token: string; id: string; name: string }> {
  const data = await server.ok<{ agent_id: string; token: string }>('register_agent', { name });
  return { token: data.token, id: data.agent_id, name };
}

export async function registerUser(server: TestServer, name: string, password?: string): Promise<{ token: string; id: string; name: string }> {
  const data = await server.ok<{ user_id: string; token: string }>('register_user', { name, ...(password ? { password } : {}) });
  return { token: data.token, id: data.user_id, name };
}

/**
 * A room `creator` creates (`settings`: its name, or the create_room arguments), joined then
 * by each of `members` in order. Returns the room as create_room answered it.
 */
export async function createRoomWith(
  server: TestServer,
  creator: { token: string },
  settings: string | { room_name: string; [key: string]: unknown },
  members: ReadonlyArray<{ token: string }> = [],
): Promise<any> {
  const args = typeof settings === 'string' ? { room_name: settings } : settings;
  const { room } = await server.ok('create_room', args, creator.token);
  for (const member of members) await server.ok('join_room', { room_id: room.room_id }, member.token);
  return room;
}

/**
 * A test server and a scratch directory (`prefix` + random) for the whole test file: started
 * before its first test, stopped and removed after its last. Read the fields inside the tests.
 */
export function serverAndWorkDirForFile(prefix: string): { readonly server: TestServer; readonly work: string } {
  const shared = {} as { server: TestServer; work: string };
  beforeAll(async () => {
    shared.server = await startTestServer();
    shared.work = await mkdtemp(path.join(os.tmpdir(), prefix));
  });
  afterAll(async () => {
    await shared.server?.stop();
    if (shared.work) await rm(shared.work, { recursive: true, force: true });
  });
  return shared;
}

/**
 * Registers each of `members` (name → user or agent, in order); the first creates the room
 * (`settings`: its name, or the create_room arguments) and the others join it in order.
 */
export async function roomWithNewMembers(
  server: TestServer,
  settings: string | { room_name: string; [key: string]: unknown },
  members: Record<string, 'user' | 'agent'>,
): Promise<{ room: any; members: Array<{ token: string; id: string; name: string }> }> {
  const registered: Array<{ token: string; id: string; name: string }> = [];
  for (const [name, kind] of Object.entries(members)) registered.push(await (kind === 'user' ? registerUser(server, name) : registerAgent(server, name)));
  const [creator, ...others] = registered;
  const room = await createRoomWith(server, creator!, settings, others);
  return { room, members: registered };
}

/** A person's room (`settings` as for createRoomWith) joined by new agents of these names, in order. */
export async function roomWithAgents(
  server: TestServer,
  personName: string,
  settings: string | { room_name: string; [key: string]: unknown },
  agentNames: readonly string[],
): Promise<{ person: { token: string; id: string; name: string }; room: any; agents: Array<{ token: string; id: string; name: string }> }> {
  const person = await registerUser(server, personName);
  const agents: Array<{ token: string; id: string; name: string }> = [];
  for (const name of agentNames) agents.push(await registerAgent(server, name));
  return { person, room: await createRoomWith(server, person, settings, agents), agents };
}
