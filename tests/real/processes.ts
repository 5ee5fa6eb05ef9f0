// Child processes of the real tier that stop by themselves. Each peer runs under a small sh
// watchdog that kills it when the test process is gone (even after a SIGKILL, when no exit hook
// runs) and under coreutils `timeout` for a hard limit, so no test run can leave an apiserver
// behind. Output goes to a log file, quoted when the peer fails to start.
import { openSync, readFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";

export interface Peer {
  name: string;
  log: string;
  exited: Promise<number>;
  stop(): Promise<void>;
}

const running = new Set<Peer>();
let hooked = false;

/** Stops every peer still running; the process exit hook and the fixtures' stop() use it. */
export async function stopAll(): Promise<void> {
  await Promise.all([...running].map((p) => p.stop()));
}

function hookExit(): void {
  if (hooked) return;
  hooked = true;
  // Exit hooks cannot await: signal now; the watchdogs finish the job if the test dies first.
  process.on("exit", () => {
    for (const p of running) void p.stop();
  });
}

// $1 the test's pid, $2 the hard limit; the rest is the command. The peer runs in the
// background so the loop can watch both it and the test process.
const WATCHDOG = `parent=$1; limit=$2; shift 2
timeout -k 5 "$limit" "$@" & child=$!
trap 'kill $child 2>/dev/null; wait $child; exit 143' TERM INT
while kill -0 "$parent" 2>/dev/null && kill -0 "$child" 2>/dev/null; do sleep 1; done
kill $child 2>/dev/null; wait $child`;

/** Starts `argv` with output to `<dir>/<name>.log`, killed after `hardLimitS` at the latest. */
export function spawnPeer(name: string, argv: string[], opts: { dir: string; hardLimitS: number }): Peer {
  hookExit();
  const log = join(opts.dir, `${name}.log`);
  const fd = openSync(log, "a");
  const proc = Bun.spawn(
    ["sh", "-c", WATCHDOG, "watchdog", String(process.pid), `${opts.hardLimitS}s`, ...argv],
    {
      stdin: "ignore",
      stdout: fd,
      stderr: fd,
    },
  );
  const peer: Peer = {
    name,
    log,
    exited: proc.exited,
    async stop() {
      running.delete(peer);
      proc.kill("SIGTERM");
      const late = setTimeout(() => proc.kill("SIGKILL"), 5000);
      await proc.exited;
      clearTimeout(late);
    },
  };
  running.add(peer);
  return peer;
}

/** The last lines of a peer's log, for an error message. */
export function tail(peer: Peer, lines = 30): string {
  try {
    return readFileSync(peer.log, "utf8").trimEnd().split("\n").slice(-lines).join("\n");
  } catch {
    return "(no log)";
  }
}

/** A port on 127.0.0.1 that was free a moment ago (the peer binds it right after). */
export async function freePort(): Promise<number> {
  return await new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const address = s.address();
      const port = typeof address === "object" && address ? address.port : 0;
      s.close(() => resolve(port));
    });
  });
}

/**
 * Polls `ready` until it returns true; fails early, with the log, if the peer exits, and after
 * `timeoutMs` otherwise.
 */
export async function waitReady(peer: Peer, ready: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  let gone: number | undefined;
  void peer.exited.then((c) => {
    gone = c;
  });
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (gone !== undefined)
      throw new Error(`${peer.name} exited with ${gone} before it was ready:\n${tail(peer)}`);
    if (await ready().catch(() => false)) return;
    await Bun.sleep(100);
  }
  throw new Error(`${peer.name} was not ready in ${timeoutMs} ms:\n${tail(peer)}`);
}
