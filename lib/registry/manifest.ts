// One manifest HEAD per repository. HEAD, not GET: Docker Hub counts a manifest GET as a pull
// against the same quota the workloads' own pulls use, and a HEAD as a free version check.
// For the same reason there is no fallback to GET when the digest header is missing: a registry
// that cannot answer a HEAD with its digest fails that image (bad_digest) instead.
import { RegistryError } from "./errors.ts";
import { type HttpContext, send } from "./http.ts";
import { DIGEST_RE, MANIFEST_ACCEPT } from "./reference.ts";
import { errorFromResponse, rateLimitOf } from "./response.ts";

export async function headDigest(
  ctx: HttpContext,
  opts: { endpoint: string; path: string; tag: string; authorization?: string },
): Promise<string> {
  const res = await send(ctx, {
    method: "HEAD",
    url: new URL(`${opts.endpoint}/v2/${opts.path}/manifests/${opts.tag}`),
    headers: { Accept: MANIFEST_ACCEPT },
    authorization: opts.authorization,
  });
  if (res.status !== 200) throw errorFromResponse(res, `manifest HEAD for ${opts.path}:${opts.tag}`);
  const digest = res.headers.get("docker-content-digest")?.trim();
  if (!digest || !DIGEST_RE.test(digest)) {
    const shown = digest ? `"${digest.slice(0, 80)}"` : "missing";
    throw new RegistryError(
      "bad_digest",
      `Docker-Content-Digest is ${shown}, not sha256:<64 lowercase hex>`,
      {
        status: 200,
        rateLimit: rateLimitOf(res),
      },
    );
  }
  return digest;
}
