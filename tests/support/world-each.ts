// A fresh default world for every test of a file, the setup most end-to-end files share: started
// before each test (then the file's own setup), stopped after it even when the test or the setup
// failed. Kept out of world.ts, which bench/ imports outside `bun test`.
import { afterEach, beforeEach } from "bun:test";
import { startWorld, type World } from "./world.ts";

/**
 * Registers the hooks; `use` hands each test's world to the file (`let w: World` assigned in it),
 * `setup` prepares it before the test runs (e.g. `recorded`).
 */
export function worldPerTest(use: (w: World) => void, setup?: (w: World) => Promise<void> | void): void {
  let current: World | undefined;
  beforeEach(async () => {
    current = await startWorld();
    use(current);
    await setup?.(current);
  });
  afterEach(async () => {
    await current?.stop();
    current = undefined;
  });
}
