import bcrypt from 'bcrypt';

let dummy: Promise<string> | null = null;

export const hashPassword = (plain: string, rounds: number) => bcrypt.hash(plain, rounds);

export const checkPassword = (plain: string, hash: string) => bcrypt.compare(plain, hash);

/** bcrypt reads 72 bytes at most: a longer password never matches (rather than matching by its start). */
export const comparable = (plain: string) => Buffer.byteLength(plain) <= 72;

/** Whether `plain` is the password `hash` was made from. */
export const passwordMatches = async (plain: string, hash: string) => comparable(plain) && (await checkPassword(plain, hash));

/**
 * Compares against a throwaway hash of the same cost, so an unknown email takes as long to
 * refuse as a wrong password and does not reveal which emails have accounts.
 */
export async function burnComparison(plain: string, rounds: number): Promise<void> {
  dummy ??= bcrypt.hash('herald-timing-equaliser', rounds);
  await bcrypt.compare(plain, await dummy);
}
