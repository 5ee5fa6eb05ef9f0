// What plan writes for each registry host it met: its own Retry-After and answer, never another
// host's; the keys the version before kept for its one registry read as the top-level registry's
// and moved to its own keys with the next write (never with a write of their own).
import { describe, expect, test } from "bun:test";
import { agentFails, ann, both, config, observed, write } from "../../../tests/support/plan-tables.ts";
import type { Observed } from "../model.ts";
import { plan } from "./plan.ts";

// node-agent on its own registry; api on the top-level one (docker.io).
const twoRegistries = () =>
  config((c) => {
    c.images[1].registry = { host: "ghcr.io" };
  });
const T = "2026-12-01T12:00:00Z";

function actions(o: Observed) {
  return plan(o, twoRegistries()).actions;
}

describe("per registry host", () => {
  test("a 429 from one host stores its Retry-After under that host only", () => {
    const o = observed(
      both(agentFails("rate_limited"), (o) => {
        o.registries = {
          "docker.io": { held: false },
          "ghcr.io": { held: false, retryAfter: Date.parse(T) },
        };
      }),
    );
    expect(actions(o)).toEqual([
      write({
        change: { "registry-retry-after-ghcr.io": T, "unresolved-streak-node-agent": "1" },
        streaks: ["node-agent"],
      }),
    ]);
  });

  test("one host's stored Retry-After is removed when it was called again; the other host's held one is kept", () => {
    const o = observed((o) => {
      o.registries = { "docker.io": { held: true }, "ghcr.io": { held: false } };
      ann(o, "registry-retry-after-docker.io", "2026-12-01T13:00:00Z");
      ann(o, "registry-retry-after-ghcr.io", "2026-12-01T11:00:00Z");
    });
    expect(actions(o)).toEqual([write({ change: { "registry-retry-after-ghcr.io": null } })]);
  });

  test("each host's answer is kept under its own key", () => {
    const o = observed(
      both(agentFails("server_error"), (o) => {
        o.registries = {
          "docker.io": { held: false, remember: "https://registry-1.docker.io open" },
          "ghcr.io": { held: false, remember: "https://ghcr.io open" },
        };
      }),
    );
    expect(actions(o)).toEqual([
      write({
        change: {
          "unresolved-streak-node-agent": "1",
          "registry-challenge-docker.io": "https://registry-1.docker.io open",
          "registry-challenge-ghcr.io": "https://ghcr.io open",
        },
        streaks: ["node-agent"],
      }),
    ]);
  });
});

describe("the keys the version before kept for its one registry", () => {
  const legacy = (o: Observed) => {
    ann(o, "registry-retry-after", "2026-12-01T11:00:00Z");
    ann(o, "registry-challenge", "https://registry-1.docker.io open");
  };

  test("are the top-level registry's: the same answer learned again writes nothing on a no-op tick", () => {
    const o = observed(
      both(legacy, (o) => {
        o.registries = { "docker.io": { held: true, remember: "https://registry-1.docker.io open" } };
      }),
    );
    expect(plan(o, config()).actions).toEqual([]);
  });

  test("move to the top-level registry's own keys with the next write", () => {
    const o = observed(
      both(legacy, agentFails("server_error"), (o) => {
        o.registries = { "docker.io": { held: true } };
      }),
    );
    expect(plan(o, config()).actions).toEqual([
      write({
        change: {
          "unresolved-streak-node-agent": "1",
          "registry-retry-after": null,
          "registry-retry-after-docker.io": "2026-12-01T11:00:00Z",
          "registry-challenge": null,
          "registry-challenge-docker.io": "https://registry-1.docker.io open",
        },
        streaks: ["node-agent"],
      }),
    ]);
  });

  test("an old Retry-After past its time goes at once, once the top-level registry was called again", () => {
    const o = observed(
      both(legacy, (o) => {
        o.registries = { "docker.io": { held: false } };
      }),
    );
    expect(plan(o, config()).actions).toEqual([
      write({
        change: {
          "registry-retry-after-docker.io": null,
          "registry-retry-after": null,
          "registry-challenge": null,
          "registry-challenge-docker.io": "https://registry-1.docker.io open",
        },
      }),
    ]);
  });

  test("are never another host's: a registry of one image does not inherit them", () => {
    const o = observed((o) => {
      ann(o, "registry-retry-after", "2026-12-01T11:00:00Z");
      o.registries = { "docker.io": { held: true }, "ghcr.io": { held: false } };
    });
    // ghcr.io was called and has nothing stored: nothing to remove for it, and no write at all.
    expect(actions(o)).toEqual([]);
  });
});
