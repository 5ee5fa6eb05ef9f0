// Each image its own tag: one registry asked for several tags (of one repository or several) in
// one round, within the same budget: one probe, one token request whose scopes name each
// repository once, one HEAD per repository and tag.
import { expect, test } from "bun:test";
import { lookupId, resolveLookups } from "../../lib/registry/client.ts";
import { registryHarness } from "./harness.ts";

const { sim, options } = registryHarness(2000);

test("two tags of one repository and a third repository: one token, one scope per repository, a HEAD each", async () => {
  const r = await sim();
  const stable = r.push("myorg/api", "stable");
  const canary = r.push("myorg/api", "canary");
  const agent = r.push("myorg/agent", "v2");
  const lookups = [
    { repository: "myorg/api", tag: "stable" },
    { repository: "myorg/api", tag: "canary" },
    { repository: "myorg/agent", tag: "v2" },
  ];
  const got = await resolveLookups(lookups, options(r).opts);
  expect([...got.entries()]).toEqual([
    [lookupId(lookups[0]!), { ok: true, digest: stable }],
    [lookupId(lookups[1]!), { ok: true, digest: canary }],
    [lookupId(lookups[2]!), { ok: true, digest: agent }],
  ]);
  expect(r.counts()).toEqual({ challenge: 1, token: 1, head: 3, get: 0 });
  expect(r.log.find((e) => e.path === "/token")?.query.scope).toEqual([
    "repository:myorg/api:pull",
    "repository:myorg/agent:pull",
  ]);
  expect(
    r.log
      .filter((e) => e.method === "HEAD")
      .map((e) => e.path)
      .sort(),
  ).toEqual([
    "/v2/myorg/agent/manifests/v2",
    "/v2/myorg/api/manifests/canary",
    "/v2/myorg/api/manifests/stable",
  ]);
});

test("a tag that is not one is refused before any request", async () => {
  const r = await sim();
  await expect(resolveLookups([{ repository: "myorg/api", tag: ".x" }], options(r).opts)).rejects.toThrow(
    'tag ".x" does not match the OCI tag grammar',
  );
  expect(r.log).toEqual([]);
});
