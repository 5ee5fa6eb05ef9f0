// Which connections a tick opens before the store has answered: the registry's, and the
// configured token endpoint's, unless a request would not find them (TLS options of its own, a
// proxy) or no image is resolved. That the connection is then used is proved over real sockets
// (tests/e2e/registry-preconnect.e2e.test.ts).
import { describe, expect, test } from "bun:test";
import { type Config, parseConfig } from "../config.ts";
import { exampleConfig } from "../example-config.ts";
import { originsToPreconnect, preconnectRegistry } from "./preconnect.ts";

// biome-ignore lint/suspicious/noExplicitAny: the tests tweak free-form config documents
function config(tweak: (c: any) => void = () => {}): Config {
  const c = structuredClone(exampleConfig()) as Record<string, unknown>;
  tweak(c);
  return parseConfig(JSON.stringify(c), {});
}

describe("the origins opened early", () => {
  test("Docker Hub and every registry on a scheme's default port: none (Bun cannot preconnect to one yet)", () => {
    expect(originsToPreconnect(config(), {})).toEqual([]);
    const c = config((d) => {
      d.registry = { host: "reg.example.com", endpoint: "https://reg.example.com:443" };
    });
    expect(originsToPreconnect(c, {})).toEqual([]);
  });

  test("with the real fetch, a Docker Hub config opens nothing and never throws", () => {
    expect(preconnectRegistry(config(), {})).toEqual([]);
  });

  test("a preconnect that throws is only a connection not opened", () => {
    const f = Object.assign(async () => new Response(), {
      preconnect: () => {
        throw new TypeError("Invalid port");
      },
    });
    const c = config((d) => {
      d.registry = { host: "reg.example.com:5000" };
    });
    expect(preconnectRegistry(c, {}, undefined, f as unknown as typeof fetch)).toEqual([]);
  });

  test("a configured endpoint, and a token endpoint on another origin", () => {
    const c = config((d) => {
      d.registry = {
        host: "reg.example.com",
        endpoint: "https://mirror.example.com:5000/",
        token: { realm: "https://auth.example.com:8443/token?x=1", service: "reg" },
      };
    });
    expect(originsToPreconnect(c, {})).toEqual([
      "https://mirror.example.com:5000",
      "https://auth.example.com:8443",
    ]);
  });

  test("a token endpoint on the registry's origin: one connection", () => {
    const c = config((d) => {
      d.registry = { host: "reg.example.com:5000", token: { realm: "https://reg.example.com:5000/token" } };
    });
    expect(originsToPreconnect(c, {})).toEqual(["https://reg.example.com:5000"]);
  });

  test("plain http only with registry.insecure (a TCP connection, no TLS)", () => {
    const c = config((d) => {
      d.registry = { host: "reg.local:5000", endpoint: "http://reg.local:5000", insecure: true };
    });
    expect(originsToPreconnect(c, {})).toEqual(["http://reg.local:5000"]);
  });

  test("none when every image is pinned", () => {
    const c = config((d) => {
      d.registry = { host: "reg.example.com:5000" };
      for (const img of d.images) img.pinned = true;
    });
    expect(originsToPreconnect(c, {})).toEqual([]);
  });

  test("none when a request carries TLS options of its own: an extra trust anchor, NODE_TLS_REJECT_UNAUTHORIZED", () => {
    const c = config((d) => {
      d.registry = { host: "reg.example.com:5000" };
    });
    expect(originsToPreconnect(c, {})).toEqual(["https://reg.example.com:5000"]);
    expect(originsToPreconnect(c, {}, "-----BEGIN CERTIFICATE-----")).toEqual([]);
    expect(originsToPreconnect(c, { NODE_TLS_REJECT_UNAUTHORIZED: "1" })).toEqual([]);
  });

  test("none through a proxy", () => {
    const c = config((d) => {
      d.registry = { host: "reg.example.com:5000" };
    });
    for (const name of ["HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"])
      expect(originsToPreconnect(c, { [name]: "http://proxy:3128" })).toEqual([]);
    expect(originsToPreconnect(c, { HTTPS_PROXY: "" })).toEqual(["https://reg.example.com:5000"]);
  });
});

describe("opening them", () => {
  test("each origin once, through the fetch given", () => {
    const opened: string[] = [];
    const f = Object.assign(async () => new Response(), { preconnect: (u: string) => opened.push(u) });
    const c = config((d) => {
      d.registry = { host: "reg.example.com:5000", token: { realm: "https://auth.example.com:8443/token" } };
    });
    expect(preconnectRegistry(c, {}, undefined, f as unknown as typeof fetch)).toEqual(opened);
    expect(opened).toEqual(["https://reg.example.com:5000", "https://auth.example.com:8443"]);
  });

  test("a fetch without preconnect (a test double) opens nothing", () => {
    const f = async () => new Response();
    expect(preconnectRegistry(config(), {}, undefined, f as unknown as typeof fetch)).toEqual([]);
  });
});
