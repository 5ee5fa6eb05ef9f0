import { describe, expect, test } from "bun:test";
import { noopTelemetry } from "../telemetry.ts";
import { type HttpContext, registryTls, send } from "./http.ts";

describe("registryTls", () => {
  test("no option at all when Bun's default already verifies", () => {
    expect(registryTls(undefined, {})).toBeUndefined();
  });
  test("NODE_TLS_REJECT_UNAUTHORIZED set to anything: verification said on the request", () => {
    for (const v of ["0", "false", "", "1"])
      expect(registryTls(undefined, { NODE_TLS_REJECT_UNAUTHORIZED: v })).toEqual({
        rejectUnauthorized: true,
      });
  });
  test("an extra trust anchor travels with verification on", () => {
    expect(registryTls("PEM", {})).toEqual({ rejectUnauthorized: true, ca: "PEM" });
    expect(registryTls("PEM", { NODE_TLS_REJECT_UNAUTHORIZED: "0" })).toEqual({
      rejectUnauthorized: true,
      ca: "PEM",
    });
  });
});

describe("send", () => {
  const sent: Array<RequestInit & { tls?: unknown }> = [];
  const ctx = (ca?: string): HttpContext => ({
    fetch: (async (_url: string | URL | Request, init?: RequestInit) => {
      sent.push(init ?? {});
      return new Response(null, { status: 200 });
    }) as typeof fetch,
    telemetry: noopTelemetry(),
    signal: new AbortController().signal,
    requestTimeoutMs: 1000,
    insecure: false,
    ...(ca ? { ca } : {}),
  });
  const head = { method: "HEAD" as const, url: new URL("https://r.example/v2/"), headers: {} };

  test("the request carries the option registryTls gives for this process", async () => {
    sent.length = 0;
    await send(ctx(), head);
    await send(ctx("PEM"), head);
    expect(sent.map((i) => i.tls)).toEqual([
      registryTls(undefined, process.env),
      registryTls("PEM", process.env),
    ]);
    expect(sent[1]?.tls).toEqual({ rejectUnauthorized: true, ca: "PEM" });
  });
});
