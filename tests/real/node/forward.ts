// The way from the test into the cluster's network namespace, whose servers nothing outside can
// reach. A Unix socket is a file, not bound to a network namespace: this script, run inside the
// namespace, listens on one socket per target and connects each client to its target there; the
// test's side (forwardFromHost) listens on 127.0.0.1 and connects to the socket.
//
//   nsenter --net=<ns> bun forward.ts <socket>=<host>:<port> ...
import { connect, createServer, type Server, type Socket } from "node:net";

function pipe(a: Socket, b: Socket): void {
  a.pipe(b);
  b.pipe(a);
  a.on("error", () => b.destroy());
  b.on("error", () => a.destroy());
  a.on("close", () => b.destroy());
  b.on("close", () => a.destroy());
}

/** Listens on 127.0.0.1 (a free port) and connects each client to the Unix socket `path`. */
export async function forwardFromHost(path: string): Promise<{ port: number; close(): void }> {
  const server: Server = createServer((client) => pipe(client, connect(path)));
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  return { port, close: () => server.close() };
}

if (import.meta.main) {
  for (const arg of process.argv.slice(2)) {
    const [path, target] = arg.split("=") as [string, string];
    const colon = target.lastIndexOf(":");
    const host = target.slice(0, colon);
    const port = Number(target.slice(colon + 1));
    createServer((client) => pipe(client, connect(port, host))).listen(path);
  }
}
