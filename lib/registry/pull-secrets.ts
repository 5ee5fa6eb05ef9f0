// Each registry's credentials, read once per command: its own pull secret (an image's own
// registry.dockerConfigJson, else the top-level one's), looked up by that registry's host. What is
// not there is said per host, with where to configure it: a 401 from a registry that got no
// credential then names the host and the field, rather than leaving "needs credentials" to guess.
import type { Config, RegistryConfig } from "../config.ts";
import { ConfigError } from "../config.ts";
import {
  type BasicCredentials,
  credentialsFor,
  type DockerCredentials,
  loadDockerConfig,
} from "./credentials.ts";
import { type RegistryGroup, registryGroups } from "./registries.ts";

export interface PullSecrets {
  /** By registry host key: the credentials its pull secret holds for it. */
  credentials: Map<string, BasicCredentials>;
  /** By registry host key, for a host with none: that none is configured, and where to configure it. */
  missing: Map<string, string>;
  /** A configured pull secret that gives no credentials for its host: that registry is asked anonymously. */
  warnings: string[];
}

/**
 * `human`: a command a person runs from a laptop with a copy of the CronJob's config, where the
 * mounted path does not exist: a warning, and the registry is asked anonymously. For a tick, a
 * pull secret that cannot be read is a configuration error (exit 2, before any request).
 */
export function pullSecrets(config: Config, human: boolean, readFile: (p: string) => string): PullSecrets {
  const out: PullSecrets = { credentials: new Map(), missing: new Map(), warnings: [] };
  const files = new Map<string, DockerCredentials | undefined>();
  for (const group of registryGroups(config.images.filter((i) => !i.pinned))) {
    const at = fieldOf(config, group);
    const path = group.registry.dockerConfigJson;
    const host = group.registry.host;
    const none = `no credential is configured for ${host}`;
    // Its credentials come from the cloud's identity, in the tick (registry/cloud.ts).
    if (group.registry.auth && group.registry.auth !== "none") continue;
    if (!path) {
      out.missing.set(
        group.hostKey,
        `${none}: set ${at}.dockerConfigJson to a pull secret with an entry for ${host}, or ${at}.auth to the cloud's workload identity (aws for ECR, gcp for Artifact Registry, azure for ACR)`,
      );
      continue;
    }
    if (!files.has(path)) files.set(path, pullSecretFile(path, at, human, readFile));
    const creds = files.get(path);
    if (!creds) {
      out.missing.set(group.hostKey, `${none}: ${at}.dockerConfigJson ${path} does not exist here`);
      out.warnings.push(
        `${at}.dockerConfigJson ${path} does not exist here: the registry ${host} is asked anonymously`,
      );
      continue;
    }
    const credentials = credentialsFor(creds, host);
    if (credentials) out.credentials.set(group.hostKey, credentials);
    else {
      out.missing.set(
        group.hostKey,
        `${none}: ${at}.dockerConfigJson ${path} has no entry for it (${keysOf(creds)})`,
      );
      out.warnings.push(
        `${at}.dockerConfigJson ${path} has no entry for the registry host ${host} (${keysOf(creds)}): the registry is asked anonymously`,
      );
    }
  }
  return out;
}

/** Where the group's registry is configured: `registry`, or the first image's own `images[i].registry`. */
function fieldOf(config: Config, group: RegistryGroup): string {
  if (group.registry === (config.registry as RegistryConfig)) return "registry";
  return `images[${config.images.indexOf(group.images[0] as Config["images"][number])}].registry`;
}

/** The file's credentials; undefined for a file that is not there when a human runs a command. */
function pullSecretFile(
  path: string,
  at: string,
  human: boolean,
  readFile: (p: string) => string,
): DockerCredentials | undefined {
  try {
    return loadDockerConfig(path, readFile);
  } catch (err) {
    if (human && (err as { code?: string }).code === "ENOENT") return undefined;
    throw new ConfigError(`${at}.dockerConfigJson: ${(err as Error).message}`);
  }
}

function keysOf(creds: DockerCredentials): string {
  const keys = creds.keys();
  return keys.length ? `its keys are ${keys.map((k) => `"${k}"`).join(", ")}` : "it has no usable entry";
}
