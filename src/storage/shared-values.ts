// Participant records (and room members) repeat a few values: the same language, timezone and status strings, and
// empty lists (`rooms`, `capabilities`, `skip_list`). JSON.parse gives every record its own copy
// of each; with 100,000 agents that is most of their memory (issue 14: 101 MB → 41 MB for the
// bench's 100,000 agent records). The store's records are never changed in place (copies go in
// and out), so records may share these values: the strings of the fields below are taken from a
// bounded table, and every empty list is one frozen array (a change in place would throw).
const SHARED_FIELDS = new Set(['status', 'language', 'preferred_language', 'timezone', 'introduce', 'role', 'language_preference', 'timezone_preference']);
const SHARED_LISTS = new Set(['language_support', 'capabilities', 'skip_list', 'rooms']);
/** Distinct strings remembered; past that, new values are kept as they are (still correct). */
const MAX_SHARED = 4096;
const MAX_LENGTH = 64;
const EMPTY: readonly never[] = Object.freeze([]);

export class SharedValues {
  private readonly strings = new Map<string, string>();

  /** Replaces the record's repeated values by shared ones, in place; returns it. */
  share<T extends object>(record: T): T {
    const fields = record as Record<string, unknown>;
    for (const key of Object.keys(fields)) {
      const value = fields[key];
      if (typeof value === 'string') {
        if (SHARED_FIELDS.has(key)) fields[key] = this.string(value);
      } else if (Array.isArray(value) && SHARED_LISTS.has(key)) {
        if (value.length === 0) fields[key] = EMPTY;
        else for (let i = 0; i < value.length; i++) if (typeof value[i] === 'string') value[i] = this.string(value[i] as string);
      }
    }
    return record;
  }

  /** A room's members share their repeated values the same way (10,000 rooms of 11 members). */
  shareMembers<T extends { members: readonly object[] }>(room: T): T {
    for (const member of room.members) this.share(member);
    return room;
  }

  private string(value: string): string {
    if (value.length > MAX_LENGTH) return value;
    const known = this.strings.get(value);
    if (known !== undefined) return known;
    if (this.strings.size < MAX_SHARED) this.strings.set(value, value);
    return value;
  }
}
