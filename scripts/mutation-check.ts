// Mutation check for the turn engine and presence (issue 42): each mutant changes one SPEC
// constant or one engine rule by a step (90 s → 60 s, 20 posts → 21, `>=` → `>`, …) and runs
// the unit tests that pin it; a mutant the tests do not notice "survives". Prints the score and
// exits 1 when any mutant survives (every mutant listed here is one the tests must kill).
//
// The mutants are applied to a copy of the package in a temporary directory (src/, test/ and the
// config files; node_modules linked), never to the working tree: an interrupted run leaves the
// checkout untouched. Run: `npx tsx scripts/mutation-check.ts` (about a minute on 2 cores).
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

interface Mutant {
  /** What SPEC says, and what the mutant changes it to. */
  name: string;
  file: string;
  /** Exact text that must occur once in `file`. */
  from: string;
  to: string;
  /** The unit test files that must fail with the mutant in place. */
  tests: string[];
}

const PRESENCE = 'src/identity/presence.ts';
const CORE = 'src/rounds/engine-core.ts';
const ENGINE = 'src/rounds/engine.ts';
const PRESENCE_TESTS = ['test/unit/presence.test.ts'];
const ENGINE_TESTS = ['test/unit/engine.test.ts', 'test/unit/engine.turns.test.ts', 'test/unit/engine.examples.test.ts'];

