import { expect, test } from "bun:test";
import { factoryReturnTypes } from "./check-interfaces.ts";

test("an exported factory return type is found, awaited or not; a declared interface is not", () => {
  const source = [
    "export type Store = ReturnType<typeof createStore>;",
    "export type App = Awaited<ReturnType<typeof composeApp>>;",
    "type Local = ReturnType<typeof helper>;",
    "export interface Episode { id: string }",
    "export type Server = { proc: ReturnType<typeof Bun.spawn> };",
  ].join("\n");
  expect(factoryReturnTypes(source)).toEqual(["Store", "App"]);
});
