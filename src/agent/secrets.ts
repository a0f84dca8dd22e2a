// Keeping an agent's token away from other eyes (SPEC §10): a runner never hands it to the
// program it runs, and a token given on a command line is readable by every local user
// (`ps`, /proc/<pid>/cmdline), so it works but warns.

/** The warning printed when `--token` is given on a command line. */
export const TOKEN_ON_COMMAND_LINE_WARNING =
  'warning: --token on the command line can be read by other users of this machine (ps, /proc/<pid>/cmdline); ' +
  'set CHATROOM_TOKEN instead, or let the command save and reuse the token (--name)';

/** Writes the warning to stderr when a token came from the command line. */
export function warnTokenOnCommandLine(tokenFlag: string | undefined, write: (line: string) => void = (line) => process.stderr.write(`${line}\n`)): void {
  if (tokenFlag !== undefined && tokenFlag !== '') write(TOKEN_ON_COMMAND_LINE_WARNING);
}

/**
 * The environment for a program a runner starts: the runner's own, without CHATROOM_TOKEN and
 * without any variable whose value holds the token (whatever its name), plus `extra`.
 */
export function childEnvironment(
  base: NodeJS.ProcessEnv,
  token: string | null | undefined,
  extra: Record<string, string> = {},
): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(base)) {
    if (value === undefined || name === 'CHATROOM_TOKEN') continue;
    if (token && value.includes(token)) continue;
    env[name] = value;
  }
  for (const [name, value] of Object.entries(extra)) {
    if (token && value.includes(token)) throw new Error(`${name} would hand the agent's token to the program`);
    env[name] = value;
  }
  return env;
}
