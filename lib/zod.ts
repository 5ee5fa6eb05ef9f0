// The one place that imports zod. We use zod/mini, the tree-shakable build of the same
// validator: in the compiled binary, importing classic zod and building our schemas cost about
// 22 ms of CPU per process, zod/mini about 8 ms (compiled programs that only build and parse
// a config-sized schema, 40 interleaved runs), and a CronJob pays that on every tick. zod/mini
// ships no messages, so the English locale is installed here.
// jitless: zod would otherwise compile each object schema with `new Function` on its first
// parse, work that a process which parses each schema once never gets back.
import { z } from "zod/mini";
import en from "zod/v4/locales/en.js";

z.config({ ...en(), jitless: true });

export { z };
