// bench/campaign.ts with a personalised text: `{{ contact.firstName }}` and an attribute rendered
// per recipient. Goal: the campaign within 2.5x of COPY of the same log rows (ratio >= 0.4).
process.env.BENCH_PERSONALISED = '1';
await import('./campaign.js');
