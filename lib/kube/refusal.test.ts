import { describe, expect, test } from "bun:test";
import { ApiError } from "./errors.ts";
import { explainRefusal, isRefusal, parseForbidden } from "./refusal.ts";

const REAL_403 =
  'deployments.apps "web" is forbidden: User "system:serviceaccount:image-refresh:image-refresh" cannot patch resource "deployments" in API group "apps" in the namespace "apps"';

const apiError = (code: number, reason: string, statusMessage: string) =>
  new ApiError({
    method: "PATCH",
    url: "https://x",
    target: "Deployment apps/web",
    code,
    reason,
    statusMessage,
  });

describe("a refused workload patch", () => {
  test("kube-apiserver's Forbidden message gives the verb, resource, group, namespace and user", () => {
    expect(parseForbidden(REAL_403)).toEqual({
      user: "system:serviceaccount:image-refresh:image-refresh",
      verb: "patch",
      resource: "deployments",
      group: "apps",
      namespace: "apps",
    });
    expect(parseForbidden("forbidden by a webhook")).toBeUndefined();
  });

  test("a 403 names the verb, the resource and the Role to grant it in", () => {
    const s = explainRefusal(apiError(403, "Forbidden", REAL_403), "apps");
    expect(s).toContain("grant `patch` on deployments.apps in apps");
    expect(s).toContain("the Role apps/image-refresh");
    expect(s).toContain("ServiceAccount image-refresh/image-refresh");
  });

  test("only 403, 404 and 422 are refusals; a timeout or a 500 is not", () => {
    expect([403, 404, 422, 409, 500, 0].map((c) => isRefusal(apiError(c, "X", "")))).toEqual([
      true,
      true,
      true,
      false,
      false,
      false,
    ]);
    expect(isRefusal(new Error("timeout"))).toBe(false);
  });
});
