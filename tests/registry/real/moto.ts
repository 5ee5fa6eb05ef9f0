// moto's server (PyPI moto[server]): an independent implementation of STS, IAM and ECR, on
// 127.0.0.1, one per test (its IAM enforcement, once on, cannot be turned off again). It stops by
// itself after `lifetimeMs` even if a test forgets to stop it. Installed into a venv by .ci/run
// (MOTO_SERVER names another moto_server).
import { test } from "bun:test";
import { homedir } from "node:os";
import { join } from "node:path";
import { AwsClient } from "aws4fetch";
import { findTool, inCi } from "../../support/tools.ts";
import { freePort } from "./registry.ts";

export const MOTO_VERSION = "5.2.5";
export const MOTO_VENV = join(homedir(), ".cache", "image-refresh", "moto");
export const MOTO_SERVER = process.env.MOTO_SERVER ?? join(MOTO_VENV, "bin", "moto_server");
export const MOTO_INSTALL = `python3 -m venv ${MOTO_VENV} && ${MOTO_VENV}/bin/pip install 'moto[server]==${MOTO_VERSION}'`;
/** The account moto's IAM keeps roles in when a request names none. */
export const ACCOUNT = "123456789012";

export interface Moto {
  endpoint: string;
  /** IAM as an administrator (moto accepts any key while its enforcement is off). */
  iam(params: Record<string, string>): Promise<string>;
  /** STS AssumeRole as an administrator: keys for a role (what an EKS Pod Identity agent hands out). */
  assumeRole(roleArn: string): Promise<{ AccessKeyId: string; SecretAccessKey: string; Token: string }>;
  /**
   * From now on every request must be signed by a key moto knows and allowed by its policies, but
   * the next `free` ones (STS AssumeRoleWithWebIdentity, which real AWS takes unsigned: the token is
   * its proof, while moto would ask it for a signature).
   */
  enforce(free: number): Promise<void>;
  output(): string;
  stop(): Promise<void>;
}

const admin = new AwsClient({
  accessKeyId: "AKIAADMINEXAMPLE0001",
  secretAccessKey: "admin-secret",
  region: "us-east-1",
});

export async function startMoto(lifetimeMs = 120_000): Promise<Moto> {
  const port = await freePort();
  const proc = Bun.spawn([MOTO_SERVER, "-H", "127.0.0.1", "-p", String(port)], {
    stdout: "pipe",
    stderr: "pipe",
  });
  let out = "";
  for (const s of [proc.stdout, proc.stderr])
    void (async () => {
      for await (const chunk of s) out += new TextDecoder().decode(chunk);
    })();
  const timer = setTimeout(() => proc.kill("SIGKILL"), lifetimeMs);
  const endpoint = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    const up = await fetch(`${endpoint}/moto-api/`).then(
      (r) => r.status < 500,
      () => false,
    );
    if (up) break;
    if (Date.now() > deadline || proc.exitCode !== null)
      throw new Error(`moto_server did not start:\n${out}`);
    await Bun.sleep(100);
  }
  const query = async (service: string, params: Record<string, string>) => {
    const res = await admin.fetch(`${endpoint}/`, {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams(params).toString(),
      aws: { service },
    });
    const text = await res.text();
    if (res.status !== 200) throw new Error(`moto ${service} ${params.Action}: ${res.status} ${text}`);
    return text;
  };
  return {
    endpoint,
    iam: (params) => query("iam", { Version: "2010-05-08", ...params }),
    async assumeRole(roleArn) {
      const xml = await query("sts", {
        Version: "2011-06-15",
        Action: "AssumeRole",
        RoleArn: roleArn,
        RoleSessionName: "agent",
      });
      const f = (n: string) => new RegExp(`<${n}>([^<]+)</${n}>`).exec(xml)?.[1] as string;
      return {
        AccessKeyId: f("AccessKeyId"),
        SecretAccessKey: f("SecretAccessKey"),
        Token: f("SessionToken"),
      };
    },
    async enforce(free) {
      const res = await fetch(`${endpoint}/moto-api/reset-auth`, { method: "POST", body: String(free) });
      if (res.status !== 200) throw new Error(`moto reset-auth: ${res.status}`);
    },
    output: () => out,
    async stop() {
      clearTimeout(timer);
      proc.kill();
      await proc.exited;
    },
  };
}

/** A role that a web identity may assume, with `actions` allowed (none: a role that lacks them). */
export async function createRole(moto: Moto, name: string, actions: readonly string[]): Promise<string> {
  const trust = {
    Version: "2012-10-17",
    Statement: [
      {
        Effect: "Allow",
        Principal: { Federated: `arn:aws:iam::${ACCOUNT}:oidc-provider/oidc.eks.example` },
        Action: "sts:AssumeRoleWithWebIdentity",
      },
      { Effect: "Allow", Principal: { AWS: `arn:aws:iam::${ACCOUNT}:root` }, Action: "sts:AssumeRole" },
    ],
  };
  await moto.iam({ Action: "CreateRole", RoleName: name, AssumeRolePolicyDocument: JSON.stringify(trust) });
  if (actions.length)
    await moto.iam({
      Action: "PutRolePolicy",
      RoleName: name,
      PolicyName: "pull",
      PolicyDocument: JSON.stringify({
        Version: "2012-10-17",
        Statement: [{ Effect: "Allow", Action: actions, Resource: "*" }],
      }),
    });
  return `arn:aws:iam::${ACCOUNT}:role/${name}`;
}

/**
 * True when moto_server is missing: outside CI one line naming what to install and a skip; with
 * CI set a failing test saying the same (.ci/run installs it).
 */
export function needMoto(file: string): boolean {
  if (findTool(MOTO_SERVER)) return false;
  const line = `skip: ${file} needs moto_server (${MOTO_INSTALL})`;
  if (!inCi()) console.log(line);
  else
    test("needs moto_server", () => {
      throw new Error(`${line}: CI is set, so a missing tool is a failure (.ci/run installs it)`);
    });
  return true;
}
