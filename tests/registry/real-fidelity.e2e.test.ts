// The simulated registry against the real one: the same manifest requests to both (same media
// types stored, same Accept headers), and the answers must agree in status, error code and
// which digest headers are present. Digests differ (the images differ); their presence must not.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { MANIFEST_ACCEPT } from "../../lib/registry/reference.ts";
import { type SimRegistry, startRegistry } from "../../sim/registry.ts";
import { MT } from "../../sim/registry-store.ts";
import { needTools } from "../support/tools.ts";
import { buildImage, type Kind } from "./real/images.ts";
import { type RealRegistry, startRealRegistry } from "./real/registry.ts";
import { push } from "./real/skopeo.ts";

const missing = needTools([
  { tool: "docker-registry", apt: "docker-registry" },
  { tool: "skopeo", apt: "skopeo" },
]);

const STORED: Array<{ repo: string; kind: Kind; sim: { multiArch?: boolean; oci?: boolean } }> = [
  { repo: "fid/oci", kind: "oci", sim: { oci: true } },
  { repo: "fid/index", kind: "oci-index", sim: { oci: true, multiArch: true } },
  { repo: "fid/docker", kind: "docker", sim: {} },
  { repo: "fid/list", kind: "docker-list", sim: { multiArch: true } },
];

interface Answer {
  status: number;
  code?: string;
  contentType?: string;
  hasDigest: boolean;
  hasEtag: boolean;
}

async function ask(
  base: string,
  method: string,
  path: string,
  headers: Record<string, string>,
): Promise<Answer> {
  const res = await fetch(`${base}${path}`, { method, headers, signal: AbortSignal.timeout(5000) });
  const text = await res.text();
  let code: string | undefined;
  if (text && res.status >= 400)
    code = (JSON.parse(text) as { errors: Array<{ code: string }> }).errors[0]?.code;
  return {
    status: res.status,
    code,
    contentType: res.status === 200 ? (res.headers.get("content-type") ?? undefined) : undefined,
    hasDigest: res.headers.has("docker-content-digest"),
    hasEtag: res.headers.has("etag"),
  };
}

const ACCEPTS: Record<string, string | undefined> = {
  all: MANIFEST_ACCEPT,
  none: undefined,
  "oci only": `${MT.ociIndex}, ${MT.ociManifest}`,
  "docker manifest only": MT.dockerManifest,
  "docker list only": MT.dockerList,
};

describe.skipIf(missing)("the simulated registry answers as distribution does", () => {
  let real: RealRegistry;
  let sim: SimRegistry;
  const digests = new Map<string, { real: string; sim: string }>();
  beforeAll(async () => {
    real = await startRealRegistry();
    sim = await startRegistry({ auth: "none" });
    for (const s of STORED) {
      await push(buildImage(s.kind, `fidelity ${s.repo}`), `${real.host}/${s.repo}:v1`);
      const r = await fetch(`${real.endpoint}/v2/${s.repo}/manifests/v1`, {
        method: "HEAD",
        headers: { Accept: MANIFEST_ACCEPT },
      });
      digests.set(s.repo, {
        real: r.headers.get("docker-content-digest") ?? "",
        sim: sim.push(s.repo, "v1", s.sim),
      });
    }
  }, 120_000);
  afterAll(async () => {
    await real?.stop();
    await sim?.stop();
  });

  const both = async (method: string, path: string, headers: Record<string, string>) => ({
    real: await ask(real.endpoint, method, path, headers),
    sim: await ask(sim.url, method, path, headers),
  });

  for (const method of ["GET", "HEAD"]) {
    for (const s of STORED) {
      for (const [name, accept] of Object.entries(ACCEPTS)) {
        test(`${method} ${s.kind} by tag, Accept ${name}`, async () => {
          const a = await both(method, `/v2/${s.repo}/manifests/v1`, accept ? { Accept: accept } : {});
          expect(a.sim).toEqual(a.real);
        });
      }
    }
    test(`${method} an unknown repository`, async () => {
      const a = await both(method, "/v2/fid/nothing/manifests/v1", { Accept: MANIFEST_ACCEPT });
      expect(a.sim).toEqual(a.real);
      if (method === "GET") expect(a.real.code).toBe("MANIFEST_UNKNOWN");
    });
    test(`${method} an unknown tag`, async () => {
      const a = await both(method, "/v2/fid/oci/manifests/v2", { Accept: MANIFEST_ACCEPT });
      expect(a.sim).toEqual(a.real);
    });
  }

  for (const s of STORED) {
    test(`a conditional request for ${s.kind} answers 304 without Docker-Content-Digest`, async () => {
      const d = digests.get(s.repo) as { real: string; sim: string };
      const headers = (digest: string) => ({ Accept: MANIFEST_ACCEPT, "If-None-Match": `"${digest}"` });
      const path = `/v2/${s.repo}/manifests/v1`;
      const realAnswer = await ask(real.endpoint, "GET", path, headers(d.real));
      const simAnswer = await ask(sim.url, "GET", path, headers(d.sim));
      expect(realAnswer.status).toBe(304);
      expect(simAnswer).toEqual(realAnswer);
    });
  }
});
