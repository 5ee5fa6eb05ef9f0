// The store's place in the config: `store.name` defaults to image-refresh-state, `store.namespace`
// to the pod's own (its service-account namespace file), and a top-level `namespace` is the
// targets' default. Outside a pod an unset store namespace is an error, never a guess.
import { describe, expect, test } from "bun:test";
import { type Config, ConfigError, POD_NAMESPACE_FILE, parseConfig, storeRef } from "./config.ts";
import { exampleConfig } from "./example-config.ts";

// biome-ignore lint/suspicious/noExplicitAny: the tests tweak free-form config documents
function parse(tweak: (c: any) => void = () => {}): Config {
  const c = structuredClone(exampleConfig()) as Record<string, unknown>;
  tweak(c);
  return parseConfig(JSON.stringify(c), {});
}
const problems = (tweak: (c: Record<string, unknown>) => void): string[] => {
  try {
    parse(tweak);
  } catch (e) {
    if (e instanceof ConfigError) return e.problems;
    throw e;
  }
  return [];
};
const pod = (ns: string | undefined) => (p: string) => {
  if (p === POD_NAMESPACE_FILE && ns !== undefined) return `${ns}\n`;
  throw Object.assign(new Error("no such file"), { code: "ENOENT" });
};

describe("store and namespace in the config", () => {
  test("defaults: store name image-refresh-state, namespace left to the pod", () => {
    const c = parse((d) => delete d.store);
    expect(c.store).toEqual({ name: "image-refresh-state" });
    expect(storeRef(c, pod("image-refresh"))).toEqual({
      namespace: "image-refresh",
      name: "image-refresh-state",
    });
  });

  test("a configured namespace wins over the pod's", () => {
    const c = parse((d) => {
      d.store = { namespace: "ops", name: "refresh-book" };
    });
    expect(storeRef(c, pod("image-refresh"))).toEqual({ namespace: "ops", name: "refresh-book" });
  });

  test("outside a pod with no store.namespace: a configuration error saying what to set", () => {
    const c = parse((d) => delete d.store);
    expect(() => storeRef(c, pod(undefined))).toThrow(/store\.namespace is not set and this is not a pod/);
    expect(() => storeRef(c, pod("Not A Label"))).toThrow(ConfigError);
  });

  test("bad store fields are named by path", () => {
    expect(problems((d) => (d.store = { name: "Bad_Name" }))).toEqual([
      "store.name: must be a lowercase DNS-1123 name",
    ]);
    expect(problems((d) => (d.store = { namespace: "a.b" }))).toEqual([
      "store.namespace: must be a lowercase DNS-1123 label",
    ]);
    expect(problems((d) => (d.store = { nme: "x" }))[0]).toStartWith("store: Unrecognized key");
  });

  test("a top-level namespace is the targets' default, before the state object's", () => {
    const c = parse((d) => {
      d.namespace = "web";
    });
    expect(c.images[0]?.targets.map((t) => t.namespace)).toEqual(["web", "web"]);
    expect(c.images[1]?.targets[0]?.namespace).toBe("agents");
    expect(parse().images[0]?.targets[0]?.namespace).toBe("apps");
  });
});
