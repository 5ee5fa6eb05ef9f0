// Starting an exec credential plugin and caching what it returns, per process, as client-go's
// authenticator does: one run serves every request until the credential's expirationTimestamp
// (or a 401). Unlike client-go, a plugin is bounded by the request timeout and killed after it:
// a hung plugin must not hang a human's `status` for ever.
import { existsSync } from "node:fs";
import { type ExecCluster, type ExecConfig, type ExecCredential, execInfo, parseExecOutput } from "./exec.ts";

/** A plugin failure; `getting credentials: exec: …` as kubectl prints it. Never holds stdout. */
export class ExecPluginError extends Error {
  override name = "ExecPluginError";
}

export interface RunOptions {
  timeoutMs: number;
  signal: AbortSignal;
  /** Whether stdin is a terminal (IfAvailable / Always); a CronJob never has one. */
  stdinIsTty?: boolean;
}

const STDERR_KEEP = 4096;
const NOT_INSTALLED =
  "It looks like you are trying to use a client-go credential plugin that is not installed.";

export async function runPlugin(
  cfg: ExecConfig,
  cluster: ExecCluster,
  opts: RunOptions,
): Promise<ExecCredential> {
  const fail = (what: string) => new ExecPluginError(`getting credentials: exec: ${what}`);
  const tty = opts.stdinIsTty ?? process.stdin.isTTY === true;
  if (cfg.interactiveMode === "Always" && !tty)
    throw fail("exec plugin cannot support interactive mode: standard input is not a terminal");
  const interactive = tty && cfg.interactiveMode !== "Never";
  const path = locate(cfg.command);
  if (!path) {
    const hint = cfg.installHint ? `\n\n${cfg.installHint}` : "";
    throw fail(`executable ${cfg.command} not found\n\n${NOT_INSTALLED}${hint}`);
  }
  const env: Record<string, string | undefined> = { ...process.env };
  for (const { name, value } of cfg.env) env[name] = value;
  env.KUBERNETES_EXEC_INFO = execInfo(cfg, cluster, interactive);
  const proc = Bun.spawn([path, ...cfg.args], {
    env,
    stdin: interactive ? "inherit" : "ignore",
    stdout: "pipe",
    stderr: "pipe",
    // Its own process group, so a kill also ends what a script started (a `sleep` holding stdout);
    // not when interactive, since a background group cannot read the terminal.
    detached: !interactive,
  });
  const ended = bound(proc, opts);
  const [stdout, stderr] = await Promise.all([new Response(proc.stdout).text(), tail(proc.stderr)]);
  const code = await proc.exited;
  const why = ended();
  const said = stderr.trim() ? `; stderr: ${stderr.trim()}` : "";
  if (why) throw fail(`executable ${cfg.command} ${why}${said}`);
  if (code !== 0) throw fail(`executable ${cfg.command} failed with exit code ${code}${said}`);
  // client-go lets the plugin's stderr through to the user's terminal; so do we.
  if (stderr) process.stderr.write(stderr);
  try {
    return parseExecOutput(stdout, cfg);
  } catch (e) {
    throw fail(`${(e as Error).message}${said}`);
  }
}

/** A bare name is looked up on our own PATH (the plugin's `env` does not change that). */
function locate(command: string): string | undefined {
  if (command.includes("/")) return existsSync(command) ? command : undefined;
  return Bun.which(command, { PATH: process.env.PATH ?? "" }) ?? undefined;
}

/** Kills the plugin at the timeout or on cancel; returns why it was killed, if it was. */
function bound(proc: Bun.Subprocess, opts: RunOptions): () => string | undefined {
  let why: string | undefined;
  const kill = (reason: string) => {
    why ??= reason;
    try {
      process.kill(-proc.pid, "SIGKILL");
    } catch {
      proc.kill("SIGKILL"); // the group is already gone
    }
  };
  const timer = setTimeout(() => kill(`did not finish within ${opts.timeoutMs}ms`), opts.timeoutMs);
  const onAbort = () => kill("was stopped: the request was cancelled");
  if (opts.signal.aborted) onAbort();
  else opts.signal.addEventListener("abort", onAbort, { once: true });
  return () => {
    clearTimeout(timer);
    opts.signal.removeEventListener("abort", onAbort);
    return why;
  };
}

/** The last few KiB of the plugin's stderr: enough for its message, bounded for our logs. */
async function tail(stream: ReadableStream<Uint8Array>): Promise<string> {
  let kept = "";
  const decoder = new TextDecoder();
  for await (const chunk of stream)
    kept = (kept + decoder.decode(chunk, { stream: true })).slice(-STDERR_KEEP);
  return kept;
}

/** One per (exec config, cluster) in the process, like client-go's authenticator cache. */
export class ExecAuthenticator {
  private cached: ExecCredential | undefined;
  private pending: Promise<ExecCredential> | undefined;

  constructor(
    private readonly cfg: ExecConfig,
    private readonly cluster: ExecCluster,
    private readonly now: () => number = Date.now,
  ) {}

  /** The cached credential while it is unexpired; otherwise one run shared by concurrent callers. */
  async credential(opts: RunOptions): Promise<ExecCredential> {
    const c = this.cached;
    if (c && (c.expiresAt === undefined || this.now() < c.expiresAt)) return c;
    this.pending ??= runPlugin(this.cfg, this.cluster, opts).finally(() => {
      this.pending = undefined;
    });
    this.cached = await this.pending;
    return this.cached;
  }

  /** After a 401 with `used`: the next request runs the plugin again. */
  invalidate(used: ExecCredential): void {
    if (this.cached === used) this.cached = undefined;
  }
}

const authenticators = new Map<string, ExecAuthenticator>();

export function execAuthenticator(cfg: ExecConfig, cluster: ExecCluster): ExecAuthenticator {
  const key = JSON.stringify([cfg, cluster]);
  let a = authenticators.get(key);
  if (!a) {
    a = new ExecAuthenticator(cfg, cluster);
    authenticators.set(key, a);
  }
  return a;
}
