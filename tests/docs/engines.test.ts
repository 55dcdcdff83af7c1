import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * The Node.js version Herald asks for is the one its locked dependencies need: `engines.node` in
 * package.json is the highest floor any installed package declares (npm warns EBADENGINE below
 * it), and the README and CONTRIBUTING say the same version.
 */

const read = (file: string) => readFileSync(fileURLToPath(new URL(`../../${file}`, import.meta.url)), 'utf8');
const pkg = JSON.parse(read('package.json')) as { engines: { node: string } };
const lock = JSON.parse(read('package-lock.json')) as { packages: Record<string, { engines?: { node?: string } | string[]; optional?: boolean }> };

type Version = [number, number, number];
const compare = (a: Version, b: Version) => a[0] - b[0] || a[1] - b[1] || a[2] - b[2];
const parse = (v: string): Version => {
  const [major = 0, minor = 0, patch = 0] = v.split('.').map(Number);
  return [major, minor, patch];
};

/**
 * The lowest version a node-semver range admits: each `||` alternative starts at its first version
 * (`>=22.12.0`, `^20.19.0`, `14 >=14.17` reads 14.0.0), and the range at the lowest of them.
 * Ranges that start lower (`<`, `*`) admit any Node, so they set no floor.
 */
function floorOf(range: string): Version | null {
  let lowest: Version | null = null;
  for (const alternative of range.split('||')) {
    const first = /^\s*(?:>=|\^|~|=|v)?\s*(\d+(?:\.\d+){0,2})/.exec(alternative);
    if (!first) return null;
    const version = parse(first[1]);
    if (!lowest || compare(version, lowest) < 0) lowest = version;
  }
  return lowest;
}

test('floorOf reads the ranges packages declare', () => {
  expect(floorOf('>=22.22.0')).toEqual([22, 22, 0]);
  expect(floorOf('^20.19.0 || >=22.12.0')).toEqual([20, 19, 0]);
  expect(floorOf('>=16 || 14 >=14.17')).toEqual([14, 0, 0]);
  expect(floorOf('*')).toBeNull();
});

test("engines.node is the highest floor of the lock's packages, and the documents say it", () => {
  let floor: Version = [0, 0, 0];
  let who = '';
  for (const [name, entry] of Object.entries(lock.packages)) {
    const range = !name || Array.isArray(entry.engines) ? undefined : entry.engines?.node;
    const found = range ? floorOf(range) : null;
    if (found && compare(found, floor) > 0) [floor, who] = [found, name];
  }
  expect({ engines: floorOf(pkg.engines.node), who }).toEqual({ engines: floor, who });
  expect(lock.packages['']!.engines).toEqual(pkg.engines);
  const stated = `Node.js ${floor[0]}.${floor[1]}`;
  expect(read('README.md')).toContain(stated);
  expect(read('CONTRIBUTING.md')).toContain(`Node.js (${floor[0]}.${floor[1]} or newer)`);
});
