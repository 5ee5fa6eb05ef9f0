// After a regression's revert (or a rejected build's rollback): the image's targets settled,
// verified, on the build before the one that regressed, so that build is the one recorded again;
// the regressed build's window is over (it runs nowhere). The count and failed digest written
// before a regression's revert stay: the regression was a failed attempt.
import { IMAGE_KEYS } from "../../state/keys.ts";
import type { ImageVerdict } from "../model.ts";
import { describeStore, failImage, type Run, writeBook } from "./state.ts";

export async function recordRevert(run: Run, digests: Record<string, string>): Promise<void> {
  // A revert that failed already said so (revert_failed); only a settled one is recorded.
  const back = (key: string) => ["regressed", "build_rejected"].includes(run.verdicts.get(key)?.reason ?? "");
  const done = Object.entries(digests).filter(([key]) => back(key));
  if (done.length === 0) return;
  const change: Record<string, string | null> = {};
  for (const [key, digest] of done) {
    change[IMAGE_KEYS.digest.name(key)] = digest;
    change[IMAGE_KEYS.verifiedAt.name(key)] = null;
  }
  try {
    await writeBook(run, change);
  } catch (err) {
    const message = `the targets are back on the earlier build, but it cannot be recorded in ${describeStore(run)}: ${(err as Error).message}`;
    for (const [key] of done) failImage(run, key, { outcome: "failed", reason: "record_failed", message });
    return;
  }
  for (const [key, digest] of done) {
    const v = run.verdicts.get(key) as ImageVerdict;
    v.message = `${v.message}; reverted to ${digest}`;
    v.short = `${v.short ?? ""} (reverted)`.trim();
    run.ctx.log.info(`${run.ctx.dryRun ? "would record" : "recorded"} ${key}=${digest} (reverted)`, {
      image: key,
      digest,
    });
  }
}
