// The start of every agent command (`agent`, `cli-agent`): parse the flags, or print the usage.

/** Parsed options, or undefined after printing the usage for --help; exits 2 on bad flags. */
export function parseOrExit<T>(parse: (argv: string[]) => T | 'help', argv: string[], usage: string): T | undefined {
  let options: T | 'help';
  try {
    options = parse(argv);
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n\n${usage}\n`);
    process.exit(2);
  }
  if (options === 'help') {
    process.stdout.write(`${usage}\n`);
    return undefined;
  }
  return options;
}
