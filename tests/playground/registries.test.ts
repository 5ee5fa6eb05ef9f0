// The playground with an image on a registry and tag of its own: its workloads name that host and
// tag, its builds go under that tag, and the config the playground writes points that registry at
// the simulator too (the pins keep the image's host), without its credentials.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { playgroundConfigText } from "../../lib/commands/playground.ts";
import { parseConfig } from "../../lib/config.ts";
import { type SimApiServer, startApiServer } from "../../sim/apiserver/index.ts";
import * as moves from "../../sim/playground.ts";
import { type SimRegistry, startRegistry } from "../../sim/registry.ts";
import { generateTls } from "../../sim/tls.ts";

const doc = {
  tag: "stable",
  registry: { host: "docker.io" },
  store: { namespace: "image-refresh" },
  namespace: "shop",
  images: [
    { repository: "myorg/web", targets: [{ kind: "Deployment", name: "web", container: "web" }] },
    {
      repository: "myorg/agent",
      tag: "v2",
      registry: { host: "ghcr.io", dockerConfigJson: "/secret/.dockerconfigjson" },
      targets: [{ kind: "Deployment", name: "agent", container: "agent" }],
    },
  ],
};
const config = parseConfig(JSON.stringify(doc), {});

let api: SimApiServer;
let registry: SimRegistry;
let p: moves.Playground;
beforeAll(async () => {
  const tls = generateTls();
  [api, registry] = await Promise.all([startApiServer({ tls, stepMs: 5 }), startRegistry({ tls })]);
  p = moves.seedPlayground(config, api, registry);
});
afterAll(() => Promise.all([api.stop(), registry.stop()]));

const image = (name: string) =>
  api.getObject("Deployment", "shop", name).spec.template.spec.containers[0].image;

test("each image's workloads name its own registry's host and its own tag", () => {
  expect(image("web")).toBe("docker.io/myorg/web:stable");
  expect(image("agent")).toBe("ghcr.io/myorg/agent:v2");
});

test("publish and re-render use the image's own tag and host", () => {
  expect(moves.publish(p, "agent")).toMatch(/^published myorg\/agent:v2 -> sha256:/);
  expect(moves.rerender(p, "agent")).toContain("helm rendered ghcr.io/myorg/agent:v2");
});

test("the written config points every registry at the simulator, hosts kept, no credentials", () => {
  const text = playgroundConfigText(JSON.stringify(doc), config, registry.url);
  const written = parseConfig(text, {});
  expect(
    written.images.map((i) => [i.registry.host, i.registry.endpoint, i.registry.dockerConfigJson]),
  ).toEqual([
    ["docker.io", registry.url, undefined],
    ["ghcr.io", registry.url, undefined],
  ]);
  expect(written.images[1]?.tag).toBe("v2");
});
