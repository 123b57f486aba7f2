import { expect } from "bun:test";
import { asc, eq } from "drizzle-orm";
import { type Responder, startStatusResponder } from "../scripts/demo-mc-server";
import type { RunningServer } from "../src/app";
import { serverSamples } from "../src/db/schema";
import { Clock } from "../src/lib/clock";
import { createLogger } from "../src/lib/log";
import { MonitoringService } from "../src/monitoring/service";
import { api, newTeam, newUser, type TestUser } from "./helpers";

export interface ServerFixture {
  owner: TestUser;
  teamId: string;
  serverId: string;
  agentToken: string;
  /** Headers selecting this server, with the owner's token. */
  as(token?: string): { token: string; headers: Record<string, string> };
}

/** A new owner, team and registered server (by default on a loopback port that refuses at once). */
export async function newServer(
  server: RunningServer,
  body: Record<string, unknown> = {},
  owner?: TestUser,
): Promise<ServerFixture> {
  owner ??= await newUser(server, "srv");
  const teamId = await newTeam(server, owner);
  const res = await api(server, "POST", "/server/servers", {
    token: owner.token,
    body: { team_id: teamId, name: "Survival", host: "127.0.0.1", port: 9, kind: "single", ...body },
  });
  expect(`${res.status} ${res.text}`).toStartWith("201");
  return {
    owner,
    teamId,
    serverId: res.body.server_id,
    agentToken: res.body.agent_token,
    as: (token = owner!.token) => ({ token, headers: { "x-server-id": res.body.server_id } }),
  };
}

/** One agent request with the agent token. */
export const agentApi = (server: RunningServer, token: string, method: string, path: string, body?: unknown) =>
  api(server, method, path, { headers: { authorization: `Bearer ${token}` }, body });

let seq = 0;
export const eventId = () => `e-${Date.now().toString(36)}-${(seq++).toString(36)}`;

/**
 * A real outage `daysAgo` days back, as the pinger found it: a pinger whose clock runs that far
 * behind checks a status responder up, then (the responder closed) refused twice, then up again
 * (a new responder on the same port), a few minutes apart. Returns the responder now answering,
 * and the first failed check and the check that found the server up again, as stored.
 */
export async function pastOutage(
  server: RunningServer,
  serverId: string,
  mc: Responder,
  daysAgo = 3,
): Promise<{ responder: Responder; startedAt: string; endedAt: string }> {
  const clock = new Clock();
  clock.advance(-daysAgo * 86_400_000);
  const { db } = server.services.database;
  const past = new MonitoringService(db, server.services.config, createLogger("silent"), clock);
  expect(await past.checkNow(serverId)).toMatchObject({ online: true });
  await mc.close();
  for (const minutes of [1, 2]) {
    clock.advance(60_000 * minutes);
    expect(await past.checkNow(serverId)).toMatchObject({ online: false, reason: "connection_refused" });
  }
  const responder = await startStatusResponder({ port: mc.port });
  clock.advance(5 * 60_000);
  expect(await past.checkNow(serverId)).toMatchObject({ online: true });
  const rows = await db
    .select({ ts: serverSamples.ts, online: serverSamples.online })
    .from(serverSamples)
    .where(eq(serverSamples.serverId, serverId))
    .orderBy(asc(serverSamples.ts));
  const down = rows.findIndex((r) => !r.online);
  return {
    responder,
    startedAt: rows[down]!.ts.toISOString(),
    endedAt: rows
      .slice(down)
      .find((r) => r.online)!
      .ts.toISOString(),
  };
}
