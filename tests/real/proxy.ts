// An HTTPS relay on 127.0.0.1 in front of the real API server, serving a certificate from the
// cluster's CA, that lets a story act between two of the product's requests: `hook` sees each
// request before it is forwarded and may write to the cluster first (a concurrent writer) or
// send it to another URL (a watch from a compacted resourceVersion). Every answer is the real
// server's; the relay records what it forwarded and the status that came back.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { generateTls } from "../../sim/tls.ts";
import type { Cluster } from "./cluster.ts";

export interface Seen {
  method: string;
  url: URL;
  contentType: string;
  body: string;
}

export interface Relayed {
  method: string;
  path: string;
  query: string;
  status: number;
  /** The answer's text as far as it was read, for answers the hook asked to keep. */
  text?: string;
}

/** What a hook may answer: forward to another URL, and keep the whole answer's text. */
export type Hook = (r: Seen) => Promise<{ url?: URL; keep?: boolean } | undefined>;

export interface Relay {
  url: string;
  kubeconfig: string;
  log: Relayed[];
  hook: Hook | undefined;
  stop(): void;
}

export function startRelay(c: Cluster): Relay {
  const tls = generateTls({ ca: { certPem: c.cp.caPem, keyPem: c.cp.caKeyPem } });
  const upstream = new URL(c.cp.server);
  const relay: Relay = { url: "", kubeconfig: "", log: [], hook: undefined, stop: () => server.stop(true) };
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    tls: { cert: tls.certPem, key: tls.keyPem },
    async fetch(req) {
      const url = new URL(req.url);
      url.protocol = upstream.protocol;
      url.host = upstream.host;
      const body = req.method === "GET" ? "" : await req.text();
      const seen = { method: req.method, url, contentType: req.headers.get("content-type") ?? "", body };
      const plan = (await relay.hook?.(seen)) ?? {};
      const target = plan.url ?? url;
      const headers = new Headers(req.headers);
      headers.set("accept-encoding", "identity");
      headers.delete("host");
      const up = await fetch(target, {
        method: req.method,
        headers,
        body: body === "" ? undefined : body,
        tls: { ca: c.cp.caPem },
      });
      const entry: Relayed = {
        method: req.method,
        path: target.pathname,
        query: target.search,
        status: up.status,
      };
      relay.log.push(entry);
      const out = new Headers(up.headers);
      out.delete("content-encoding");
      out.delete("content-length");
      if (!plan.keep || !up.body) return new Response(up.body, { status: up.status, headers: out });
      // Kept as it streams: a watch the server answers with an ERROR event may stay open after it.
      entry.text = "";
      const decoder = new TextDecoder();
      const copy = new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, ctl) {
          entry.text += decoder.decode(chunk, { stream: true });
          ctl.enqueue(chunk);
        },
      });
      return new Response(up.body.pipeThrough(copy), { status: up.status, headers: out });
    },
  });
  relay.url = `https://127.0.0.1:${server.port}`;
  relay.kubeconfig = join(c.cp.dir, `relay-${server.port}.kubeconfig`);
  writeFileSync(
    relay.kubeconfig,
    JSON.stringify({
      apiVersion: "v1",
      kind: "Config",
      clusters: [{ name: "relay", cluster: { server: relay.url, "certificate-authority": c.cp.caPath } }],
      users: [{ name: "admin", user: { token: c.cp.admin.token } }],
      contexts: [{ name: "relay", context: { cluster: "relay", user: "admin" } }],
      "current-context": "relay",
    }),
  );
  return relay;
}
