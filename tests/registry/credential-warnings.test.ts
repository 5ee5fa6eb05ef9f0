// What a 401 says: with no credential sent, which host has none configured and where to configure
// it; with one sent, that it was refused (and never that none is configured).
import { describe, expect, test } from "bun:test";
import { resolveDigests } from "../../lib/registry/client.ts";
import { registryHarness } from "./harness.ts";

const { sim, options } = registryHarness(2000);
const WHERE = "set images[1].registry.dockerConfigJson to a pull secret with an entry for the host";

const messages = (got: Map<string, { ok: boolean; message?: string }>) =>
  [...got.values()].map((v) => (v.ok ? "" : (v.message ?? "")));

describe("a 401 with no credential sent", () => {
  test("a private repository behind a token realm: the host has no credential, and where to set one", async () => {
    const r = await sim({ anonymousPull: false });
    r.push("myorg/app", "v1");
    const got = await resolveDigests(["myorg/app"], "v1", options(r, { noCredential: WHERE }).opts);
    const [m] = messages(got);
    expect(got.get("myorg/app")).toMatchObject({ ok: false, reason: "unauthorized" });
    expect(m).toContain("manifest HEAD for myorg/app:v1 answered 401");
    expect(m).toEndWith(`: ${WHERE}`);
    expect(m).not.toContain("refused");
  });

  test("a registry that asks for Basic credentials: the same, naming the host by default", async () => {
    const r = await sim({ auth: "basic" });
    r.push("myorg/app", "v1");
    const got = await resolveDigests(["myorg/app"], "v1", options(r).opts);
    const [m] = messages(got);
    expect(m).toBe(
      `Cannot authenticate to the registry: it asks for Basic credentials: no credential is configured for ${r.host}`,
    );
  });
});

describe("a 401 with a credential sent", () => {
  test("Basic, refused: says the credential was refused, not that none is configured", async () => {
    const r = await sim({ auth: "basic", users: { alice: "right" } });
    r.push("myorg/app", "v1");
    const creds = { username: "alice", password: "wrong" };
    const got = await resolveDigests(
      ["myorg/app"],
      "v1",
      options(r, { credentials: creds, noCredential: WHERE }).opts,
    );
    const [m] = messages(got);
    expect(m).toContain("refused the dockerconfigjson credential");
    expect(m).not.toContain("no credential is configured");
  });

  test("the token endpoint refuses it: the same", async () => {
    const r = await sim({ anonymousPull: false, users: { alice: "right" } });
    r.push("myorg/app", "v1");
    const creds = { username: "alice", password: "wrong" };
    const got = await resolveDigests(
      ["myorg/app"],
      "v1",
      options(r, { credentials: creds, noCredential: WHERE }).opts,
    );
    const [m] = messages(got);
    expect(m).toContain("refused the dockerconfigjson credential");
    expect(m).not.toContain("no credential is configured");
  });
});
