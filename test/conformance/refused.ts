import { expect } from "vitest";
import { ErrandError, type ErrandErrorCode } from "../../src/errors.js";

/** Runs `action` (sync or async) and returns the ErrandError it must raise with `code`. */
export async function refused(action: () => unknown, code: ErrandErrorCode): Promise<ErrandError> {
  let error: unknown;
  try {
    await action();
  } catch (e) {
    error = e;
  }
  expect(error, `expected ${code}`).toBeInstanceOf(ErrandError);
  expect((error as ErrandError).code).toBe(code);
  return error as ErrandError;
}
