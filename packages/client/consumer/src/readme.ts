/** The README's examples, compiled as a consumer compiles them (not run). */
import {
  AnalyticsSocket,
  AssertionError,
  createLauncherBackend,
  createRestClient,
  createTrpcClient,
  LoginDeniedError,
  LoginExpiredError,
  selectors,
  verifySessionAssertion,
} from "@mc-platform/client";

declare function currentAccessToken(): string;
declare function openBrowser(url: string): void;
declare function showDenial(code: string): void;
declare const chart: { append(start: string, value: number | null): void };

export async function examples(
  baseUrl: string,
  teamId: string,
  serverId: string,
  clientId: string,
  clientSecret: string,
) {
  const api = createTrpcClient({ baseUrl, token: () => currentAccessToken(), defaults: { teamId } });
  const { servers } = await api.servers.list.query(undefined, { context: { teamId } });
  const players = await api.servers.players.query({ online: "true" }, selectors({ serverId }));
  await api.servers.ban.mutate({ uuid: players.players[0]?.uuid ?? "", name: "Griefer" }, selectors({ serverId }));

  const rest = createRestClient({ baseUrl, token: "mcp_key_..." });
  const { data, error } = await rest.GET("/server/players", {
    params: { header: { "x-server-id": serverId }, query: { online: "true" } },
  });
  if (error) console.error(error.error.code, error.error.request_id);

  const socket = new AnalyticsSocket({ baseUrl, serverId, token: () => currentAccessToken() });
  socket.on("snapshot", (m) => console.log(m.data.players_online));
  socket.on("player_join", (m) => console.log(m.data.name));
  socket.on("metrics", (m) => chart.append(m.data.start, m.data.tps.avg));
  socket.on("reconnecting", ({ delayMs }) => console.log(delayMs));
  socket.on("closed", ({ code }) => console.log("stream ended", code));
  await socket.connect();

  const backend = createLauncherBackend({ baseUrl, clientId, clientSecret });
  try {
    const session = await backend.signIn({
      openUrl: (url) => openBrowser(url),
      clientState: "xyz",
      assertion: true,
      signal: AbortSignal.timeout(10 * 60_000),
    });
    const { mcUuid, mcUsername, expiresAt } = await verifySessionAssertion(session.assertion!, { baseUrl, clientId });
    await backend.validate(session.sessionToken);
    await backend.revoke(session.sessionToken);
    return { servers, data, mcUuid, mcUsername, expiresAt };
  } catch (err) {
    if (err instanceof LoginDeniedError) showDenial(err.code);
    else if (err instanceof LoginExpiredError) return undefined;
    else if (err instanceof AssertionError) console.log(err.code);
    else throw err;
  }
  return undefined;
}
