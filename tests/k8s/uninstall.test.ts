// What `kubectl delete -k` removes, as docs/install-kustomize.md says: the rendered manifests hold
// the Namespace but never the store or the pull secret, so deleting the overlay deletes them only
// with the namespace; the doc's uninstall overlay (its own YAML, read from the doc) renders the
// overlay without its Namespace and nothing else changed.
import { expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describeWith, needTool } from "../support/tools.ts";
import { K8S, render } from "./checks.ts";

const describe = describeWith(needTool("kubectl", { apt: "kubernetes-client" }));
const DOC = join(import.meta.dir, "..", "..", "docs", "install-kustomize.md");
const EXAMPLE = "examples/two-deployments-and-daemonset";

/** The doc's uninstall overlay: the yaml block that starts with its path. */
function uninstallOverlay(): string {
  const doc = readFileSync(DOC, "utf8");
  const block = /```yaml\n# k8s\/overlays\/prod-uninstall\/kustomization\.yaml\n([\s\S]*?)```/.exec(doc);
  if (!block?.[1]) throw new Error("docs/install-kustomize.md has no k8s/overlays/prod-uninstall block");
  return block[1];
}

const id = (o: { kind: string; metadata: { namespace?: string; name: string } }) =>
  `${o.kind} ${o.metadata.namespace ?? ""}/${o.metadata.name}`;

describe("uninstalling a kustomize overlay", () => {
  const example = render(EXAMPLE);

  test("the rendered manifests hold the Namespace, never the store or a Secret", () => {
    for (const objects of [render("base"), example]) {
      expect(objects.filter((o) => o.kind === "Namespace").map(id)).toEqual(["Namespace /image-refresh"]);
      expect(objects.filter((o) => o.kind === "Secret" || o.metadata.name === "image-refresh-state")).toEqual(
        [],
      );
    }
  });

  test("the doc's uninstall overlay is the overlay without its Namespace", () => {
    // Inside k8s/: kustomize loads no resource from outside the tree it was pointed at.
    const dir = mkdtempSync(join(K8S, ".uninstall-test-"));
    try {
      mkdirSync(join(dir, "prod"));
      mkdirSync(join(dir, "prod-uninstall"));
      writeFileSync(join(dir, "prod", "kustomization.yaml"), `resources:\n  - ../../${EXAMPLE}\n`);
      writeFileSync(join(dir, "prod-uninstall", "kustomization.yaml"), uninstallOverlay());
      const kept = render(join(dir.slice(K8S.length + 1), "prod-uninstall"));
      expect(kept).toEqual(example.filter((o) => o.kind !== "Namespace"));
      expect(kept.length).toBe(example.length - 1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
