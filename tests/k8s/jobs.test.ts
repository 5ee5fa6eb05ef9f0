// On call: running `status` or `rearm` in the cluster as a one-off Job made from the CronJob, with
// its ServiceAccount, config and security context. `kubectl create job --from=cronjob/…` refuses
// a command ("cannot specify --from and command"), so docs/on-call.md pipes its Job through
// `kubectl patch --local` to replace the args. This runs that exact pipeline with the real
// kubectl against a small API server that serves the rendered CronJob and records the Job.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Command, parseArgs } from "../../lib/cli.ts";
import { needTools } from "../support/tools.ts";
import { cronJobOf, render } from "./checks.ts";

// A release's names, not the kustomize base's: the doc's recipe takes them as $NS and $CRONJOB.
const NS = "platform";
const CRONJOB = "refresher-image-refresh";
const gate = needTools([{ tool: "kubectl", apt: "kubernetes-client" }]);
const ROOT = join(import.meta.dir, "..", "..");
const DOC = readFileSync(join(ROOT, "docs", "on-call.md"), "utf8");

/** Every args list docs/on-call.md gives a one-off Job: the table's `["…"]` cells and the -p patches. */
function documentedArgs(): string[][] {
  const cells = [...DOC.matchAll(/`(\["[^`]*"\])`/g)].map((m) => m[1] as string);
  const patches = [...DOC.matchAll(/"value":(\["[^\]]*"\])\}\]'/g)].map((m) => m[1] as string);
  const unique = [...new Set([...cells, ...patches])];
  return unique.map((text) => JSON.parse(text) as string[]);
}

/** The commands of docs/on-call.md, as argv lists, for `args`. */
function oneOffJob(name: string, args: string[]): string[][] {
  const patch = [{ op: "replace", path: "/spec/template/spec/containers/0/args", value: args }];
  return [
    [
      "kubectl",
      "-n",
      NS,
      "create",
      "job",
      name,
      `--from=cronjob/${CRONJOB}`,
      "--dry-run=client",
      "-o",
      "json",
    ],
    ["kubectl", "patch", "--local", "-f", "-", "--type=json", "-o", "json", "-p", JSON.stringify(patch)],
    ["kubectl", "-n", NS, "create", "-f", "-"],
  ];
}

const discovery: Record<string, unknown> = {
  "/version": { major: "1", minor: "34", gitVersion: "v1.34.0" },
  "/api": { kind: "APIVersions", versions: ["v1"], serverAddressByClientCIDRs: [] },
  "/api/v1": { kind: "APIResourceList", groupVersion: "v1", resources: [] },
  "/apis": {
    kind: "APIGroupList",
    apiVersion: "v1",
    groups: [
      {
        name: "batch",
        versions: [{ groupVersion: "batch/v1", version: "v1" }],
        preferredVersion: { groupVersion: "batch/v1", version: "v1" },
      },
    ],
  },
  "/apis/batch/v1": {
    kind: "APIResourceList",
    apiVersion: "v1",
    groupVersion: "batch/v1",
    resources: ["jobs", "cronjobs"].map((name) => ({
      name,
      singularName: name.slice(0, -1),
      namespaced: true,
      kind: name === "jobs" ? "Job" : "CronJob",
      verbs: ["create", "get", "list"],
    })),
  },
};

describe.skipIf(gate)("a one-off Job from the CronJob, as docs/on-call.md runs it", () => {
  // Rendered in beforeAll: Bun runs a skipped describe's body too, and rendering needs kubectl.
  let cron: ReturnType<typeof cronJobOf> & { metadata: { uid: string } };
  const created: Array<{
    metadata: { ownerReferences?: Array<{ kind: string; name: string }> };
    spec: { template: { spec: { serviceAccountName?: string } } };
  }> = [];
  let server: ReturnType<typeof Bun.serve>;
  let dir: string;
  beforeAll(() => {
    const rendered = cronJobOf(render("examples/two-deployments-and-daemonset"));
    // A live object has a uid; kubectl copies it into the Job's ownerReference.
    cron = {
      ...rendered,
      metadata: {
        ...rendered.metadata,
        namespace: NS,
        name: CRONJOB,
        uid: "0f0e0d0c-0000-4000-8000-000000000001",
      },
    };
    server = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      async fetch(req) {
        const path = new URL(req.url).pathname;
        if (req.method === "GET" && path in discovery) return Response.json(discovery[path]);
        if (req.method === "GET" && path === `/apis/batch/v1/namespaces/${NS}/cronjobs/${CRONJOB}`)
          return Response.json(cron);
        if (req.method === "POST" && path === `/apis/batch/v1/namespaces/${NS}/jobs`) {
          const job = (await req.json()) as (typeof created)[number];
          created.push(job);
          return Response.json(job, { status: 201 });
        }
        return Response.json(
          { kind: "Status", apiVersion: "v1", status: "Failure", code: 404, reason: "NotFound" },
          { status: 404 },
        );
      },
    });
    dir = mkdtempSync(join(tmpdir(), "image-refresh-oncall-"));
    writeFileSync(
      join(dir, "kubeconfig"),
      JSON.stringify({
        apiVersion: "v1",
        kind: "Config",
        clusters: [{ name: "c", cluster: { server: `http://127.0.0.1:${server.port}` } }],
        users: [{ name: "u", user: { token: "t" } }],
        contexts: [{ name: "c", context: { cluster: "c", user: "u" } }],
        "current-context": "c",
      }),
    );
  });
  afterAll(() => {
    server.stop(true);
    rmSync(dir, { recursive: true, force: true });
  });

  /** Runs the pipeline stage by stage, stdout into the next stdin, like the shell would. */
  async function pipeline(stages: string[][]): Promise<{ code: number; err: string }> {
    let input = "";
    for (const argv of stages) {
      // This small server has no OpenAPI documents for kubectl's client-side validation.
      const extra = argv.includes("create") && argv.includes("-f") ? ["--validate=false"] : [];
      const p = Bun.spawn(
        [...argv, ...extra, "--kubeconfig", join(dir, "kubeconfig"), "--cache-dir", join(dir, "cache")],
        {
          stdin: new Blob([input]),
          stdout: "pipe",
          stderr: "pipe",
          env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: dir },
        },
      );
      const [out, err, code] = await Promise.all([
        new Response(p.stdout).text(),
        new Response(p.stderr).text(),
        p.exited,
      ]);
      if (code !== 0) return { code, err: `${argv.slice(0, 4).join(" ")}: ${err}` };
      input = out;
    }
    return { code: 0, err: "" };
  }

  test("the doc gives status, rearm and reject as one-off Jobs", () => {
    const commands = new Set(documentedArgs().map((a) => a[0]));
    expect([...commands].sort()).toEqual(["rearm", "reject", "status"]);
    // Each is a command line the binary takes (an unknown flag or a second IMAGE for reject is not).
    for (const args of documentedArgs()) expect(parseArgs(args).command).toBe(args[0] as Command);
  });

  for (const args of documentedArgs()) {
    test(`args ${JSON.stringify(args)}: the CronJob's pod, with only the args changed`, async () => {
      created.length = 0;
      expect(await pipeline(oneOffJob(`${CRONJOB}-${args.join("-")}`, args))).toEqual({
        code: 0,
        err: "",
      });
      expect(created.length).toBe(1);
      const job = created[0];
      const want = structuredClone(cron.spec.jobTemplate.spec.template.spec);
      for (const c of want.containers.slice(0, 1)) {
        c.args = args;
        // kubectl is Go: an empty env value is omitted (omitempty), which means the same.
        for (const e of c.env ?? []) if (e.value === "") delete e.value;
      }
      expect(job?.spec.template.spec).toEqual(want);
      expect(job?.metadata.ownerReferences?.[0]).toMatchObject({ kind: "CronJob", name: CRONJOB });
      expect(job?.spec.template.spec.serviceAccountName).toBe("image-refresh");
    });
  }

  test("docs/on-call.md shows this very pipeline, with the installation's names as $NS and $CRONJOB", () => {
    const doc = DOC;
    expect(doc).toContain('--from=cronjob/"$CRONJOB" --dry-run=client -o json');
    expect(doc).toContain(`kubectl patch --local -f - --type=json -o json`);
    expect(doc).toContain(
      '-p \'[{"op":"replace","path":"/spec/template/spec/containers/0/args","value":["rearm"]}]\'',
    );
    expect(doc).toContain('kubectl -n "$NS" create -f -');
    // No command of the doc names the kustomize base's namespace or CronJob in place of the variables.
    expect(doc).not.toMatch(/kubectl -n image-refresh|cronjob\/image-refresh/);
  });
});

describe("the alert list of docs/alerts.md", () => {
  test("names every alert of k8s/monitoring/rules.yaml", () => {
    const section = readFileSync(join(ROOT, "docs", "alerts.md"), "utf8");
    const rules = readFileSync(join(ROOT, "k8s", "monitoring", "rules.yaml"), "utf8");
    const alerts = [...rules.matchAll(/- alert: (\w+)/g)].map((m) => m[1] as string);
    expect(alerts.length).toBeGreaterThan(10);
    expect(alerts.filter((a) => !section.includes(`\`${a}\``))).toEqual([]);
  });
});
