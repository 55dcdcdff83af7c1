// bench/campaign.ts under sending hours (a window holding the hour now in the contacts' zone) and a
// frequency cap on SMS that no contact has reached, beside the same campaign without them, in the
// same rounds. Goal: at most 1.2x (ratio, without over with, >= 0.83).
process.env.BENCH_RESPECTFUL = '1';
await import('./campaign.js');
