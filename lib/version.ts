// Replaced at build time would need a define flag; reading package.json keeps one source of truth.
import pkg from "../package.json" with { type: "json" };

export const VERSION: string = pkg.version;
