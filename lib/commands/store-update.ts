// The human commands' one write of the store (rearm, reject): read the store and, while a legacy
// `state` workload is configured, its annotations; decide on that book; send one create or
// resourceVersion-guarded patch, carrying the legacy values the store does not hold yet; on a
// conflict read again and decide again. After the write, migrated annotations leave the workload.
import type { Workload } from "../kube/workloads.ts";
import type { Book } from "../state/book.ts";
import { type Change, merge, storeWrite } from "../state/change.ts";
import { bookWithLegacy, type LegacyInput, migrationChange, removableAnnotations } from "../state/legacy.ts";
import { readStore, writeStore } from "../state/store.ts";
import { describeConfigMap, describeWorkload, stateRef, workloadId } from "../workload.ts";
import type { Runtime } from "./runtime.ts";

const MAX_TRIES = 3;

export type UpdateResult = "written" | "nothing" | "dry_run" | "failed";

export interface Decided {
  change: Change;
  /** One line for the log saying what the change does; undefined: nothing to do. */
  summary?: string;
}

interface Read {
  stored: Book;
  book: Book;
  legacy?: { input: LegacyInput; state: Workload };
}

async function read(rt: Runtime): Promise<Read> {
  const keys = rt.config.images.map((i) => i.key);
  const ref = stateRef(rt.config);
  const [store, state] = await Promise.all([
    readStore(rt.kube.configMaps, rt.store, keys),
    ref ? rt.kube.get(ref).catch(() => undefined) : undefined,
  ]);
  if (!ref || !state) return { stored: store.book, book: store.book };
  const id = workloadId(ref);
  const images = rt.config.images.map((i) => ({
    key: i.key,
    onStateWorkload: i.targets.some((t) => workloadId(t) === id),
  }));
  const input = { annotations: state.metadata.annotations, prefix: rt.config.annotationPrefix, images };
  return { stored: store.book, book: bookWithLegacy(store.book, input), legacy: { input, state } };
}

export async function updateStore(
  rt: Runtime,
  opts: { dryRun: boolean; what: string },
  decide: (book: Book) => Decided,
): Promise<{ result: UpdateResult; book?: Book; summary?: string }> {
  const where = describeConfigMap(rt.store);
  for (let attempt = 1; attempt <= MAX_TRIES; attempt++) {
    try {
      const r = await read(rt);
      const d = decide(r.book);
      if (d.summary === undefined) return { result: "nothing", book: r.book };
      const all = merge(r.legacy ? migrationChange(r.stored, r.legacy.input) : {}, d.change);
      if (opts.dryRun) {
        rt.log.info(`dry run: would ${opts.what} in ${where}: ${d.summary}`, {
          write: storeWrite(r.stored, all),
        });
        return { result: "dry_run", book: r.book, summary: d.summary };
      }
      const w = await writeStore(rt.kube.configMaps, rt.store, r.stored, all);
      if (w.kind === "conflict") {
        if (attempt < MAX_TRIES) continue;
        throw new Error(w.message);
      }
      if (w.kind === "written" && r.legacy) await dropMigrated(rt, w.book, r.legacy.input);
      return { result: "written", book: r.book, summary: d.summary };
    } catch (err) {
      rt.log.error(`cannot ${opts.what} in ${where}: ${(err as Error).message}`);
      return { result: "failed" };
    }
  }
  return { result: "failed" };
}

async function dropMigrated(rt: Runtime, stored: Book, input: LegacyInput): Promise<void> {
  const ref = stateRef(rt.config);
  const names = removableAnnotations(stored, input);
  if (!ref || names.length === 0) return;
  try {
    await rt.kube.mergePatch(ref, {
      metadata: { annotations: Object.fromEntries(names.map((n) => [n, null])) },
    });
  } catch (err) {
    rt.log.warn(
      `cannot remove the migrated annotations from ${describeWorkload(ref)}; the next tick retries`,
      {
        error: (err as Error).message,
      },
    );
  }
}
