// What the look-up found of one format: the key a signature verified with, or why each one
// found does not count. A registry that cannot be read (Unreadable) is not a finding: it ends
// the look-up.
import { Invalid } from "./reader.ts";

export interface Checked {
  /** The key file a signature verified with. */
  verifiedBy?: string;
  /** Why each signature found does not count. */
  problems: string[];
}

/** Checks each item in turn, stopping at the first that verifies. */
export async function checkEach<T>(
  items: readonly T[],
  check: (item: T) => Promise<string>,
): Promise<Checked> {
  const problems: string[] = [];
  for (const item of items) {
    try {
      return { verifiedBy: await check(item), problems };
    } catch (err) {
      if (!(err instanceof Invalid)) throw err;
      problems.push(err.message);
    }
  }
  return { problems };
}
