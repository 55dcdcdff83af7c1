import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';

const blocked = new BlockList();
for (const [net, bits] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.168.0.0', 16],
] as const) {
  blocked.addSubnet(net, bits, 'ipv4');
}
for (const [net, bits] of [
  ['::1', 128],
  ['::', 128],
  ['fc00::', 7],
  ['fe80::', 10],
  // No `::ffff:0:0/96` rule: BlockList already checks IPv4-mapped addresses against the IPv4
  // rules, and such a rule would match every IPv4 address, public ones included.
] as const) {
  blocked.addSubnet(net, bits, 'ipv6');
}

/** True when `host` is, or resolves to, a loopback, private or link-local address. */
export async function isPrivateHost(host: string): Promise<boolean> {
  const addresses = isIP(host) ? [{ address: host, family: isIP(host) }] : await lookup(host, { all: true }).catch(() => []);
  return addresses.some(({ address, family }) => blocked.check(address, family === 6 ? 'ipv6' : 'ipv4'));
}

/** True when `address` (an IP address, as connected to) is a loopback, private or link-local one. */
export function isPrivateAddress(address: string): boolean {
  const family = isIP(address);
  return family !== 0 && blocked.check(address, family === 6 ? 'ipv6' : 'ipv4');
}
