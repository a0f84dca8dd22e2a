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

/** Mutants of one file that the same tests must kill, one row each: [what changes, the exact text, its replacement]. */
function mutantsOf(file: string, tests: string[], rows: Array<[name: string, from: string, to: string]>): Mutant[] {
  return rows.map(([name, from, to]) => ({ name, file, from, to, tests }));
}

const RUNTIME_TESTS = ['test/unit/runtime.test.ts'];

const MUTANTS: Mutant[] = [
  // Presence (SPEC §6): online 90 s after the last call, offline 15 s after the last socket closed.
  ...mutantsOf(PRESENCE, PRESENCE_TESTS, [
    ['presence window 90 s → 60 s', 'PRESENCE_WINDOW_MS = 90_000', 'PRESENCE_WINDOW_MS = 60_000'],
    ['presence window 90 s → 91 s', 'PRESENCE_WINDOW_MS = 90_000', 'PRESENCE_WINDOW_MS = 91_000'],
    ['socket grace 15 s → 2 s', 'SOCKET_GRACE_MS = 15_000', 'SOCKET_GRACE_MS = 2_000'],
    ['socket grace 15 s → 16 s', 'SOCKET_GRACE_MS = 15_000', 'SOCKET_GRACE_MS = 16_000'],
    ['presence: a closed socket waits the whole window, not the grace', 'if (entry.sockets === 0) entry.closedAt = entry.lastActive;', 'if (entry.sockets === 0) entry.closedAt = 0;'],
    [
      'presence: a call after the close does not clear the grace',
      'entry.lastActive = this.now();\n    entry.closedAt = 0;\n    this.update(participantId, entry);\n  }\n\n  /** Keeps',
      'entry.lastActive = this.now();\n    this.update(participantId, entry);\n  }\n\n  /** Keeps',
    ],
  ]),
  // Room defaults and caps (SPEC §4, §8).
  ...mutantsOf('src/runtime/rooms.ts', RUNTIME_TESTS, [
    ['max_auto_rounds default 3 → 4', 'DEFAULT_MAX_AUTO_ROUNDS = 3;', 'DEFAULT_MAX_AUTO_ROUNDS = 4;'],
    ['max_auto_rounds default 3 → 2', 'DEFAULT_MAX_AUTO_ROUNDS = 3;', 'DEFAULT_MAX_AUTO_ROUNDS = 2;'],
  ]),
  ...mutantsOf('src/runtime/commands.ts', RUNTIME_TESTS, [
    ['member cap 200 → 201', 'MAX_MEMBERS = 200;', 'MAX_MEMBERS = 201;'],
    ['member cap 200 → 199', 'MAX_MEMBERS = 200;', 'MAX_MEMBERS = 199;'],
  ]),
  ...mutantsOf('src/config.ts', ['test/unit/config.test.ts'], [['turn timeout default 3 min → 3 min + 1 s', "'TURN_TIMEOUT_MS', 180_000,", "'TURN_TIMEOUT_MS', 181_000,"]]),
  // Turn engine (SPEC §6, §7).
  ...mutantsOf(CORE, ENGINE_TESTS, [
    ['20-post cap → 21', 'MAX_POSTS_PER_TURN = 20;', 'MAX_POSTS_PER_TURN = 21;'],
    ['20-post cap → 19', 'MAX_POSTS_PER_TURN = 20;', 'MAX_POSTS_PER_TURN = 19;'],
    ['extend_turn cap 3 → 4', 'MAX_EXTENSIONS = 3;', 'MAX_EXTENSIONS = 4;'],
    ['extend_turn cap 3 → 2', 'MAX_EXTENSIONS = 3;', 'MAX_EXTENSIONS = 2;'],
    ['follow-up needs 2 agents → 3', 'FOLLOW_UP_AGENTS = 2;', 'FOLLOW_UP_AGENTS = 3;'],
    ['follow-up needs 2 agents → 1 (a lone agent talks to itself)', 'FOLLOW_UP_AGENTS = 2;', 'FOLLOW_UP_AGENTS = 1;'],
    [
      'guard trips one answer late (< → <=)',
      'if (r.guard_count < w.view.maxAutoRounds * w.view.agents.length) return false;',
      'if (r.guard_count <= w.view.maxAutoRounds * w.view.agents.length) return false;',
    ],
    [
      'guard counts rounds, not rounds × agents',
      'if (r.guard_count < w.view.maxAutoRounds * w.view.agents.length) return false;',
      'if (r.guard_count < w.view.maxAutoRounds) return false;',
    ],
    ['a person does not reset the guard', '  r.guard_count = 0;\n  r.guard_tripped = false;', '  r.guard_tripped = false;'],
    ['a turn deadline is not the full timeout', 'turn.deadline = iso(w.ctx.now + w.view.turnTimeoutMs);', 'turn.deadline = iso(w.ctx.now + w.view.turnTimeoutMs - 1000);'],
  ]),
  ...mutantsOf(ENGINE, ENGINE_TESTS, [
    ['the post cap counts one post late', 'posted + 1 >= MAX_POSTS_PER_TURN', 'posted >= MAX_POSTS_PER_TURN'],
    ['the extension cap allows one more (>= → >)', 'if (used >= MAX_EXTENSIONS)', 'if (used > MAX_EXTENSIONS)'],
  ]),
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
