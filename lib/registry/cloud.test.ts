// One identity login per registry host and tick: the tag look-up and the signature look-up share
// it, a refusal included; another host logs in on its own; a registry without `auth` has none.
import { describe, expect, test } from "bun:test";
import { scriptedFetch } from "../../tests/support/scripted-fetch.ts";
import type { RegistryConfig } from "../config.ts";
import { identityLogins } from "./cloud.ts";
import type { HttpContext } from "./http.ts";

function context(answer: () => Response): { ctx: HttpContext; urls: string[] } {
  const urls: string[] = [];
  const { ctx } = scriptedFetch((r) => {
    urls.push(r.url);
    return answer();
  });
  return { ctx, urls };
}

const GCP: RegistryConfig = { host: "europe-docker.pkg.dev", insecure: false, auth: "gcp" };
const env = { GCE_METADATA_HOST: "127.0.0.1:1" };
const readFile = () => "";

describe("identityLogins", () => {
  test("asked twice for one host in one tick: one login, the same credentials", async () => {
    const { ctx, urls } = context(() => Response.json({ access_token: "ya29.once" }));
    const logins = identityLogins(env, readFile);
    const first = await logins(GCP, "europe-docker.pkg.dev")?.(ctx);
    const again = await logins(GCP, "europe-docker.pkg.dev")?.(ctx);
    expect(again).toBe(first as NonNullable<typeof first>);
    expect(urls.length).toBe(1);
  });

  test("a refusal is shared too: the identity is asked once", async () => {
    const { ctx, urls } = context(() => new Response("no", { status: 403 }));
    const logins = identityLogins(env, readFile);
    const login = logins(GCP, "europe-docker.pkg.dev");
    const a = await login?.(ctx).catch((e: Error) => e.message);
    const b = await login?.(ctx).catch((e: Error) => e.message);
    expect(b).toBe(a as string);
    expect(urls.length).toBe(1);
  });

  test("another host, or the next tick's logins: a login of its own", async () => {
    const { ctx, urls } = context(() => Response.json({ access_token: "ya29" }));
    const logins = identityLogins(env, readFile);
    await logins(GCP, "europe-docker.pkg.dev")?.(ctx);
    await logins({ ...GCP, host: "us-docker.pkg.dev" }, "us-docker.pkg.dev")?.(ctx);
    await identityLogins(env, readFile)(GCP, "europe-docker.pkg.dev")?.(ctx);
    expect(urls.length).toBe(3);
  });

  test("no cloud auth: no login", () => {
    const logins = identityLogins(env, readFile);
    expect(logins({ host: "ghcr.io", insecure: false }, "ghcr.io")).toBeUndefined();
    expect(logins({ host: "ghcr.io", insecure: false, auth: "none" }, "ghcr.io")).toBeUndefined();
  });
});
