import { expect, test } from "bun:test";
import { createBodyAdmission } from "./body-admission.ts";

test("bodies past the bound wait, first come first served, until earlier ones are answered", async () => {
  const admission = createBodyAdmission(100);
  const order: string[] = [];
  const a = await admission.admit(60);
  const waitingB = admission.admit(60).then((release) => {
    order.push("b");
    return release;
  });
  const waitingC = admission.admit(10).then((release) => {
    order.push("c");
    return release;
  });
  await Bun.sleep(5);
  expect(order).toEqual([]);
  expect(admission.waiting).toBe(2);
  a();
  const b = await waitingB;
  const c = await waitingC;
  expect(order).toEqual(["b", "c"]);
  expect(admission.bytesInFlight).toBe(70);
  b();
  c();
  c();
  expect(admission.bytesInFlight).toBe(0);
});

test("a body larger than the bound runs alone", async () => {
  const admission = createBodyAdmission(100);
  const big = await admission.admit(500);
  let small = false;
  const next = admission.admit(1).then((release) => {
    small = true;
    return release;
  });
  await Bun.sleep(5);
  expect(small).toBe(false);
  big();
  (await next)();
  expect(small).toBe(true);
});
