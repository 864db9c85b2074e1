import { expect, test } from "bun:test";
import { webpSettingsSchema } from "./settings.ts";

test("defaults: cwebp -z 1 (method 1, quality 20), exact", () => {
  expect(webpSettingsSchema.parse({})).toEqual({ method: 1, quality: 20, exact: true });
});

test("rejects out-of-range effort and turning exact off", () => {
  expect(webpSettingsSchema.safeParse({ method: 7 }).success).toBe(false);
  expect(webpSettingsSchema.safeParse({ quality: 101 }).success).toBe(false);
  expect(webpSettingsSchema.safeParse({ exact: false }).success).toBe(false);
});
