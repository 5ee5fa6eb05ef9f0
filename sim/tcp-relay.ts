// A TCP relay in front of a simulator, for what a server's HTTP log cannot tell: when a client
// opened each connection, and when it sent bytes on it (the bench: when a tick first reaches for
// the cluster; the tests: that the registry's connection is opened early and then used).
// Bun.listen's `open` runs on accept, before any TLS byte, whereas node:https and Bun.serve tell
// of a connection only later. Bytes pass through unchanged in both directions, so TLS is still end
// to end between the client and the simulator.
import type { Socket, TCPSocketListener } from "bun";

export interface Relay {
  /** `https://127.0.0.1:<port>`: the address clients are given instead of the API server's. */
  url: string;
  /** Each connection since the last clear(), in accept order: when it was accepted and when the
   * client sent bytes on it (performance-clock epoch ms). */
  connections: Array<{ accepted: number; sent: number[] }>;
  clear(): void;
  stop(): void;
}

/** Writes what a socket does not take at once when it drains; ends it once closed upstream. */
class Pipe {
  private queue: Uint8Array[] = [];
  private ending = false;
  constructor(private socket?: Socket<unknown>) {}
  attach(socket: Socket<unknown>): void {
    this.socket = socket;
    this.flush();
  }
  push(data: Uint8Array): void {
    this.queue.push(new Uint8Array(data));
    this.flush();
  }
  end(): void {
    this.ending = true;
    this.flush();
  }
  flush(): void {
    const s = this.socket;
    if (!s) return;
    while (this.queue.length > 0) {
      const head = this.queue[0] as Uint8Array;
      const n = s.write(head);
      if (n < head.length) {
        this.queue[0] = head.subarray(Math.max(n, 0));
        return;
      }
      this.queue.shift();
    }
    if (this.ending) s.end();
  }
}

interface Ends {
  down: Pipe;
  up: Pipe;
  sent: number[];
}

const now = () => performance.timeOrigin + performance.now();

/**
 * `delayMs`: each way, what the relay receives is passed on that much later (a registry or API
 * server a round trip of 2 × delayMs away; the TCP handshake itself stays local).
 */
export function startRelay(target: { hostname: string; port: number }, delayMs = 0): Relay {
  const later = (fn: () => void) => (delayMs > 0 ? void setTimeout(fn, delayMs) : fn());
  // Bun reuses a data callback's buffer once it returns: what waits is copied first (push copies).
  const pass = (pipe: Pipe, data: Uint8Array) => {
    if (delayMs <= 0) return pipe.push(data);
    const copy = new Uint8Array(data);
    setTimeout(() => pipe.push(copy), delayMs);
  };
  const connections: Relay["connections"] = [];
  const server: TCPSocketListener<Ends> = Bun.listen<Ends>({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      open(client) {
        const at = now();
        const ends: Ends = { down: new Pipe(client as Socket<unknown>), up: new Pipe(), sent: [] };
        connections.push({ accepted: at, sent: ends.sent });
        client.data = ends;
        void Bun.connect({
          ...target,
          socket: {
            open: (upstream) => ends.up.attach(upstream as Socket<unknown>),
            data: (_u, data) => pass(ends.down, data),
            drain: () => ends.up.flush(),
            close: () => later(() => ends.down.end()),
            error: () => later(() => ends.down.end()),
          },
        }).catch(() => client.end());
      },
      data: (client, data) => {
        client.data.sent.push(now());
        pass(client.data.up, data);
      },
      drain: (client) => client.data.down.flush(),
      close: (client) => later(() => client.data.up.end()),
      error: (client) => later(() => client.data.up.end()),
    },
  });
  return {
    url: `https://127.0.0.1:${server.port}`,
    connections,
    clear: () => {
      connections.length = 0;
    },
    stop: () => server.stop(true),
  };
}
