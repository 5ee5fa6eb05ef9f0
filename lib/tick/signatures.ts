// The tick's second look: signatures are fetched only for builds the plan found due, so a no-op
// tick (and any tick with nothing new to roll out) sends no signature request. The first plan,
// without signatures, holds each such build as `signature_unchecked` with its digest; the builds
// are checked (the registry, the policy's keys) and the plan is made again, from the same
// observation plus their verdicts. Plan stays pure; this is observe's second phase.
import type { Config } from "../config.ts";
import { registryHostKey } from "../registry/reference.ts";
import { registryGroups } from "../registry/registries.ts";
import { registryBook } from "../state/registries.ts";
import type { BuildToCheck, TickContext } from "./context.ts";
import type { Decision, Observed } from "./model.ts";
import { plan } from "./plan/plan.ts";

/** The builds a plan held for want of a signature check. */
export function signatureRequests(d: Decision, c: Config): BuildToCheck[] {
  const out: BuildToCheck[] = [];
  for (const v of d.images) {
    const img = c.images.find((i) => i.key === v.key);
    if (v.reason !== "signature_unchecked" || !v.digest || !img) continue;
    out.push({ key: v.key, repository: img.repository, digest: v.digest, registry: img.registry });
  }
  return out;
}

/** Plans; when builds wait for their signatures, checks them and plans again with the verdicts. */
export async function planWithSignatures(ctx: TickContext, observed: Observed): Promise<Decision> {
  const first = plan(observed, ctx.config);
  const requests = signatureRequests(first, ctx.config);
  if (requests.length === 0 || !ctx.verifySignatures) return first;
  const verdicts = await ctx.verifySignatures(requests, {
    storedAnswers: registryAnswers(observed, ctx.config),
  });
  observed.signatures = { ...observed.signatures };
  for (const r of requests) {
    const verdict = verdicts[r.key] ?? { status: "unreadable" as const, reason: "not checked" };
    observed.signatures[r.key] = { digest: r.digest, verdict };
  }
  return plan(observed, ctx.config);
}

/**
 * Each registry's API root answer to authorize with, by host key: this tick's (asked while
 * resolving), else the stored one (the top-level registry's also under the version before's
 * key); none for a host whose stored one this tick found wrong.
 */
export function registryAnswers(observed: Observed, config: Config): Record<string, string> {
  const top = registryHostKey(config.registry.host);
  const out: Record<string, string> = {};
  for (const { hostKey } of registryGroups(config.images)) {
    const now = observed.registries?.[hostKey]?.remember;
    const stored = registryBook(observed.book, hostKey, hostKey === top).challenge;
    const answer = now !== undefined ? now : stored.kind === "absent" ? null : stored.raw;
    if (answer) out[hostKey] = answer;
  }
  return out;
}

/** What `status` says of an image's policy and of the registry's current build under it. */
export interface SignatureStatus {
  policy: string;
  /** The registry's build: verified, unsigned, signature_invalid, unreadable, or not checked here. */
  current?: { digest: string; status: string; reason: string };
}

/**
 * For `status`: the registry's current build of every image with a policy, checked (a build the
 * store remembers as verified is not fetched again); the verdicts join the observation, so the
 * plan made from it is the next tick's.
 */
export async function currentSignatures(
  ctx: TickContext,
  observed: Observed,
): Promise<Record<string, SignatureStatus>> {
  const out: Record<string, SignatureStatus> = {};
  const builds: BuildToCheck[] = [];
  for (const img of ctx.config.images) {
    if (!img.verify) {
      out[img.key] = { policy: "off (no signature is checked)" };
      continue;
    }
    out[img.key] = { policy: `signed by ${img.verify.keys.join(" or ")} (${img.verify.from} verify)` };
    const seen = observed.digests?.[img.key];
    if (!seen?.ok) continue;
    const signed = observed.book.images[img.key]?.signed;
    if (signed?.kind === "trusted" && signed.value === seen.digest) {
      const reason = "verified when first seen (remembered in the store)";
      out[img.key] = {
        ...(out[img.key] as SignatureStatus),
        current: { digest: seen.digest, status: "verified", reason },
      };
    } else
      builds.push({ key: img.key, repository: img.repository, digest: seen.digest, registry: img.registry });
  }
  const verdicts =
    ctx.verifySignatures && builds.length
      ? await ctx.verifySignatures(builds, { storedAnswers: registryAnswers(observed, ctx.config) })
      : {};
  observed.signatures = { ...observed.signatures };
  for (const b of builds) {
    const v = verdicts[b.key];
    if (v) observed.signatures[b.key] = { digest: b.digest, verdict: v };
    const current = v
      ? { digest: b.digest, status: v.status, reason: v.reason }
      : { digest: b.digest, status: "not checked", reason: "the policy's keys are not readable here" };
    out[b.key] = { ...(out[b.key] as SignatureStatus), current };
  }
  return out;
}

/** True when this tick refused the image's build for its signature: the gauge an alert fires on. */
export const refusedForSignature = (reason: string): boolean =>
  reason === "unsigned" || reason === "signature_invalid";
