/**
 * Debian's Chromium (/usr/bin/chromium, never a downloaded browser) driven by
 * playwright-core, headless, with its own throwaway profile and none of its
 * background traffic, for the /ui tests (tests only).
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type BrowserContext, chromium } from "playwright-core";

export function openChromium(
  options: { viewport?: { width: number; height: number } } = {},
): Promise<BrowserContext> {
  return chromium.launchPersistentContext(mkdtempSync(join(tmpdir(), "ura-chromium-")), {
    executablePath: "/usr/bin/chromium",
    headless: true,
    ...(options.viewport ? { viewport: options.viewport } : {}),
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--no-first-run",
    ],
  });
}
