// The key a client address is counted under by the per-address limits. An IPv4 client seen
// through an IPv6 socket (`::ffff:1.2.3.4`) is the same client as `1.2.3.4`. An IPv6 client
// usually holds a whole /64 (one subnet per home or VM), so the /64 is the unit: otherwise one
// client could rotate through 2^64 addresses to escape every per-address limit.
import { isIPv6 } from 'node:net';

export function addressKey(address: string | null | undefined): string | null {
  if (!address) return null;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return mapped[1]!;
  if (!isIPv6(address)) return address;
  return `${expandIPv6(address).slice(0, 4).join(':')}::/64`;
}

/** The eight 16-bit groups of an IPv6 address, zone id dropped, `::` expanded. */
function expandIPv6(address: string): string[] {
  const plain = address.split('%')[0]!.toLowerCase();
  const [head = '', tail] = plain.split('::');
  const left = head ? head.split(':').flatMap(groupsOf) : [];
  const right = tail ? tail.split(':').flatMap(groupsOf) : [];
  const full = tail === undefined ? left : [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right];
  return full.map((g) => g.replace(/^0+(?=.)/, ''));
}

/** One group, or two for an embedded IPv4 tail (`::1.2.3.4`). */
function groupsOf(group: string): string[] {
  if (!group.includes('.')) return [group];
  const [a = 0, b = 0, c = 0, d = 0] = group.split('.').map(Number);
  return [((a << 8) | b).toString(16), ((c << 8) | d).toString(16)];
}
