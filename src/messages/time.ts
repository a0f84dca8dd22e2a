// Display times: room timezone, `yyyy-MM-dd HH:mm:ss`, 24-hour (SPEC §4).
import { formatInTimeZone } from 'date-fns-tz';

export const DISPLAY_FORMAT = 'yyyy-MM-dd HH:mm:ss';

export function displayTime(isoUtc: string, timezone: string): string {
  return formatInTimeZone(new Date(isoUtc), timezone, DISPLAY_FORMAT);
}
