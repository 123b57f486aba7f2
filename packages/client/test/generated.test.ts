import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import type { inferRouterInputs, inferRouterOutputs } from "@trpc/server";
import { buildAsyncApiDocument } from "../../../src/realtime/asyncapi";
import { CLOSE } from "../../../src/realtime/socket";
import type { AppRouter as ServerRouter } from "../../../src/trpc/router";
import { OPENAPI_FILE, ROUTER_FILE, renderOpenApiTypes, renderRouterTypes } from "../scripts/generate";
import type { AppRouter as SdkRouter } from "../src/generated/router";
import { ANALYTICS_CLOSE, ANALYTICS_MESSAGE_TYPES } from "../src/index";

const REGENERATE = "run `bun run --cwd packages/client generate` and commit the result";

test("the committed REST types are what the server's OpenAPI document generates (fails on drift)", async () => {
  const fresh = await renderOpenApiTypes();
  const stale = readFileSync(OPENAPI_FILE, "utf8") !== fresh;
  expect(stale ? `${OPENAPI_FILE} is stale: ${REGENERATE}` : "up to date").toBe("up to date");
});

test("the committed tRPC router types are what the server's router generates (fails on drift)", () => {
  const fresh = renderRouterTypes();
  const stale = readFileSync(ROUTER_FILE, "utf8") !== fresh;
  expect(stale ? `${ROUTER_FILE} is stale: ${REGENERATE}` : "up to date").toBe("up to date");
});

// Checked by `tsc --noEmit`: the SDK's router has exactly the server's inputs and outputs.
type Same<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
const inputsMatch: Same<inferRouterInputs<SdkRouter>, inferRouterInputs<ServerRouter>> = true;
const outputsMatch: Same<inferRouterOutputs<SdkRouter>, inferRouterOutputs<ServerRouter>> = true;

test("the router types are the server's, procedure for procedure", () => {
  expect(inputsMatch && outputsMatch).toBe(true);
});

test("the socket's message types and close codes are the ones the AsyncAPI document and the service use", () => {
  const doc = buildAsyncApiDocument("http://localhost:3000");
  const outbound = doc.operations.receiveServerEvents.messages.map((m) => m.$ref.split("/").pop());
  expect([...ANALYTICS_MESSAGE_TYPES].sort() as string[]).toEqual(outbound.sort() as string[]);
  expect(ANALYTICS_CLOSE).toEqual(CLOSE);
});
