// The store's keys in one table (image-refresh's own ConfigMap). Each row says what kind of
// value a key holds and which operations touch it; reset, rearm, reject, record and migration
// derive their key lists from here, so a new key is one row and no hand-kept list forgets it.

/** What a key's value is, which decides how it is parsed and when it is believed. */
export type KeyKind = "counter" | "marker" | "digest" | "list" | "time" | "traceparent" | "attempt";

/**
 * reset: removed when every workload of the image settled on a refresh.
 * rearm: removed by `rearm` (and by `reject`, which re-arms).
 * reject: written by `reject`.
 * record: written when a digest is recorded.
 * migrate: carried over from the legacy annotations of the `state` workload.
 */
export type Operation = "reset" | "rearm" | "reject" | "record" | "migrate";

export type ImageField =
  | "digest"
  | "attempt"
  | "flap"
  | "failed"
  | "last"
  | "traceparent"
  | "skip"
  | "unresolved"
  | "repin"
  | "rejected"
  | "candidates"
  | "paused"
  | "adopt"
  | "previous"
  | "verifiedAt"
  | "regressed"
  | "signed"
  | "refused";

export interface KeyRow {
  /** The data key for an image key, e.g. `refresh-attempt-api`. */
  name: (key: string) => string;
  kind: KeyKind;
  ops: readonly Operation[];
  /** What it means, as `status` and the docs say it. */
  meaning: string;
}

export const IMAGE_KEYS = {
  digest: {
    name: (k) => `last-refreshed-${k}-digest`,
    kind: "digest",
    ops: ["record", "migrate"],
    meaning: "the digest last recorded: every target settled on it",
  },
  attempt: {
    name: (k) => `refresh-attempt-${k}`,
    kind: "counter",
    ops: ["reset", "rearm", "migrate"],
    meaning: "consecutive failed rollout attempts",
  },
  flap: {
    name: (k) => `refresh-flap-detected-${k}`,
    kind: "marker",
    ops: ["reset", "rearm", "migrate"],
    meaning: "present while locked out; the count that tripped it",
  },
  failed: {
    name: (k) => `failed-${k}-digest`,
    kind: "digest",
    ops: ["reset", "rearm"],
    meaning: "the digest whose rollout failed last",
  },
  // Written with the count, so a tick that dies mid-rollout still names its build; history, so
  // neither a reset nor a rearm removes it: `status` tells the last attempt from the next one.
  last: {
    name: (k) => `last-attempt-${k}`,
    kind: "attempt",
    ops: [],
    meaning: "the last refresh attempt: its build, how it ended and when (<digest> <ending> <time>)",
  },
  traceparent: {
    name: (k) => `refresh-attempt-traceparent-${k}`,
    kind: "traceparent",
    ops: ["reset", "rearm", "migrate"],
    meaning: "the traceparent of the tick that wrote the attempt count",
  },
  skip: {
    name: (k) => `skip-streak-${k}`,
    kind: "counter",
    ops: ["migrate"],
    meaning: "consecutive ticks with a target not settled",
  },
  unresolved: {
    name: (k) => `unresolved-streak-${k}`,
    kind: "counter",
    ops: ["migrate"],
    meaning: "consecutive ticks the digest could not be resolved",
  },
  repin: {
    name: (k) => `repin-streak-${k}`,
    kind: "counter",
    ops: ["rearm", "migrate"],
    meaning: "consecutive re-pins without a tick that found the pin in place",
  },
  rejected: {
    name: (k) => `rejected-${k}-digest`,
    kind: "digest",
    ops: ["rearm", "reject", "migrate"],
    meaning: "a digest a human rejected",
  },
  candidates: {
    name: (k) => `candidates-${k}`,
    kind: "list",
    ops: ["record", "migrate"],
    meaning: "builds waiting out minimumAge, <digest>=<first seen>, newest first",
  },
  previous: {
    name: (k) => `previous-${k}-digest`,
    kind: "digest",
    ops: ["record"],
    meaning: "the build the targets ran before the last verified refresh: what a regression goes back to",
  },
  verifiedAt: {
    name: (k) => `verified-${k}-at`,
    kind: "time",
    ops: ["record"],
    meaning: "when the last refresh was verified (the tick's clock): the start of its regressionWindow",
  },
  regressed: {
    name: (k) => `regressed-${k}-digest`,
    kind: "digest",
    ops: ["rearm"],
    meaning: "the build that last regressed: a verified retry of it keeps the count, so it still locks out",
  },
  // Not a published key: the live image whose pause was announced, so its Event is posted once.
  paused: {
    name: (k) => `paused-${k}`,
    kind: "marker",
    ops: ["migrate"],
    meaning: "the live image whose pause was announced",
  },
  // Not a published key: written with a first observation that finds containers on the floating
  // tag, so the re-pin that follows is told as the adoption it is (a Normal Event), not as a pin
  // someone replaced. Removed by the reset of the image's refresh, or once every pin is in place.
  adopt: {
    name: (k) => `adopt-${k}`,
    kind: "marker",
    ops: ["reset"],
    meaning: "a tag-following install to adopt: its first re-pin is an adoption",
  },
  // A build is verified once: its digest is kept, so later ticks fetch no signature for it.
  signed: {
    name: (k) => `verified-${k}-signature`,
    kind: "digest",
    ops: [],
    meaning: "the last build whose signature verified with the image's policy",
  },
  // The build whose refusal was announced, so its Warning Event is posted once, not every tick.
  refused: {
    name: (k) => `refused-${k}-signature`,
    kind: "digest",
    ops: [],
    meaning: "the build refused for its signature (unsigned or invalid) whose Event was posted",
  },
} as const satisfies Record<ImageField, KeyRow>;

/** The kind of an image field, at the type level (so the book's fields are typed by their row). */
export type FieldKind<F extends ImageField> = (typeof IMAGE_KEYS)[F]["kind"];

export const IMAGE_FIELDS = Object.keys(IMAGE_KEYS) as ImageField[];

/**
 * The keys the version before kept for its one registry, without a host; read as the top-level
 * registry's until the next write moves them to its own (lib/state/registries.ts).
 */
export const INSTALLATION_KEYS = {
  retryAfter: {
    name: () => "registry-retry-after",
    kind: "time",
    ops: ["migrate"],
    meaning: "the time before which the registry asked not to be called again",
  },
  challenge: {
    name: () => "registry-challenge",
    kind: "marker",
    ops: [],
    meaning: "the registry's answer to GET /v2/ (open, or its challenge), so that the next tick need not ask",
  },
} as const satisfies Record<string, KeyRow>;

export type InstallationField = keyof typeof INSTALLATION_KEYS;
export const INSTALLATION_FIELDS = Object.keys(INSTALLATION_KEYS) as InstallationField[];

/** The image fields an operation touches, in table order. */
export function fieldsFor(op: Operation): ImageField[] {
  return IMAGE_FIELDS.filter((f) => (IMAGE_KEYS[f].ops as readonly Operation[]).includes(op));
}

/** The legacy annotations' single-counter names (no `-<key>`): they count for every image. */
export const LEGACY_SINGLE: Partial<Record<ImageField, string>> = {
  attempt: "refresh-attempt",
  flap: "refresh-flap-detected",
  traceparent: "refresh-attempt-traceparent",
};

/** The shell job's skip streak, one for the whole state workload. */
export const LEGACY_SKIP_STREAK = "refresh-skip-streak";
