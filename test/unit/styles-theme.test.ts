// The stylesheet writes each theme colour once: the dark theme is a switch (--if-light /
// --if-dark) that two small rules flip — an explicit data-theme="dark", and the system's
// prefers-color-scheme unless light was chosen — never a second copy of the colours. The page
// in the system dark theme and after toggling is checked by test/browser/round-two.test.ts.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const css = readFileSync(new URL('../../public/styles.css', import.meta.url), 'utf8').replace(/\/\*[\s\S]*?\*\//g, '');

/** The declarations of every rule whose selector (or enclosing at-rule) names the theme. */
function themedRules(): string[][] {
  const out: string[][] = [];
  for (const m of css.matchAll(/([^{};]+)\{([^{}]*)\}/g)) {
    const before = css.slice(Math.max(0, m.index - 200), m.index);
    const inMedia = /@media \(prefers-color-scheme: dark\) \{\s*$/.test(before);
    if (!/data-theme/.test(m[1]!) && !inMedia) continue;
    out.push(m[2]!.split(';').map((d) => d.trim()).filter(Boolean));
  }
  return out;
}

describe('styles.css themes', () => {
  it('has one switch per way into the dark theme, and they set nothing but the switch', () => {
    expect(css.match(/prefers-color-scheme/g)).toHaveLength(1);
    expect(css.match(/data-theme/g)).toHaveLength(2);
    const rules = themedRules();
    expect(rules).toHaveLength(2);
    for (const declarations of rules) expect(declarations.sort()).toEqual(['--if-dark: initial', '--if-light:']);
  });

  it('gives every colour of the dark palette in the light :root rule, once', () => {
    const root = /^:root \{([^}]*)\}/m.exec(css)![1]!;
    expect(root).toMatch(/--if-light: initial;\s*--if-dark: ;/);
    for (const name of ['--bg', '--surface', '--text', '--muted', '--primary', '--code-bg', '--hl-keyword']) {
      expect(root).toMatch(new RegExp(`${name}: var\\(--if-light, [^)]+\\) var\\(--if-dark, [^)]+\\);`));
    }
    expect(css.match(/#0f1218/g)).toHaveLength(1); // the dark background, written once
  });
});
