// The clouds' workload identities (`auth: aws | gcp | azure`) as the tick sees them: for a
// registry, a function that logs in once and hands back Basic credentials for the registry, with
// every secret of the exchange to scrub. Each cloud lives in its own module (aws/, gcp.ts,
// azure.ts), loaded only when a registry with that `auth` is about to be called, so a tick
// without one never loads it. The environment and token files are read then, not at start-up: a
// projected token that rotated is read fresh.
import type { RegistryConfig } from "../config.ts";
import type { HttpContext } from "./http.ts";
import type { CloudEnv, CloudLogin, CloudSource } from "./identity-parts.ts";

export type { CloudEnv, CloudLogin, CloudSource } from "./identity-parts.ts";

export type IdentityLogin = (ctx: HttpContext) => Promise<CloudLogin>;

/**
 * One login per registry host for the life of the returned function (one tick): the tag look-up
 * and the signature look-up of the same registry share it, a refusal included, so a refused
 * identity is asked once and said once. Undefined for a registry without a cloud `auth`.
 */
export function identityLogins(
  env: CloudEnv,
  readFile: (path: string) => string,
): (registry: RegistryConfig, hostKey: string) => IdentityLogin | undefined {
  const logins = new Map<string, Promise<CloudLogin>>();
  return (registry, hostKey) => {
    const auth = registry.auth;
    if (auth !== "aws" && auth !== "gcp" && auth !== "azure") return undefined;
    const src = { env, readFile, insecure: registry.insecure };
    return (ctx) => {
      let login = logins.get(hostKey);
      if (!login) {
        login = loginWith(ctx, { auth, registry, src });
        logins.set(hostKey, login);
      }
      return login;
    };
  };
}

async function loginWith(
  ctx: HttpContext,
  opts: { auth: "aws" | "gcp" | "azure"; registry: RegistryConfig; src: CloudSource },
): Promise<CloudLogin> {
  const { auth, registry, src } = opts;
  if (auth === "aws") return (await import("./aws/ecr.ts")).ecrLogin(ctx, registry.host, src);
  if (auth === "gcp") return (await import("./gcp.ts")).gcpLogin(ctx, src);
  return (await import("./azure.ts")).azureLogin(ctx, registry, src);
}
