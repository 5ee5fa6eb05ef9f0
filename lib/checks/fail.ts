// The compiled checks' answer for an input zod would refuse (lib/checks/compile.ts).
export const FAIL: unique symbol = Symbol("fail");
