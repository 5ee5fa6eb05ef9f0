// `auth: aws`: the pod's AWS identity (identity.ts) asks ECR for an authorization token
// (GetAuthorizationToken, a SigV4-signed JSON request), which is Basic credentials for the
// registry: `AWS:<password>`, good for 12 hours, used for this tick only.
//
// SigV4 is signed by aws4fetch (MIT, no dependencies, ~11 kB, WebCrypto and fetch only, the
// signer AWS's own docs list for fetch runtimes) rather than by hand: a canonical request is easy
// to get subtly wrong (header order, URI and query encoding, the session token), and the AWS SDK's
// ECR client would bring dozens of packages onto a tick's start-up.
import { AwsV4Signer } from "aws4fetch";
import { decodeBase64Utf8 } from "../../base64.ts";
import type { BasicCredentials } from "../credentials.ts";
import { RegistryError } from "../errors.ts";
import type { HttpContext } from "../http.ts";
import { type AwsSource, awsCredentials, xmlError } from "./identity.ts";
import { awsRequest, checkedAwsUrl } from "./request.ts";

/** `<account>.dkr.ecr.<region>.amazonaws.com` (also -fips, and .com.cn): the account and region. */
const ECR_HOST = /^(\d{12})\.dkr\.ecr(?:-fips)?\.([a-z0-9-]+)\.amazonaws\.com(?:\.cn)?$/;

export function ecrHost(host: string): { account: string; region: string } | undefined {
  const m = ECR_HOST.exec(host.toLowerCase().replace(/:443$/, ""));
  return m ? { account: m[1] as string, region: m[2] as string } : undefined;
}

export interface EcrLogin {
  credentials: BasicCredentials;
  /** Every secret of the exchange, the token's password included: scrubbed from any text. */
  secrets: string[];
}

/** The registry's Basic credentials from ECR, by way of the pod's AWS identity. */
export async function ecrLogin(
  ctx: HttpContext,
  host: string,
  src: Omit<AwsSource, "region">,
): Promise<EcrLogin> {
  const parsed = ecrHost(host);
  const region = parsed?.region ?? src.env.AWS_REGION ?? src.env.AWS_DEFAULT_REGION;
  if (!region)
    throw new RegistryError(
      "unauthorized",
      `auth: aws: ${host} is not an ECR host (<account>.dkr.ecr.<region>.amazonaws.com) and AWS_REGION is not set: cannot tell which region's ECR to ask`,
    );
  const aws = await awsCredentials(ctx, { ...src, region });
  const endpoint =
    src.env.AWS_ENDPOINT_URL_ECR ?? src.env.AWS_ENDPOINT_URL ?? `https://api.ecr.${region}.amazonaws.com`;
  const url = checkedAwsUrl(endpoint, "ECR", src.insecure);
  const body = JSON.stringify(parsed ? { registryIds: [parsed.account] } : {});
  const signed = await new AwsV4Signer({
    method: "POST",
    url: url.href,
    headers: {
      "Content-Type": "application/x-amz-json-1.1",
      "X-Amz-Target": "AmazonEC2ContainerRegistry_V20150921.GetAuthorizationToken",
    },
    body,
    accessKeyId: aws.accessKeyId,
    secretAccessKey: aws.secretAccessKey,
    sessionToken: aws.sessionToken,
    service: "ecr",
    region,
  }).sign();
  const what = `ECR GetAuthorizationToken for ${aws.identity}`;
  const res = await awsRequest(
    ctx,
    { method: "POST", url, headers: signed.headers, body, what },
    aws.secrets,
  );
  if (res.status !== 200) throw refusal(res, what);
  const password = tokenPassword(res.body, what);
  const origin = `the ECR token of ${aws.identity} (auth: aws), which needs ecr:BatchGetImage on the repositories`;
  return { credentials: { username: "AWS", password, origin }, secrets: [...aws.secrets, password] };
}

/** ECR's JSON error (`__type`, `message`): a 4xx names what the identity lacks. */
function refusal(res: { status: number; headers: Headers; body: string }, what: string): RegistryError {
  let type = res.headers.get("x-amzn-errortype") ?? "";
  let message = "";
  try {
    const json = JSON.parse(res.body) as { __type?: string; message?: string; Message?: string };
    type = json.__type ?? type;
    message = json.message ?? json.Message ?? "";
  } catch {
    // ECR answers JSON; a proxy or an IAM layer in front of it may answer a query API's XML.
    ({ code: type, message } = xmlError(res.body));
  }
  message = message.replace(/\s+/g, " ").trim().slice(0, 300);
  type = type.split("#").pop()?.split(":")[0] ?? type;
  const refused = res.status >= 400 && res.status < 500;
  const lacks = refused
    ? ": the identity needs ecr:GetAuthorizationToken (and ecr:BatchGetImage on the repositories)"
    : "";
  return new RegistryError(
    refused ? "forbidden" : "server_error",
    `AWS refused ${what} (${res.status} ${type}: ${message})${lacks}`,
    {
      status: res.status,
    },
  );
}

function tokenPassword(body: string, what: string): string {
  let token: unknown;
  try {
    token = (JSON.parse(body) as { authorizationData?: Array<{ authorizationToken?: unknown }> })
      .authorizationData?.[0]?.authorizationToken;
  } catch {
    throw new RegistryError("server_error", `${what}: the answer is not JSON`);
  }
  if (typeof token !== "string")
    throw new RegistryError("server_error", `${what}: the answer holds no authorizationToken`);
  const decoded = decodeBase64Utf8(token);
  if (!decoded.startsWith("AWS:"))
    throw new RegistryError("server_error", `${what}: the token is not AWS:<password>`);
  return decoded.slice(4);
}
