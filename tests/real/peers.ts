// Where the real peers built by peers/build.sh are: the cache directory named after each Go
// module's go.sum (the same key the script computes), so a test finds exactly the binaries of the
// committed pins and never a stale build. The real tier needs Go only to build them: when they
// are missing and Go is missing too, a test file skips with one line (or fails under CI).

import { test } from "bun:test";
import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { inCi } from "../support/tools.ts";

const PEERS = join(import.meta.dir, "..", "..", "peers");

export type PeerModule = "kube" | "helm3" | "helm4" | "ksm" | "jaeger" | "cosign" | "alertmanager" | "node";

/** The directory peers/build.sh builds `mod` into (it may not exist yet). */
export function peerDir(mod: PeerModule, env: Record<string, string | undefined> = process.env): string {
  const sum = readFileSync(join(PEERS, mod, "go.sum"));
  const key = createHash("sha256").update(sum).digest("hex").slice(0, 16);
  const cache =
    env.IMAGE_REFRESH_PEERS_CACHE || join(env.HOME || homedir(), ".cache", "image-refresh", "peers");
  return join(cache, `${mod}-${key}`);
}

/** The path of one built binary, e.g. peer("kube", "kube-apiserver"). */
export function peer(mod: PeerModule, name: string): string {
  return join(peerDir(mod), name);
}

/** True when `mod` is built (peers/build.sh marks a finished build with .complete). */
export function peerBuilt(mod: PeerModule): boolean {
  return existsSync(join(peerDir(mod), ".complete"));
}

/**
 * Checks that the peer modules a test file needs are built; returns true when one is not (pass
 * it to describe.skipIf). Outside CI that is one line naming what to install; under CI a failing
 * test, because `npm run test:real` builds them first and a tier that did not run is not a pass.
 */
export function needPeers(mods: readonly PeerModule[], file: string): boolean {
  const missing = mods.filter((m) => !peerBuilt(m));
  if (missing.length === 0) return false;
  const go = Bun.which("go") !== null;
  const line = go
    ? `skip: ${file} needs the real peers ${missing.join(", ")} (build them: sh peers/build.sh ${missing.join(" ")}; npm run test:real builds every peer)`
    : `skip: ${file} needs Go >= 1.26 to build the real peers ${missing.join(", ")} (install Go from https://go.dev/dl, then npm run test:real)`;
  if (!inCi()) console.log(line);
  else
    test(`needs the real peers ${missing.join(", ")}`, () => {
      throw new Error(`${line}: CI is set, so a missing peer is a failure`);
    });
  return true;
}
