// The runtime's side of `auth: aws`: what a registry's tick asks for its credentials. The
// environment and files are read when the registry is to be called, not at start-up, so a
// projected token that rotated is read fresh, and a registry held by its Retry-After asks nothing.
// The AWS code (and its SigV4 signer) is loaded only then: a tick without `auth: aws` never
// loads it.
import type { RegistryConfig } from "../../config.ts";
import type { BasicCredentials } from "../credentials.ts";
import type { HttpContext } from "../http.ts";
import type { AwsEnv } from "./identity.ts";

export function awsLogin(
  registry: RegistryConfig,
  env: AwsEnv,
  readFile: (path: string) => string,
): (ctx: HttpContext) => Promise<{ credentials: BasicCredentials; secrets: string[] }> {
  return async (ctx) => {
    const { ecrLogin } = await import("./ecr.ts");
    return ecrLogin(ctx, registry.host, { env, readFile, insecure: registry.insecure });
  };
}
