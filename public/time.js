// @ts-check
// Times as people see them: the room's timezone, `yyyy-MM-dd HH:mm:ss`, 24-hour.

export const DEFAULT_TIMEZONE = 'Asia/Shanghai';

const formatters = new Map();

function formatterFor(timeZone) {
  let f = formatters.get(timeZone);
  if (!f) {
    /** @type {Intl.DateTimeFormatOptions} */
    const options = {
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
      hourCycle: 'h23',
    };
    try {
      f = new Intl.DateTimeFormat('en-US', { ...options, timeZone });
    } catch {
      f = new Intl.DateTimeFormat('en-US', { ...options, timeZone: DEFAULT_TIMEZONE });
    }
    formatters.set(timeZone, f);
  }
  return f;
}

/** `yyyy-MM-dd HH:mm:ss` of an ISO instant in a timezone ('' for a missing or bad time). */
export function formatTime(iso, timeZone = DEFAULT_TIMEZONE) {
  if (!iso) return '';
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return '';
  const parts = {};
  for (const p of formatterFor(timeZone || DEFAULT_TIMEZONE).formatToParts(date)) parts[p.type] = p.value;
  // Some engines print midnight as 24 even with h23; normalise.
  const hour = parts.hour === '24' ? '00' : parts.hour;
  return `${parts.year}-${parts.month}-${parts.day} ${hour}:${parts.minute}:${parts.second}`;
}

/** `HH:mm:ss` part only (for compact places such as round separators). */
export function formatClock(iso, timeZone) {
  return formatTime(iso, timeZone).slice(11);
}

/** Remaining milliseconds as `mm:ss` (or `h:mm:ss` past an hour); never negative. */
export function formatCountdown(ms) {
  const total = Math.max(0, Math.ceil(ms / 1000));
  const s = total % 60;
  const m = Math.floor(total / 60) % 60;
  const hours = Math.floor(total / 3600);
  const pad = (n) => String(n).padStart(2, '0');
  return hours > 0 ? `${hours}:${pad(m)}:${pad(s)}` : `${pad(m)}:${pad(s)}`;
}
