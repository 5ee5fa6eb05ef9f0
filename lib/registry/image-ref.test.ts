// distribution/reference's normalisation rules (normalize_test.go, regexp_test.go), as a table.
import { expect, test } from "bun:test";
import { configuredRef, type ImageRef, parseImageRef, sameRepository } from "./image-ref.ts";

const D = `sha256:${"a".repeat(64)}`;
const CASES: Array<[string, ImageRef | undefined]> = [
  ["nginx", { host: "docker.io", path: "library/nginx" }],
  ["nginx:1.25", { host: "docker.io", path: "library/nginx", tag: "1.25" }],
  ["docker.io/nginx", { host: "docker.io", path: "library/nginx" }],
  ["index.docker.io/library/nginx", { host: "docker.io", path: "library/nginx" }],
  ["index.docker.io/nginx:latest", { host: "docker.io", path: "library/nginx", tag: "latest" }],
  // Not a name distribution/reference folds into docker.io, and one component keeps no library/.
  ["registry-1.docker.io/nginx", { host: "registry-1.docker.io", path: "nginx" }],
  ["myorg/api:stable", { host: "docker.io", path: "myorg/api", tag: "stable" }],
  ["docker.io/myorg/api", { host: "docker.io", path: "myorg/api" }],
  [`myorg/api@${D}`, { host: "docker.io", path: "myorg/api", digest: D }],
  [`myorg/api:stable@${D}`, { host: "docker.io", path: "myorg/api", tag: "stable", digest: D }],
  ["localhost/app", { host: "localhost", path: "app" }],
  ["localhost:5000/team/app:v1", { host: "localhost:5000", path: "team/app", tag: "v1" }],
  ["127.0.0.1:5000/myorg/api", { host: "127.0.0.1:5000", path: "myorg/api" }],
  ["Registry.Example.com/a/b/c:x", { host: "registry.example.com", path: "a/b/c", tag: "x" }],
  ["ghcr.io/org/team/app", { host: "ghcr.io", path: "org/team/app" }],
  ["[::1]:5000/app", { host: "[::1]:5000", path: "app" }],
  // One component on another registry keeps no library/.
  ["quay.io/app", { host: "quay.io", path: "app" }],
  // Not references a runtime would pull.
  ["", undefined],
  // An upper-case first component is a host, as distribution/reference splits it.
  ["MyOrg/api", { host: "myorg", path: "api" }],
  ["myorg/API", undefined],
  ["myorg/api:", undefined],
  ["myorg/api:-x", undefined],
  ["myorg/api@sha256:abc", undefined],
  ["myorg//api", undefined],
  ["/api", undefined],
  ["exa_mple.com/app", undefined],
];
for (const [ref, want] of CASES)
  test(`${JSON.stringify(ref)}`, () => expect(parseImageRef(ref)).toEqual(want));

test("the configured image compares by host and repository, whatever the tag or digest", () => {
  const hub = configuredRef("docker.io", "myorg/api") as ImageRef;
  for (const live of ["myorg/api:stable", `docker.io/myorg/api@${D}`, "index.docker.io/myorg/api:x"])
    expect(sameRepository(hub, parseImageRef(live) as ImageRef)).toBe(true);
  for (const live of ["myorg/apix:stable", "envoy:1", "ghcr.io/myorg/api:stable"])
    expect(sameRepository(hub, parseImageRef(live) as ImageRef)).toBe(false);
  expect(configuredRef("docker.io", "nginx")).toEqual({ host: "docker.io", path: "library/nginx" });
  expect(
    sameRepository(configuredRef("docker.io", "nginx") as ImageRef, parseImageRef("nginx:1") as ImageRef),
  ).toBe(true);
  const local = configuredRef("127.0.0.1:5000", "myorg/api") as ImageRef;
  expect(sameRepository(local, parseImageRef("myorg/api:stable") as ImageRef)).toBe(false);
});
