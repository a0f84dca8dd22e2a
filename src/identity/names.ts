// Participant names (SPEC §3): 1–32 letters of any script, digits, `_`, `-`, `.`; no spaces, no `@`.
export const PARTICIPANT_NAME = /^[\p{L}\p{M}\p{N}_.-]{1,32}$/u;

export function isValidParticipantName(name: string): boolean {
  return PARTICIPANT_NAME.test(name);
}

/** Names are unique case-insensitively across agents and people. */
export function nameKey(name: string): string {
  return name.normalize('NFC').toLocaleLowerCase('und');
}
