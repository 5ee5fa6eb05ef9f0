// The signature rule of a due build: with a verify policy, a build rolls out only when a
// signature of its digest verifies with one of the policy's keys. Pure: the verdict of the
// look-up is observed (the tick's second look, signatures.ts, asked for by this step's
// `signature_unchecked` on its first plan); this step only decides. A refused build holds the
// image and counts nothing: its publisher, not the workload, has to act.
import { IMAGE_KEYS } from "../../state/keys.ts";
import { trusted } from "../../state/values.ts";
import type { DueInput } from "./case.ts";
import { amend, type Judgement, say } from "./judgement.ts";

/**
 * `held: false` when the build may go on (no policy, verified now or before), with the writes
 * that remember a verification (`verified-<key>-signature`); else the held judgement. A
 * refusal's Event is posted once per build (`refused-<key>-signature`).
 */
export function signatureGate(
  judgement: Judgement,
  { img, b, c, o, digest }: DueInput,
): { judgement: Judgement; held: boolean } {
  if (!img.verify || trusted(b.signed) === digest) return { judgement, held: false };
  const seen = o.signatures?.[img.key];
  const signedKey = IMAGE_KEYS.signed.name(img.key);
  const refusedKey = IMAGE_KEYS.refused.name(img.key);
  const held = amend(judgement, { blocks: true, verdict: { digest } });
  if (!seen || seen.digest !== digest) {
    const msg = `${img.key}: new build ${digest} waits for its signature to be checked`;
    return {
      judgement: say(held, { outcome: "held", reason: "signature_unchecked", message: msg }),
      held: true,
    };
  }
  const v = seen.verdict;
  if (v.status === "verified") {
    const forget = trusted(b.refused) !== undefined ? { [refusedKey]: null } : {};
    return { judgement: amend(judgement, { writes: { [signedKey]: digest, ...forget } }), held: false };
  }
  if (v.status === "unreadable") {
    const msg = `${img.key}: new build ${digest} is not rolled out: its signature could not be read (${v.reason}); the next tick asks again`;
    return {
      judgement: say(held, { outcome: "held", reason: "signature_unreadable", message: msg }),
      held: true,
    };
  }
  const why = v.status === "unsigned" ? "it is not signed" : `its signature does not verify: ${v.reason}`;
  const check = `cosign verify --key ${img.verify.keys.join(" --key ")} --insecure-ignore-tlog ${c.registry.host}/${img.repository}@${digest}`;
  const msg = `${img.key}: new build ${digest} of ${img.repository} is refused, ${why}; its targets keep what they run and nothing is counted. The build's publisher must sign it with one of ${img.verify.keys.join(", ")} (check: ${check})`;
  const announce = trusted(b.refused) !== digest;
  const refused = announce
    ? amend(held, { writes: { [refusedKey]: digest }, events: [{ reason: "BuildRefused", note: msg }] })
    : held;
  return { judgement: say(refused, { outcome: "held", reason: v.status, message: msg }), held: true };
}
