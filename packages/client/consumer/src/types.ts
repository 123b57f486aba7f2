/**
 * Compile-time checks of the SDK's published types, as a consumer sees them. Each
 * `@ts-expect-error` fails the build if the types it guards were loose (any) or wrong.
 */
import {
  type AnalyticsMessageOf,
  AnalyticsSocket,
  type AppRouter,
  createRestClient,
  createTrpcClient,
  type DenialCode,
  type paths,
  selectors,
  verifySessionAssertion,
} from "@mc-platform/client";
import type { inferRouterInputs, inferRouterOutputs } from "@trpc/server";

export async function typedCalls(baseUrl: string, token: string, teamId: string, serverId: string) {
  const api = createTrpcClient({ baseUrl, token });
  const listed = await api.servers.list.query(undefined, selectors({ teamId }));
  const name: string = listed.servers[0]?.name ?? "";
  // @ts-expect-error an unknown procedure
  await api.servers.nope.query();
  // @ts-expect-error a required input field is missing
  await api.auth.login.mutate({ email: "a@example.com" });

  const rest = createRestClient({ baseUrl, token });
  const players = await rest.GET("/server/players", { params: { header: { "x-server-id": serverId }, query: {} } });
  const online: number | undefined = players.data?.players.length;
  // @ts-expect-error a path the service does not have
  await rest.GET("/server/nope");

  const socket = new AnalyticsSocket({ baseUrl, serverId, token });
  socket.on("metrics", (m: AnalyticsMessageOf<"metrics">) => {
    const avg: number | null = m.data.tps.avg;
    void avg;
  });
  // @ts-expect-error not a message type of the stream
  socket.on("nope", () => {});

  const who = await verifySessionAssertion("token", { baseUrl, clientId: "id" });
  const expires: Date = who.expiresAt;
  const denial: DenialCode = "consent_denied";
  // @ts-expect-error not a denial code
  const wrong: DenialCode = "nope";
  return { name, online, expires, denial, wrong };
}

export type LoginInput = inferRouterInputs<AppRouter>["msAuth"]["poll"];
export type LoginOutput = inferRouterOutputs<AppRouter>["msAuth"]["poll"];
export type HealthPath = paths["/health"]["get"];
