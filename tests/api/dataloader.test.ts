import type { Herald } from '../../src/server.js';
import { compareNewestFirst, makeContact, makeGroup } from '../helpers/contacts-groups.js';
import { heraldWithClient, signupOrg, type Client, type Credential, type Org } from '../helpers/herald.js';

let herald: Herald, api: Client;
// No workers in this process: their periodic sweep would land in the counted queries.
beforeAll(async () => ({ herald, api } = await heraldWithClient({ WORKERS: 'false' })));
afterAll(() => herald?.stop());

/**
 * The query of the brief. `first` of the outer list comes as a variable: written literally, 100
 * multiplies the whole nested selection in the armor cost estimate and the query is refused.
 */
const NESTED = `query ($n: Int) {
  contacts(first: $n) {
    edges { node { _id groups { _id name contactCount contacts(first: 5) { totalCount edges { node { _id } } } } } }
  }
}`;

/** Contact i belongs to 1-3 of the 5 groups, deterministically. */
const membership = (i: number): number[] => {
  const picks = [i % 5];
  if (i % 2 === 0) picks.push((i + 1) % 5);
  if (i % 3 === 0) picks.push((i + 3) % 5);
  return [...new Set(picks)];
};

interface World {
  org: Org;
  cred: Credential;
  groups: any[];
  contacts: any[];
}

async function buildWorld(n: number): Promise<World> {
  const org = await signupOrg(api);
  const cred = { token: org.token };
  const groups: any[] = [];
  for (let g = 0; g < 5; g++) groups.push(await makeGroup(api, cred, { name: `Loader group ${g}` }));
  const contacts: any[] = [];
  for (let start = 0; start < n; start += 20) {
    const batch = await Promise.all(
      Array.from({ length: Math.min(20, n - start) }, (_, k) => {
        const i = start + k;
        return makeContact(api, cred, { name: `Loaded ${i}`, groups: membership(i).map((g) => groups[g]._id) });
      }),
    );
    contacts.push(...batch);
  }
  // A few contacts in no group, and another organization with the same shape: neither may leak in.
  const other = await signupOrg(api);
  const theirGroup = await makeGroup(api, { token: other.token }, { name: 'Loader group 0' });
  await makeContact(api, { token: other.token }, { groups: [theirGroup._id] });
  return { org, cred, groups, contacts };
}

/** Runs `fn` and returns the SQL the server's knex issued meanwhile. */
async function recordQueries<T>(fn: () => Promise<T>): Promise<{ result: T; sql: string[] }> {
  const sql: string[] = [];
  const listener = (q: { sql: string }) => sql.push(q.sql);
  herald.db.on('query', listener);
  try {
    const result = await fn();
    return { result, sql };
  } finally {
    herald.db.removeListener('query', listener);
  }
}

function checkNestedData(world: World, data: any) {
  const byId = new Map(world.contacts.map((c) => [c._id, c]));
  const groupIndex = new Map(world.groups.map((g, i) => [g._id, i]));
  const membersOf = world.groups.map(() => [] as any[]);
  world.contacts.forEach((c) => c.groups.forEach((gid: string) => membersOf[groupIndex.get(gid)!]!.push(c)));

  const edges = data.contacts.edges;
  expect(edges).toHaveLength(world.contacts.length);
  expect(edges.map((e: any) => e.node._id)).toEqual([...world.contacts].sort(compareNewestFirst).map((c) => c._id));
  for (const { node } of edges) {
    const created = byId.get(node._id);
    expect(node.groups.map((g: any) => g._id).sort()).toEqual([...created.groups].sort());
    expect(node.groups.length).toBeGreaterThanOrEqual(1);
    expect(node.groups.length).toBeLessThanOrEqual(3);
    for (const g of node.groups) {
      const gi = groupIndex.get(g._id)!;
      const members = membersOf[gi]!;
      expect(g.name).toBe(`Loader group ${gi}`);
      expect(g.contactCount).toBe(members.length);
      expect(g.contacts.totalCount).toBe(members.length);
      expect(g.contacts.edges.map((e: any) => e.node._id)).toEqual([...members].sort(compareNewestFirst).slice(0, 5).map((c) => c._id));
    }
  }
}

describe('GraphQL nesting is batched by DataLoaders', () => {
  let small: World;
  let large: World;

  beforeAll(async () => {
    [small, large] = await Promise.all([buildWorld(10), buildWorld(100)]);
  }, 120_000);

  test('the membership plan gives every contact 1-3 of the 5 groups, and every group members', () => {
    for (const w of [small, large]) {
      for (const c of w.contacts) expect(c.groups.length).toBeGreaterThanOrEqual(1);
      const used = new Set(w.contacts.flatMap((c) => c.groups));
      expect(used.size).toBe(5);
    }
    expect(large.contacts.some((c) => c.groups.length === 3)).toBe(true);
  });

  test('one nested query costs the same small number of SQL queries for 10 and for 100 contacts, and answers correctly', async () => {
    const run = (w: World) => recordQueries(() => api.gql(NESTED, { n: 100 }, w.cred));
    // Warm-up of anything process-wide, then the measured runs.
    await run(small);
    const a = await run(small);
    const b = await run(large);
    for (const r of [a, b]) expect(r.result.body.errors).toBeUndefined();
    checkNestedData(small, a.result.body.data);
    checkNestedData(large, b.result.body.data);

    // The very same statements (placeholders included) for 10 and for 100 contacts: no per-row queries.
    expect(b.sql).toEqual(a.sql);
    expect(a.sql.length).toBeGreaterThan(0); // the listener does see the server's queries
    expect(b.sql.length).toBeLessThanOrEqual(8);

    // Stable: the same query again costs the same.
    const again = await run(large);
    expect(again.sql.length).toBe(b.sql.length);
  });

  test('a deeper page inside each group is still one batch per level', async () => {
    const q = `query ($n: Int) { groups(first: 5) { edges { node { _id contacts(first: $n) { edges { node { _id groupIds groups { _id contactCount } } } } } } } }`;
    const a = await recordQueries(() => api.gql(q, { n: 3 }, small.cred));
    const b = await recordQueries(() => api.gql(q, { n: 50 }, large.cred));
    for (const r of [a, b]) expect(r.result.body.errors).toBeUndefined();
    expect(a.sql.length).toBe(b.sql.length);
    expect(b.sql.length).toBeLessThanOrEqual(8);
    for (const edge of b.result.body.data.groups.edges) {
      const nodes = edge.node.contacts.edges.map((e: any) => e.node);
      for (const n of nodes) {
        expect(n.groupIds).toContain(edge.node._id);
        expect(n.groups.map((g: any) => g._id).sort()).toEqual([...n.groupIds].sort());
      }
    }
  });
});
