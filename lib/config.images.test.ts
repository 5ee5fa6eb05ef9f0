// An image's own tag and registry: each defaults to the top-level one, is checked as the top-level
// one is, and names its field by its path; one host has one set of settings.
// biome-ignore-all lint/suspicious/noExplicitAny: documents made wrong on purpose are free-form JSON
import { describe, expect, test } from "bun:test";
import { ConfigError, parseConfig } from "./config.ts";

const target = (name: string) => ({ kind: "Deployment", name, container: name });
const BASE = {
  tag: "stable",
  registry: { host: "docker.io" },
  namespace: "apps",
  store: { namespace: "image-refresh" },
  images: [
    { repository: "myorg/api", targets: [target("api")] },
    { repository: "myorg/agent", targets: [target("agent")] },
  ],
};

function parse(tweak: (c: any) => void = () => {}, env: Record<string, string> = {}) {
  const c = structuredClone(BASE) as any;
  tweak(c);
  return parseConfig(JSON.stringify(c), env);
}
function problems(tweak: (c: any) => void): string[] {
  try {
    parse(tweak);
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return [];
}

describe("an image's own tag and registry", () => {
  test("an image that names neither takes the top-level ones (an old config, unchanged)", () => {
    const c = parse();
    for (const img of c.images) {
      expect(img.tag).toBe("stable");
      expect(img.registry).toEqual({ host: "docker.io", insecure: false });
    }
  });

  test("an image's own tag and registry are its own; the others keep the top-level ones", () => {
    const c = parse((d) => {
      d.images[0].tag = "v2";
      d.images[0].registry = { host: "ghcr.io", dockerConfigJson: "/s/.dockerconfigjson" };
    });
    expect(c.images[0]?.tag).toBe("v2");
    expect(c.images[0]?.registry).toEqual({
      host: "ghcr.io",
      insecure: false,
      dockerConfigJson: "/s/.dockerconfigjson",
    });
    expect(c.images[1]?.tag).toBe("stable");
    expect(c.images[1]?.registry.host).toBe("docker.io");
    expect(c.tag).toBe("stable");
    expect(c.registry.host).toBe("docker.io");
  });

  test("IMAGE_TAG overrides the top-level tag only: an image's own tag stays", () => {
    const c = parse((d) => (d.images[0].tag = "v2"), { IMAGE_TAG: "edge" });
    expect([c.images[0]?.tag, c.images[1]?.tag]).toEqual(["v2", "edge"]);
  });

  const REFUSED: Array<[string, (c: any) => void, string]> = [
    ["a tag that is not one", (c) => (c.images[1].tag = ".v2"), "images[1].tag: must be a valid image tag"],
    [
      "a registry without a host",
      (c) => (c.images[0].registry = { endpoint: "https://r.example" }),
      "images[0].registry.host: ",
    ],
    [
      "a field the registry does not have",
      (c) => (c.images[0].registry = { host: "ghcr.io", hots: "x" }),
      "images[0].registry: ",
    ],
    [
      "a plain-http endpoint without insecure",
      (c) => (c.images[0].registry = { host: "r.example", endpoint: "http://r.example" }),
      "images[0].registry.endpoint: is plain http; set images[0].registry.insecure: true to allow it",
    ],
    [
      "a plain-http realm without insecure",
      (c) => (c.images[0].registry = { host: "r.example", token: { realm: "http://r.example/t" } }),
      "images[0].registry.token.realm: is plain http; set images[0].registry.insecure: true",
    ],
    [
      "a repository that repeats its own registry's host",
      (c) => {
        c.images[0].registry = { host: "ghcr.io" };
        c.images[0].repository = "ghcr.io/myorg/api";
      },
      'images[0].repository: "ghcr.io/myorg/api" repeats the registry host; write the host in images[0].registry.host only',
    ],
    [
      "one host with two sets of settings",
      (c) => {
        c.images[0].registry = { host: "ghcr.io" };
        c.images[1].registry = { host: "GHCR.io", dockerConfigJson: "/other" };
      },
      "images[1].registry: host GHCR.io is configured differently in images[0].registry",
    ],
    [
      "the top-level host again with other settings",
      (c) => (c.images[1].registry = { host: "index.docker.io", endpoint: "https://mirror.example" }),
      "images[1].registry: host index.docker.io is configured differently in registry",
    ],
  ];
  for (const [label, tweak, want] of REFUSED)
    test(`${label}: refused`, () => {
      const got = problems(tweak);
      expect(got.some((p) => p.startsWith(want))).toBe(true);
    });

  test("one host named the same way by two images, or as the top-level registry is: accepted", () => {
    expect(
      problems((c) => {
        c.images[0].registry = { host: "ghcr.io" };
        c.images[1].registry = { host: "ghcr.io" };
      }),
    ).toEqual([]);
    expect(problems((c) => (c.images[1].registry = { host: "docker.io" }))).toEqual([]);
  });

  test("an image's registry problem is named beside the top-level one's, both at once", () => {
    const got = problems((c) => {
      c.registry.endpoint = "http://hub.example";
      c.images[0].registry = { host: "r.example", endpoint: "http://r.example" };
    });
    expect(got).toEqual([
      "registry.endpoint: is plain http; set registry.insecure: true to allow it",
      "images[0].registry.endpoint: is plain http; set images[0].registry.insecure: true to allow it",
    ]);
  });
});

describe("auth: a cloud's workload identity", () => {
  test("auth: aws on an image's registry: accepted, kept", () => {
    const c = parse(
      (d) => (d.images[0].registry = { host: "123456789012.dkr.ecr.eu-west-1.amazonaws.com", auth: "aws" }),
    );
    expect(c.images[0]?.registry.auth).toBe("aws");
    expect(c.images[1]?.registry.auth).toBeUndefined();
  });
  test("auth: aws beside a pull secret: refused, one source of credentials per registry", () => {
    expect(
      problems((d) => (d.images[0].registry = { host: "r.example", auth: "aws", dockerConfigJson: "/s" })),
    ).toEqual([
      "images[0].registry.auth: aws takes this registry's credentials from ECR; remove images[0].registry.dockerConfigJson",
    ]);
  });
  test("auth: gcp and azure: accepted, kept, each per registry", () => {
    const c = parse((d) => {
      d.registry = { host: "europe-docker.pkg.dev", auth: "gcp" };
      d.images[0].registry = { host: "contoso.azurecr.io", auth: "azure" };
    });
    expect([c.images[0]?.registry.auth, c.images[1]?.registry.auth]).toEqual(["azure", "gcp"]);
  });
  test("gcp and azure beside a pull secret: refused, naming where the credentials come from", () => {
    const got = problems((d) => {
      d.registry = { host: "europe-docker.pkg.dev", auth: "gcp", dockerConfigJson: "/s" };
      d.images[0].registry = { host: "contoso.azurecr.io", auth: "azure", dockerConfigJson: "/s" };
    });
    expect(got).toEqual([
      "registry.auth: gcp takes this registry's credentials from the pod's Google identity; remove registry.dockerConfigJson",
      "images[0].registry.auth: azure takes this registry's credentials from the pod's Azure workload identity; remove images[0].registry.dockerConfigJson",
    ]);
  });
  test("a cloud that is not one of the four: refused by the schema", () => {
    const got = problems((d) => (d.registry.auth = "oci"));
    expect(got.some((p) => p.startsWith("registry.auth: "))).toBe(true);
  });
});
