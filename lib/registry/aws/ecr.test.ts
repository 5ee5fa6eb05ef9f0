// The AWS side without AWS: what is asked of whom, and what a missing or refused identity says.
// The exchange against an independent implementation is tests/registry/aws.e2e.test.ts (moto).
import { describe, expect, test } from "bun:test";
import { type Seen, scriptedFetch } from "../../../tests/support/scripted-fetch.ts";
import { ecrHost, ecrLogin } from "./ecr.ts";

const context = scriptedFetch;

const STS_OK = `<AssumeRoleWithWebIdentityResponse><AssumeRoleWithWebIdentityResult><Credentials><AccessKeyId>ASIAEXAMPLE</AccessKeyId><SecretAccessKey>sts-secret</SecretAccessKey><SessionToken>sts-session</SessionToken></Credentials></AssumeRoleWithWebIdentityResult></AssumeRoleWithWebIdentityResponse>`;
const ECR_OK = { authorizationData: [{ authorizationToken: btoa("AWS:ecr-password") }] };
const HOST = "111122223333.dkr.ecr.eu-west-1.amazonaws.com";
const IRSA = { AWS_ROLE_ARN: "arn:aws:iam::111122223333:role/puller", AWS_WEB_IDENTITY_TOKEN_FILE: "/t" };
const readFile = () => "the-web-identity-token\n";

describe("ECR through IRSA", () => {
  test("STS by POST (the token in the body, never the URL), then ECR signed with STS's keys for the host's account", async () => {
    const { ctx, seen } = context((r) =>
      r.url.includes("sts.") ? new Response(STS_OK) : Response.json(ECR_OK),
    );
    const login = await ecrLogin(ctx, HOST, { env: IRSA, readFile, insecure: false });
    expect(login.credentials).toEqual({
      username: "AWS",
      password: "ecr-password",
      origin: `the ECR token of role ${IRSA.AWS_ROLE_ARN} (auth: aws), which needs ecr:BatchGetImage on the repositories`,
    });
    expect(login.secrets).toEqual(["the-web-identity-token", "sts-secret", "sts-session", "ecr-password"]);
    const [sts, ecr] = seen as [Seen, Seen];
    expect([sts.method, sts.url]).toEqual(["POST", "https://sts.eu-west-1.amazonaws.com/"]);
    expect(new URLSearchParams(sts.body).get("WebIdentityToken")).toBe("the-web-identity-token");
    expect(new URLSearchParams(sts.body).get("RoleArn")).toBe(IRSA.AWS_ROLE_ARN);
    expect([ecr.method, ecr.url]).toEqual(["POST", "https://api.ecr.eu-west-1.amazonaws.com/"]);
    expect(ecr.headers.get("x-amz-target")).toBe(
      "AmazonEC2ContainerRegistry_V20150921.GetAuthorizationToken",
    );
    expect(ecr.headers.get("authorization")).toStartWith("AWS4-HMAC-SHA256 Credential=ASIAEXAMPLE/");
    expect(ecr.headers.get("authorization")).toContain("/eu-west-1/ecr/aws4_request");
    expect(ecr.headers.get("x-amz-security-token")).toBe("sts-session");
    expect(JSON.parse(ecr.body)).toEqual({ registryIds: ["111122223333"] });
  });

  test("STS refusing the token: names the role and the trust policy it needs; the token is not quoted", async () => {
    const body = `<ErrorResponse><Error><Code>AccessDenied</Code><Message>Not authorized to perform sts:AssumeRoleWithWebIdentity the-web-identity-token</Message></Error></ErrorResponse>`;
    const { ctx } = context(() => new Response(body, { status: 403 }));
    const err = await ecrLogin(ctx, HOST, { env: IRSA, readFile, insecure: false }).catch((e: Error) => e);
    expect((err as Error).message).toBe(
      `AWS refused STS AssumeRoleWithWebIdentity for role ${IRSA.AWS_ROLE_ARN} (403 AccessDenied: Not authorized to perform sts:AssumeRoleWithWebIdentity [redacted]): the role's trust policy must allow sts:AssumeRoleWithWebIdentity for this cluster's OIDC provider and this ServiceAccount`,
    );
  });

  test("ECR refusing the role: names the role and the permission it lacks", async () => {
    const denied = {
      __type: "AccessDeniedException",
      message: "not authorized to perform: ecr:GetAuthorizationToken",
    };
    const { ctx } = context((r) =>
      r.url.includes("sts.") ? new Response(STS_OK) : Response.json(denied, { status: 400 }),
    );
    const err = await ecrLogin(ctx, HOST, { env: IRSA, readFile, insecure: false }).catch((e: Error) => e);
    expect((err as { reason?: string }).reason).toBe("forbidden");
    expect((err as Error).message).toBe(
      `AWS refused ECR GetAuthorizationToken for role ${IRSA.AWS_ROLE_ARN} (400 AccessDeniedException: not authorized to perform: ecr:GetAuthorizationToken): the identity needs ecr:GetAuthorizationToken (and ecr:BatchGetImage on the repositories)`,
    );
  });
});

describe("before any request", () => {
  test("no identity in the pod: says how to give it one; nothing sent", async () => {
    const { ctx, seen } = context(() => new Response("", { status: 500 }));
    const err = await ecrLogin(ctx, HOST, { env: {}, readFile, insecure: false }).catch((e: Error) => e);
    expect((err as Error).message).toContain("annotate its ServiceAccount with eks.amazonaws.com/role-arn");
    expect(seen).toEqual([]);
  });

  test("a host that is not ECR's and no AWS_REGION: cannot tell the region", async () => {
    const { ctx } = context(() => new Response(""));
    const err = await ecrLogin(ctx, "registry.example.com", { env: IRSA, readFile, insecure: false }).catch(
      (e: Error) => e,
    );
    expect((err as Error).message).toContain("AWS_REGION is not set");
  });

  test("credentials never go over plain http to a host that is not local, unless the registry is insecure", async () => {
    const { ctx, seen } = context(() => new Response(""));
    const env = { ...IRSA, AWS_ENDPOINT_URL: "http://sts.example.com" };
    const err = await ecrLogin(ctx, HOST, { env, readFile, insecure: false }).catch((e: Error) => e);
    expect((err as Error).message).toContain("is plain http");
    expect(seen).toEqual([]);
  });

  test("ECR hosts: account and region", () => {
    expect(ecrHost(HOST)).toEqual({ account: "111122223333", region: "eu-west-1" });
    expect(ecrHost("111122223333.dkr.ecr-fips.us-gov-west-1.amazonaws.com")).toEqual({
      account: "111122223333",
      region: "us-gov-west-1",
    });
    expect(ecrHost("111122223333.dkr.ecr.cn-north-1.amazonaws.com.cn")?.region).toBe("cn-north-1");
    expect(ecrHost("ghcr.io")).toBeUndefined();
  });
});
