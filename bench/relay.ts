// A TCP relay in front of the simulated API server, for one measurement: when a client first
// reaches for the cluster. Bun.listen's `open` runs on accept, before any TLS byte, whereas
// node:https (the simulator's server) tells of a connection only later. Bytes pass through
// unchanged in both directions, so TLS is still end to end between the client and the simulator.
import type { Socket, TCPSocketListener } from "bun";

export interface Relay {
  /** `https://127.0.0.1:<port>`: the address clients are given instead of the API server's. */
  url: string;
  /** Performance-clock epoch ms of each accepted connection since the last clear(). */
  accepted: number[];
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
}

export function startRelay(target: { hostname: string; port: number }): Relay {
  const accepted: number[] = [];
  const server: TCPSocketListener<Ends> = Bun.listen<Ends>({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      open(client) {
        accepted.push(performance.timeOrigin + performance.now());
        const ends: Ends = { down: new Pipe(client as Socket<unknown>), up: new Pipe() };
        client.data = ends;
        void Bun.connect({
          ...target,
          socket: {
            open: (upstream) => ends.up.attach(upstream as Socket<unknown>),
            data: (_u, data) => ends.down.push(data),
            drain: () => ends.up.flush(),
            close: () => ends.down.end(),
            error: () => ends.down.end(),
          },
        }).catch(() => client.end());
      },
      data: (client, data) => client.data.up.push(data),
      drain: (client) => client.data.down.flush(),
      close: (client) => client.data.up.end(),
      error: (client) => client.data.up.end(),
    },
  });
  return {
    url: `https://127.0.0.1:${server.port}`,
    accepted,
    clear: () => {
      accepted.length = 0;
    },
    stop: () => server.stop(true),
  };
}
