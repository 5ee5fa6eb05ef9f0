// The kustomize install's step 3 (docs/install-kustomize.md), the pull secret, as a user runs it:
// both `kubectl create secret` forms with the real kubectl (client-side dry run), the Secret's
// `.dockerconfigjson` read back by the product's own parser for the configured host, and the name,
// key and path the page gives are the ones k8s/base/cronjob.yaml mounts.
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { credentialsFor, parseDockerConfig } from "../../lib/registry/credentials.ts";
import { needTool } from "../support/tools.ts";

const ROOT = join(import.meta.dir, "..", "..");
const PAGE = readFileSync(join(ROOT, "docs", "install-kustomize.md"), "utf8");
const CRONJOB = readFileSync(join(ROOT, "k8s", "base", "cronjob.yaml"), "utf8");
const dir = mkdtempSync(join(tmpdir(), "image-refresh-pull-secret-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The page's step 3 commands, continuation lines joined and the comment's `#` dropped. */
function pageCommands(): string[] {
  const at = PAGE.indexOf("**A private registry: the pull secret.**");
  if (at < 0) throw new Error("docs/install-kustomize.md has no pull-secret step");
  const step = PAGE.slice(at);
  const block = /```sh\n([\s\S]*?)```/.exec(step)?.[1] ?? "";
  const lines = block.split("\n").map((l) => l.replace(/^\s*# ?(or: )?/, "").replace(/\s+#.*$/, ""));
  return lines
    .join("\n")
    .replace(/\\\n\s*/g, "")
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l.includes("create secret"));
}

function kubectl(argv: string[]): { code: number; out: string; err: string } {
  const p = Bun.spawnSync(["kubectl", ...argv, "--dry-run=client", "-o", "json"], {
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: dir, KUBECONFIG: join(dir, "none") },
  });
  return { code: p.exitCode, out: p.stdout.toString(), err: p.stderr.toString() };
}

describe("the pull-secret step of docs/install-kustomize.md", () => {
  test("names the Secret, key and path the base's CronJob mounts", () => {
    expect(CRONJOB).toContain("secretName: image-refresh-pull-secret");
    expect(CRONJOB).toContain("- key: .dockerconfigjson");
    expect(CRONJOB).toContain("mountPath: /etc/image-refresh/pull-secret");
    expect(CRONJOB).toMatch(/secretName: image-refresh-pull-secret\n\s+# [^\n]*\n\s+optional: true/);
    expect(PAGE).toContain("dockerConfigJson: /etc/image-refresh/pull-secret/.dockerconfigjson");
    expect(pageCommands()).toHaveLength(2);
  });

  test.skipIf(needTool("kubectl", { apt: "kubernetes-client" }))(
    "both forms make a Secret the product reads credentials for its host from",
    () => {
      const config = join(dir, "config.json");
      const auth = Buffer.from("USER:TOKEN").toString("base64");
      writeFileSync(config, JSON.stringify({ auths: { "ghcr.io": { auth } } }));
      for (const line of pageCommands()) {
        const argv = line
          .replace(/\$HOME\/\.docker\/config\.json/, config)
          .split(/\s+/)
          .slice(1); // "kubectl"
        const r = kubectl(argv);
        expect({ line, code: r.code, err: r.err }).toEqual({ line, code: 0, err: "" });
        const secret = JSON.parse(r.out);
        expect(secret.metadata).toMatchObject({
          name: "image-refresh-pull-secret",
          namespace: "image-refresh",
        });
        expect(secret.type).toBe("kubernetes.io/dockerconfigjson");
        const text = Buffer.from(secret.data[".dockerconfigjson"], "base64").toString("utf8");
        expect(credentialsFor(parseDockerConfig(text), "ghcr.io")).toEqual({
          username: "USER",
          password: "TOKEN",
        });
      }
    },
  );
});
