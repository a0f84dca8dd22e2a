// Display times: room timezone, `yyyy-MM-dd HH:mm:ss`, 24-hour (SPEC §4). The export's
// implementation, which caches the local time of each UTC quarter hour: formatInTimeZone costs
// ~40 µs a call, and get_context formats up to 50 messages a call.
export { DISPLAY_FORMAT, displayTime } from '../export/format.js';
