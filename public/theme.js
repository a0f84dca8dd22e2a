// @ts-check
// Light and dark themes: "system" (the default) follows prefers-color-scheme; the top bar's
// button cycles system → dark → light, and the choice is remembered.
const THEME_KEY = 'agent-chatroom.theme';
/** @typedef {'system'|'light'|'dark'} Theme */

/** @returns {Theme} */
export function storedTheme() {
  try {
    const v = localStorage.getItem(THEME_KEY);
    if (v === 'light' || v === 'dark') return v;
  } catch {
    // ignore
  }
  return 'system';
}

/** @param {Theme} theme @returns {Theme} */
export function nextTheme(theme) {
  return theme === 'system' ? 'dark' : theme === 'dark' ? 'light' : 'system';
}

/** @param {Theme} theme @param {boolean} remember */
export function applyTheme(theme, remember) {
  const root = document.documentElement;
  if (theme === 'system') delete root.dataset.theme;
  else root.dataset.theme = theme;
  if (!remember) return;
  try {
    if (theme === 'system') localStorage.removeItem(THEME_KEY);
    else localStorage.setItem(THEME_KEY, theme);
  } catch {
    // ignore
  }
}