const MUTANTS: Mutant[] = [
  // Presence (SPEC §6): online 90 s after the last call, offline 15 s after the last socket closed.
  { name: 'presence window 90 s → 60 s', file: PRESENCE, from: 'PRESENCE_WINDOW_MS = 90_000', to: 'PRESENCE_WINDOW_MS = 60_000', tests: PRESENCE_TESTS },
  { name: 'presence window 90 s → 91 s', file: PRESENCE, from: 'PRESENCE_WINDOW_MS = 90_000', to: 'PRESENCE_WINDOW_MS = 91_000', tests: PRESENCE_TESTS },
  { name: 'socket grace 15 s → 2 s', file: PRESENCE, from: 'SOCKET_GRACE_MS = 15_000', to: 'SOCKET_GRACE_MS = 2_000', tests: PRESENCE_TESTS },
  { name: 'socket grace 15 s → 16 s', file: PRESENCE, from: 'SOCKET_GRACE_MS = 15_000', to: 'SOCKET_GRACE_MS = 16_000', tests: PRESENCE_TESTS },
  {
    name: 'presence: a closed socket waits the whole window, not the grace',
    file: PRESENCE,
    from: 'if (entry.sockets === 0) entry.closedAt = entry.lastActive;',
    to: 'if (entry.sockets === 0) entry.closedAt = 0;',
    tests: PRESENCE_TESTS,
  },
  {
    name: 'presence: a call after the close does not clear the grace',
    file: PRESENCE,
    from: 'entry.lastActive = this.now();\n    entry.closedAt = 0;\n    this.update(participantId, entry);\n  }\n\n  /** Keeps',
    to: 'entry.lastActive = this.now();\n    this.update(participantId, entry);\n  }\n\n  /** Keeps',
    tests: PRESENCE_TESTS,
  },
  // Room defaults and caps (SPEC §4, §8).
  { name: 'max_auto_rounds default 3 → 4', file: 'src/runtime/rooms.ts', from: 'DEFAULT_MAX_AUTO_ROUNDS = 3;', to: 'DEFAULT_MAX_AUTO_ROUNDS = 4;', tests: ['test/unit/runtime.test.ts'] },
  { name: 'max_auto_rounds default 3 → 2', file: 'src/runtime/rooms.ts', from: 'DEFAULT_MAX_AUTO_ROUNDS = 3;', to: 'DEFAULT_MAX_AUTO_ROUNDS = 2;', tests: ['test/unit/runtime.test.ts'] },
  { name: 'member cap 200 → 201', file: 'src/runtime/commands.ts', from: 'MAX_MEMBERS = 200;', to: 'MAX_MEMBERS = 201;', tests: ['test/unit/runtime.test.ts'] },
  { name: 'member cap 200 → 199', file: 'src/runtime/commands.ts', from: 'MAX_MEMBERS = 200;', to: 'MAX_MEMBERS = 199;', tests: ['test/unit/runtime.test.ts'] },
  { name: 'turn timeout default 3 min → 3 min + 1 s', file: 'src/config.ts', from: "'TURN_TIMEOUT_MS', 180_000,", to: "'TURN_TIMEOUT_MS', 181_000,", tests: ['test/unit/config.test.ts'] },
  // Turn engine (SPEC §6, §7).
  { name: '20-post cap → 21', file: CORE, from: 'MAX_POSTS_PER_TURN = 20;', to: 'MAX_POSTS_PER_TURN = 21;', tests: ENGINE_TESTS },
  { name: '20-post cap → 19', file: CORE, from: 'MAX_POSTS_PER_TURN = 20;', to: 'MAX_POSTS_PER_TURN = 19;', tests: ENGINE_TESTS },
  { name: 'extend_turn cap 3 → 4', file: CORE, from: 'MAX_EXTENSIONS = 3;', to: 'MAX_EXTENSIONS = 4;', tests: ENGINE_TESTS },
  { name: 'extend_turn cap 3 → 2', file: CORE, from: 'MAX_EXTENSIONS = 3;', to: 'MAX_EXTENSIONS = 2;', tests: ENGINE_TESTS },
  { name: 'follow-up needs 2 agents → 3', file: CORE, from: 'FOLLOW_UP_AGENTS = 2;', to: 'FOLLOW_UP_AGENTS = 3;', tests: ENGINE_TESTS },
  { name: 'follow-up needs 2 agents → 1 (a lone agent talks to itself)', file: CORE, from: 'FOLLOW_UP_AGENTS = 2;', to: 'FOLLOW_UP_AGENTS = 1;', tests: ENGINE_TESTS },
  {
    name: 'guard trips one answer late (< → <=)',
    file: CORE,
    from: 'if (r.guard_count < w.view.maxAutoRounds * w.view.agents.length) return false;',
    to: 'if (r.guard_count <= w.view.maxAutoRounds * w.view.agents.length) return false;',
    tests: ENGINE_TESTS,
  },
  {
    name: 'guard counts rounds, not rounds × agents',
    file: CORE,
    from: 'if (r.guard_count < w.view.maxAutoRounds * w.view.agents.length) return false;',
    to: 'if (r.guard_count < w.view.maxAutoRounds) return false;',
    tests: ENGINE_TESTS,
  },
  { name: 'a person does not reset the guard', file: CORE, from: '  r.guard_count = 0;\n  r.guard_tripped = false;', to: '  r.guard_tripped = false;', tests: ENGINE_TESTS },
  { name: 'a turn deadline is not the full timeout', file: CORE, from: 'turn.deadline = iso(w.ctx.now + w.view.turnTimeoutMs);', to: 'turn.deadline = iso(w.ctx.now + w.view.turnTimeoutMs - 1000);', tests: ENGINE_TESTS },
  { name: 'the post cap counts one post late', file: ENGINE, from: 'posted + 1 >= MAX_POSTS_PER_TURN', to: 'posted >= MAX_POSTS_PER_TURN', tests: ENGINE_TESTS },
  { name: 'the extension cap allows one more (>= → >)', file: ENGINE, from: 'if (used >= MAX_EXTENSIONS)', to: 'if (used > MAX_EXTENSIONS)', tests: ENGINE_TESTS },
];

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** A throwaway copy of what the unit tests need; node_modules is linked, not copied. */
function makeCopy(): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'mutation-'));
  for (const entry of ['src', 'test', 'public', 'package.json', 'tsconfig.json', 'vitest.config.ts']) {
    cpSync(path.join(root, entry), path.join(dir, entry), { recursive: true });
  }
  symlinkSync(path.join(root, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
  return dir;
}

/** Runs the test files in `dir`; true when they all pass. */
function testsPass(dir: string, tests: string[]): boolean {
  const run = spawnSync(process.execPath, [path.join(root, 'node_modules/vitest/vitest.mjs'), 'run', '--reporter=dot', ...tests], {
    cwd: dir,
    encoding: 'utf8',
    env: { ...process.env, FORCE_COLOR: '0' },
  });
  return run.status === 0;
}

function main(): void {
  const dir = makeCopy();
  try {
    const all = [...new Set(MUTANTS.flatMap((m) => m.tests))];
    if (!testsPass(dir, all)) {
      console.error('mutation check: the targeted tests fail without any mutant; fix them first');
      process.exit(1);
    }
    const survivors: string[] = [];
    for (const mutant of MUTANTS) {
      const file = path.join(dir, mutant.file);
      const original = readFileSync(file, 'utf8');
      const at = original.indexOf(mutant.from);
      if (at < 0 || original.indexOf(mutant.from, at + 1) >= 0) {
        // The source moved on: the mutant must be updated, or it would check nothing.
        console.error(`mutation check: "${mutant.name}": the text to change is not in ${mutant.file} exactly once`);
        process.exit(1);
      }
      writeFileSync(file, original.slice(0, at) + mutant.to + original.slice(at + mutant.from.length));
      const killed = !testsPass(dir, mutant.tests);
      writeFileSync(file, original);
      console.log(`${killed ? 'killed  ' : 'SURVIVED'}  ${mutant.name}`);
      if (!killed) survivors.push(mutant.name);
    }
    const killed = MUTANTS.length - survivors.length;
    console.log(`mutation score (turn engine, presence, room caps): ${killed}/${MUTANTS.length} killed (${Math.round((100 * killed) / MUTANTS.length)}%)`);
    if (survivors.length > 0) {
      console.error(`mutation check failed: ${survivors.length} mutant(s) survived; each must be killed by a test`);
      process.exitCode = 1;
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

main();
