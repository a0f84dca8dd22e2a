// The JSON of room records, for rooms.json. A room's `history_rounds` (one id per round ever
// played) is the only part that grows with its age — 750 rounds are 29 KB of the record — and it
// changes only by growing at its end (a new array each time a round ends). So its JSON is kept
// per array and, when a room's new list extends the one written before, built by appending the
// new ids: a hand-off serialises the room's small part only, whatever its age. (Appending to an
// array's JSON is valid for any JSON values, so nothing else about the list is checked.)

type Historied = { history_rounds?: unknown };

export function roomJsonWriter<T extends object>(): (record: T, previous: T | undefined) => string {
  const histories = new WeakMap<readonly string[], string>();

  const historyJson = (ids: readonly string[], before: unknown): string => {
    let json = histories.get(ids);
    if (json !== undefined) return json;
    const prior = Array.isArray(before) ? histories.get(before) : undefined;
    if (prior !== undefined && extendsList(ids, before as readonly string[])) {
      const added = ids.slice((before as readonly string[]).length);
      json = added.length === 0 ? prior : prior.length === 2 ? JSON.stringify(added) : `${prior.slice(0, -1)},${JSON.stringify(added).slice(1)}`;
    } else {
      json = JSON.stringify(ids);
    }
    histories.set(ids, json);
    return json;
  };

  return (record, previous) => {
    const { history_rounds: ids, ...rest } = record as T & Historied;
    if (!Array.isArray(ids)) return JSON.stringify(record);
    const head = JSON.stringify(rest);
    const history = historyJson(ids, (previous as (T & Historied) | undefined)?.history_rounds);
    return head === '{}' ? `{"history_rounds":${history}}` : `${head.slice(0, -1)},"history_rounds":${history}}`;
  };
}

/** True when `ids` starts with every element of `before` (compared by value; cheap for the same strings). */
function extendsList(ids: readonly string[], before: readonly string[]): boolean {
  if (ids.length < before.length) return false;
  for (let i = 0; i < before.length; i++) if (ids[i] !== before[i]) return false;
  return true;
}
