// The pod's AWS credentials, the way the AWS SDKs' default chain finds them in EKS: IRSA (the
// projected ServiceAccount token in AWS_WEB_IDENTITY_TOKEN_FILE exchanged with STS
// AssumeRoleWithWebIdentity for AWS_ROLE_ARN), else EKS Pod Identity (the agent at
// AWS_CONTAINER_CREDENTIALS_FULL_URI, given the token in AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE).
// The credentials live in memory for one tick: never stored, never logged; every secret of the
// exchange is scrubbed from whatever text comes back.
import { RegistryError } from "../errors.ts";
import type { HttpContext } from "../http.ts";
import { awsRequest, checkedAwsUrl } from "./request.ts";

export interface AwsCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
  /** Who they are, for messages: the role's ARN, or "the EKS Pod Identity association". */
  identity: string;
  /** Every secret of the exchange (token files' contents, keys): scrubbed from any text. */
  secrets: string[];
}

export type AwsEnv = Record<string, string | undefined>;

export interface AwsSource {
  env: AwsEnv;
  readFile: (path: string) => string;
  /** Plain http allowed to an endpoint override (the registry's insecure). */
  insecure: boolean;
  region: string | undefined;
}

const IRSA = "IRSA (AWS_ROLE_ARN and AWS_WEB_IDENTITY_TOKEN_FILE)";
const POD_IDENTITY =
  "EKS Pod Identity (AWS_CONTAINER_CREDENTIALS_FULL_URI and AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE)";

/** The pod's credentials by IRSA, else by EKS Pod Identity; neither configured is a refusal saying how to configure one. */
export async function awsCredentials(ctx: HttpContext, src: AwsSource): Promise<AwsCredentials> {
  const { env } = src;
  if (env.AWS_ROLE_ARN && env.AWS_WEB_IDENTITY_TOKEN_FILE) return webIdentity(ctx, src);
  if (env.AWS_CONTAINER_CREDENTIALS_FULL_URI) return podIdentity(ctx, src);
  throw new RegistryError(
    "unauthorized",
    `auth: aws, but the pod has neither ${IRSA} nor ${POD_IDENTITY}: annotate its ServiceAccount with eks.amazonaws.com/role-arn, or create a pod identity association for it`,
  );
}

function readToken(src: AwsSource, path: string, what: string): string {
  try {
    return src.readFile(path).trim();
  } catch (err) {
    const code = (err as { code?: string }).code ?? (err as Error).message;
    throw new RegistryError("unauthorized", `auth: aws: cannot read ${what} ${path}: ${code}`);
  }
}

/** STS AssumeRoleWithWebIdentity: unsigned (the token is the proof), the token in the POST body. */
async function webIdentity(ctx: HttpContext, src: AwsSource): Promise<AwsCredentials> {
  const role = src.env.AWS_ROLE_ARN as string;
  const token = readToken(src, src.env.AWS_WEB_IDENTITY_TOKEN_FILE as string, "the web identity token file");
  const endpoint =
    src.env.AWS_ENDPOINT_URL_STS ??
    src.env.AWS_ENDPOINT_URL ??
    (src.region ? `https://sts.${src.region}.amazonaws.com` : "https://sts.amazonaws.com");
  const url = checkedAwsUrl(endpoint, "STS", src.insecure);
  const form = new URLSearchParams({
    Action: "AssumeRoleWithWebIdentity",
    Version: "2011-06-15",
    RoleArn: role,
    RoleSessionName: src.env.AWS_ROLE_SESSION_NAME || "image-refresh",
    WebIdentityToken: token,
  });
  const what = `STS AssumeRoleWithWebIdentity for role ${role}`;
  const res = await awsRequest(
    ctx,
    {
      method: "POST",
      url,
      headers: new Headers({
        "Content-Type": "application/x-www-form-urlencoded",
        Accept: "application/xml",
      }),
      body: form.toString(),
      what,
    },
    [token],
  );
  if (res.status !== 200) {
    const { code, message } = xmlError(res.body);
    const refused = res.status === 400 || res.status === 403;
    throw new RegistryError(
      refused ? "forbidden" : "server_error",
      `AWS refused ${what} (${res.status} ${code}: ${message})${refused ? `: the role's trust policy must allow sts:AssumeRoleWithWebIdentity for this cluster's OIDC provider and this ServiceAccount` : ""}`,
      { status: res.status },
    );
  }
  const field = (name: string) => new RegExp(`<${name}>([^<]+)</${name}>`).exec(res.body)?.[1]?.trim();
  const accessKeyId = field("AccessKeyId");
  const secretAccessKey = field("SecretAccessKey");
  if (!accessKeyId || !secretAccessKey)
    throw new RegistryError("server_error", `${what}: the answer holds no AccessKeyId and SecretAccessKey`);
  const sessionToken = field("SessionToken");
  const secrets = [token, secretAccessKey, ...(sessionToken ? [sessionToken] : [])];
  return { accessKeyId, secretAccessKey, sessionToken, identity: `role ${role}`, secrets };
}

/** The EKS Pod Identity agent: GET its URI with the pod's token as Authorization; JSON credentials. */
async function podIdentity(ctx: HttpContext, src: AwsSource): Promise<AwsCredentials> {
  const uri = src.env.AWS_CONTAINER_CREDENTIALS_FULL_URI as string;
  const file = src.env.AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE;
  const token = file
    ? readToken(src, file, "the pod identity token file")
    : (src.env.AWS_CONTAINER_AUTHORIZATION_TOKEN ?? "");
  const url = checkedAwsUrl(uri, "EKS Pod Identity", false);
  const what = "the EKS Pod Identity agent";
  const headers = new Headers({ Accept: "application/json", ...(token ? { Authorization: token } : {}) });
  const res = await awsRequest(ctx, { method: "GET", url, headers, what }, token ? [token] : []);
  if (res.status !== 200) {
    const refused = res.status === 400 || res.status === 401 || res.status === 403 || res.status === 404;
    throw new RegistryError(
      refused ? "forbidden" : "server_error",
      `${what} refused the pod's token (${res.status}${detail(res.body)})${refused ? ": check that this ServiceAccount has a pod identity association with a role" : ""}`,
      { status: res.status },
    );
  }
  let json: Record<string, unknown>;
  try {
    json = JSON.parse(res.body) as Record<string, unknown>;
  } catch {
    throw new RegistryError("server_error", `${what} did not answer JSON`);
  }
  const text = (k: string) => (typeof json[k] === "string" ? (json[k] as string) : undefined);
  const accessKeyId = text("AccessKeyId");
  const secretAccessKey = text("SecretAccessKey");
  if (!accessKeyId || !secretAccessKey)
    throw new RegistryError("server_error", `${what}: the answer holds no AccessKeyId and SecretAccessKey`);
  const sessionToken = text("Token");
  const secrets = [...(token ? [token] : []), secretAccessKey, ...(sessionToken ? [sessionToken] : [])];
  return {
    accessKeyId,
    secretAccessKey,
    sessionToken,
    identity: "the EKS Pod Identity association's role",
    secrets,
  };
}

/** An AWS query API's error: `<Code>` and `<Message>`. */
export function xmlError(body: string): { code: string; message: string } {
  const code = /<Code>([^<]*)<\/Code>/.exec(body)?.[1] ?? "error";
  const message = /<Message>([^<]*)<\/Message>/.exec(body)?.[1] ?? "no message";
  return { code, message: message.slice(0, 300) };
}

function detail(body: string): string {
  const text = body.replace(/\s+/g, " ").trim().slice(0, 200);
  return text ? `: ${text}` : "";
}
