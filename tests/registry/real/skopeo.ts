// The real client side: skopeo pushes the `dir:` layouts and reads back the raw manifest, whose
// sha256 (by coreutils' sha256sum, not our code) is the digest a tag must resolve to.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface Access {
  /** The registry's CA; absent means plain HTTP. */
  caPem?: string;
  creds?: { user: string; password: string };
}

function flags(a: Access, side: "dest" | "src" | ""): string[] {
  const p = side ? `--${side}-` : "--";
  const out: string[] = [];
  if (a.caPem) {
    const dir = mkdtempSync(join(tmpdir(), "ir-skopeo-certs-"));
    writeFileSync(join(dir, "ca.crt"), a.caPem);
    out.push(`${p}cert-dir=${dir}`);
  } else out.push(`${p}tls-verify=false`);
  if (a.creds) out.push(`${p}creds=${a.creds.user}:${a.creds.password}`);
  return out;
}

/** Asynchronous on purpose: the token issuer skopeo asks runs in this process. */
async function run(cmd: string[], stdin?: Uint8Array): Promise<Uint8Array> {
  const p = Bun.spawn(cmd, { stdout: "pipe", stderr: "pipe", stdin: stdin ?? "ignore" });
  const timer = setTimeout(() => p.kill("SIGKILL"), 60_000);
  const [out, err, code] = await Promise.all([
    new Response(p.stdout).bytes(),
    new Response(p.stderr).text(),
    p.exited,
  ]);
  clearTimeout(timer);
  if (code !== 0) throw new Error(`${cmd.join(" ")} failed (${code}): ${err}`);
  return out;
}

/** Pushes a `dir:` layout (every instance of a list) to host/repo:tag, digests unchanged. */
export async function push(layout: string, ref: string, a: Access = {}): Promise<void> {
  await run([
    "skopeo",
    "copy",
    "--quiet",
    "--all",
    "--preserve-digests",
    ...flags(a, "dest"),
    `dir:${layout}`,
    `docker://${ref}`,
  ]);
}

/** `skopeo inspect --raw docker://ref | sha256sum`, as sha256:<hex>. */
export async function rawDigest(ref: string, a: Access = {}): Promise<string> {
  const raw = await run(["skopeo", "inspect", "--raw", ...flags(a, ""), `docker://${ref}`]);
  const sum = new TextDecoder().decode(await run(["sha256sum"], raw)).split(" ")[0];
  return `sha256:${sum}`;
}

/** The top-level media type skopeo reads back (to show each kind really is what it claims). */
export async function rawMediaType(ref: string, a: Access = {}): Promise<string> {
  const raw = await run(["skopeo", "inspect", "--raw", ...flags(a, ""), `docker://${ref}`]);
  return (JSON.parse(new TextDecoder().decode(raw)) as { mediaType?: string }).mediaType ?? "";
}
