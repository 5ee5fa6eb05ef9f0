// The parts of zod/mini the schemas use, and its English messages: required (never imported) by
// lib/zod.ts, so the bundle puts them in a chunk of their own, loaded and evaluated on the first
// call. Requiring zod/mini itself would bring the whole package into the start-up chunks.
export {
  _default,
  array,
  boolean,
  config,
  enum,
  gte,
  int,
  literal,
  lte,
  maxLength,
  minLength,
  nullable,
  nullish,
  object,
  optional,
  pipe,
  record,
  refine,
  regex,
  strictObject,
  string,
  toJSONSchema,
  transform,
  union,
  unknown,
} from "zod/mini";
export { default as en } from "zod/v4/locales/en.js";
