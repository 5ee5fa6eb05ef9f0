// Durations both ways: what config accepts and how logs and messages print it back.
import { expect, test } from "bun:test";
import { formatDuration, parseDuration } from "./duration.ts";

const PARSE: Array<[string, number | undefined]> = [
  ["500ms", 500],
  [" 15s ", 15_000],
  ["10m", 600_000],
  ["1h", 3_600_000],
  ["1d", 86_400_000],
  ["15sx", undefined],
  ["x15s", undefined],
  ["15", undefined],
  ["1.5s", undefined],
  ["1234567890s", undefined],
];
test.each(PARSE)("parseDuration(%p) = %p", (text, ms) => expect(parseDuration(text)).toBe(ms));

const FORMAT: Array<[number, string]> = [
  [3_600_000, "1h"],
  [7_200_000, "2h"],
  [60_000, "1m"],
  [120_000, "2m"],
  [90_000, "90s"],
  [1_000, "1s"],
  [15_000, "15s"],
  [1_500, "1500ms"],
  [300, "300ms"],
];
test.each(FORMAT)("formatDuration(%p) = %p", (ms, text) => {
  expect(formatDuration(ms)).toBe(text);
  expect(parseDuration(text)).toBe(ms);
});

const SUMS: Array<[string, number | undefined]> = [
  ["1h30m", 5_400_000],
  ["2m30s", 150_000],
  ["1h0m5s250ms", 3_605_250],
  ["2d12h", 216_000_000],
  ["0d", 0],
  ["1h2d", undefined],
  ["0s", 0],
  ["30m1h", undefined],
  ["1m1m", undefined],
  ["1h 30m", undefined],
  ["", undefined],
  ["ms", undefined],
];
test.each(SUMS)("sums: parseDuration(%p) = %p", (text, ms) => expect(parseDuration(text)).toBe(ms));
