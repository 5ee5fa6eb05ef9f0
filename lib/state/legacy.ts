// The migration reader: earlier versions and the shell job kept the bookkeeping as annotations
// `<prefix>/<name>` on the `state` workload. While the store holds no entry for an image, those
// annotations are its book, read under any prefix (an installation that changed its prefix still
// carries its lockout; the configured prefix wins a tie). The single `refresh-attempt`,
// `refresh-flap-detected` and `refresh-attempt-traceparent` count for every image, so a lockout
// carries over; the shell's `refresh-skip-streak` counts for every image of that workload.
import { type Book, hasEntries } from "./book.ts";
import { applyChange, type Change } from "./change.ts";
import {
  fieldsFor,
  IMAGE_KEYS,
  type ImageField,
  INSTALLATION_KEYS,
  LEGACY_SINGLE,
  LEGACY_SKIP_STREAK,
} from "./keys.ts";

export interface LegacyInput {
  /** The annotations of the `state` workload. */
  annotations: Record<string, string>;
  prefix: string;
  /** Every configured image, and whether the `state` workload is one of its targets. */
  images: ReadonlyArray<{ key: string; onStateWorkload: boolean }>;
}

/** Where a legacy annotation's value goes: an image's field, or the installation's retry time. */
type Slot = { images: string[]; field: ImageField | "retryAfter"; single: boolean };

const localName = (name: string): string | undefined => {
  const slash = name.lastIndexOf("/");
  return slash < 0 ? undefined : name.slice(slash + 1);
};

function slotsByLocalName(input: LegacyInput): Map<string, Slot> {
  const out = new Map<string, Slot>();
  const all = input.images.map((i) => i.key);
  for (const f of fieldsFor("migrate"))
    for (const key of all) out.set(IMAGE_KEYS[f].name(key), { images: [key], field: f, single: false });
  for (const [f, name] of Object.entries(LEGACY_SINGLE))
    out.set(name as string, { images: all, field: f as ImageField, single: true });
  const onState = input.images.filter((i) => i.onStateWorkload).map((i) => i.key);
  out.set(LEGACY_SKIP_STREAK, { images: onState, field: "skip", single: true });
  out.set(INSTALLATION_KEYS.retryAfter.name(), { images: [], field: "retryAfter", single: false });
  return out;
}

interface Found {
  name: string;
  slot: Slot;
}

/** Our annotations on the workload, one per local name (the configured prefix wins a tie). */
export function legacyAnnotations(input: LegacyInput): Found[] {
  const slots = slotsByLocalName(input);
  const byLocal = new Map<string, Found>();
  for (const name of Object.keys(input.annotations)) {
    const local = localName(name);
    const slot = local === undefined ? undefined : slots.get(local);
    if (!local || !slot) continue;
    if (!byLocal.has(local) || name === `${input.prefix}/${local}`) byLocal.set(local, { name, slot });
  }
  return [...byLocal.values()];
}

/**
 * The writes that carry the legacy annotations into the store, for the images the store has no
 * entry of (the store wins once it has one). An image's own annotation wins over a single key.
 */
export function migrationChange(book: Book, input: LegacyInput): Change {
  const found = legacyAnnotations(input);
  const out: Record<string, string> = {};
  const fresh = (key: string) => book.images[key] !== undefined && !hasEntries(book.images[key]);
  for (const single of [true, false])
    for (const { name, slot } of found) {
      if (slot.single !== single) continue;
      const value = input.annotations[name] as string;
      if (slot.field === "retryAfter") {
        if (book.installation.retryAfter.kind === "absent") out[INSTALLATION_KEYS.retryAfter.name()] = value;
        continue;
      }
      for (const key of slot.images) if (fresh(key)) out[IMAGE_KEYS[slot.field].name(key)] = value;
    }
  return out;
}

/** The book a tick decides on: the store's, with the legacy annotations of fresh images. */
export function bookWithLegacy(book: Book, input: LegacyInput): Book {
  const change = migrationChange(book, input);
  return applyChange(book, change);
}

/**
 * The annotations that can go once `stored` (the book after the write landed) holds them: one
 * whose every image has entries in the store. The retry time goes once the store exists. Every
 * prefix's copy of a name goes, not only the one that was read (a left-over copy under another
 * prefix would stay on the workload for good).
 */
export function removableAnnotations(stored: Book, input: LegacyInput): string[] {
  const inStore = (key: string) => {
    const image = stored.images[key];
    return image !== undefined && hasEntries(image);
  };
  const removable = new Set(
    legacyAnnotations(input)
      .filter(({ slot }) =>
        slot.field === "retryAfter" ? stored.resourceVersion !== undefined : slot.images.every(inStore),
      )
      .map((f) => localName(f.name)),
  );
  return Object.keys(input.annotations).filter((name) => {
    const local = localName(name);
    return local !== undefined && removable.has(local);
  });
}
