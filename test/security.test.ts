import { beforeAll, describe, expect, test } from "bun:test";
import type { RunningServer } from "../src/app";
import { restRoutes } from "../src/trpc/rest";
import { appRouter } from "../src/trpc/router";
import { sharedServer } from "./harness";
import { api, expectError, type ApiResult } from "./helpers";
import { SECURITY_CASES, type Req, type SecurityCase } from "./security/cases";
import { makePeople, makeTeam, type People, type TeamFixture } from "./security/fixture";

let server: RunningServer;
let people: People;
let team: TeamFixture;
let expiredToken: string;

beforeAll(async () => {
  server = await sharedServer();
  people = await makePeople(server);
  team = await makeTeam(server, people);
  // A real token from the server's own key, issued two hours ago with a one-minute life.
  expiredToken = await server.services.tokens.sign(
    people.owner.id,
    (await server.services.tokens.verify(people.owner.token))!.sid,
    Math.floor(Date.now() / 1000) - 7200,
    60,
  );
});

function send(req: Req, authorization?: string): Promise<ApiResult> {
  return api(server, req.method, req.path, {
    body: req.body,
    headers: { ...req.headers, ...(authorization ? { authorization } : {}) },
  });
}

const bearer = (t: string) => `Bearer ${t}`;
/** The success status each route declares (201 for a create). */
const SUCCESS = new Map(restRoutes(appRouter).map((r) => [`${r.method} ${r.path}`, r.status]));

describe("security suite: every protected route", () => {
  test("every bearer-protected procedure has a security case with its declared access", () => {
    const protectedRoutes = restRoutes(appRouter).filter(
      (r) => r.access !== "public" && r.access !== "client" && r.access !== "agent",
    );
    for (const r of restRoutes(appRouter))
      expect(`${r.method} ${r.path}: ${r.access ?? "undeclared"}`).not.toEndWith("undeclared");
    for (const r of protectedRoutes) {
      const c = SECURITY_CASES[`${r.method} ${r.path}`];
      expect(c ? `${r.method} ${r.path} ${c.access}` : `${r.method} ${r.path} has no security case`).toBe(
        `${r.method} ${r.path} ${r.access}`,
      );
    }
    expect(Object.keys(SECURITY_CASES).length).toBe(protectedRoutes.length);
  });

  for (const [name, c] of Object.entries(SECURITY_CASES) as [string, SecurityCase][]) {
    describe(name, () => {
      const req = () => c.request({ server, people, team });

      test("no credential: 401", async () => {
        expectError(await send(await req()), 401, "unauthenticated");
      });

      test("malformed credential: 401", async () => {
        const r = await req();
        for (const auth of [
          "Basic dXNlcjpwYXNz",
          "Bearer",
          "Bearer not-a-token",
          "Bearer a.b.c",
          bearer(`mcp_key_${"A".repeat(43)}`),
        ]) {
          expectError(await send(r, auth), 401, "unauthenticated");
        }
      });

      test("expired access token: 401", async () => {
        expectError(await send(await req(), bearer(expiredToken)), 401, "unauthenticated");
      });

      test("revoked API key: 401", async () => {
        expectError(await send(await req(), bearer(team.keys.revoked)), 401, "unauthenticated");
      });

      test("expired API key: 401 api_key_expired", async () => {
        expectError(await send(await req(), bearer(team.keys.expired)), 401, "api_key_expired");
      });

      if (c.access === "user") {
        test("a team API key is refused: 403", async () => {
          expectError(await send(await req(), bearer(team.keys.admin)), 403, "forbidden");
        });
      } else if (c.access === "member") {
        test("a team API key reaches only its own team", async () => {
          const res = await send(await req(), bearer(team.keys.admin));
          expect(res.status).toBe(200);
          expect(JSON.stringify(res.body)).toContain(team.teamId);
          expect(JSON.stringify(res.body)).not.toContain(team.otherTeamId);
        });
      } else if (c.access === "invitee") {
        test("a team API key is refused: 403", async () => {
          for (const key of [team.keys.admin, team.keys.otherTeamAdmin])
            expectError(await send(await req(), bearer(key)), 403, "forbidden");
        });
        // The invitation is the owner's: to everyone else, the inviter included, it does not exist.
        test("anyone but the invitee: 404", async () => {
          const r = await req();
          for (const who of [people.outsider, people.admin, people.viewer])
            expectError(await send(r, bearer(who.token)), 404, "not_found");
        });
      } else {
        const outsider = c.outsider ?? 403;
        test(`member of another team: ${outsider}`, async () => {
          const r = await req();
          const code = outsider === 403 ? "forbidden" : "not_found";
          expectError(await send(r, bearer(people.outsider.token)), outsider, code);
          expectError(await send(r, bearer(team.keys.otherTeamAdmin)), outsider, code);
        });

        const tooLow: [string, () => string][] =
          c.access === "team:moderator"
            ? [
                ["viewer", () => people.viewer.token],
                ["viewer API key", () => team.keys.viewer],
              ]
            : c.access === "team:admin"
              ? [
                  ["viewer", () => people.viewer.token],
                  ["viewer API key", () => team.keys.viewer],
                  ["moderator", () => people.moderator.token],
                  ["moderator API key", () => team.keys.moderator],
                ]
              : c.access === "team:owner"
                ? [
                    ["admin", () => people.admin.token],
                    ["admin API key", () => team.keys.admin],
                  ]
                : c.access === "person:admin"
                  ? [
                      ["viewer", () => people.viewer.token],
                      ["moderator", () => people.moderator.token],
                    ]
                  : c.access === "person:owner"
                    ? [["admin", () => people.admin.token]]
                    : [];
        if (c.access.startsWith("person:")) {
          test("a team API key is refused, whatever its role: 403", async () => {
            for (const key of [team.keys.admin, team.keys.viewer])
              expectError(await send(await req(), bearer(key)), 403, "forbidden");
          });
        }
        for (const [who, token] of tooLow) {
          test(`insufficient role (${who}): 403`, async () => {
            expectError(await send(await req(), bearer(token())), 403, "forbidden");
          });
        }
      }

      test("the least role allowed gets through (control)", async () => {
        // A fresh team so destructive routes cannot disturb the other cases.
        const fresh = await makeTeam(server, people);
        const r = await c.request({ server, people, team: fresh });
        const token =
          c.access === "team:viewer"
            ? people.viewer.token
            : c.access === "team:moderator"
              ? people.moderator.token
              : c.access === "team:admin" || c.access === "person:admin"
                ? people.admin.token
                : people.owner.token;
        const res = await send(r, bearer(token));
        // The fixture's people may be in only so many teams: this route's fresh ones go (a route
        // that deleted or handed its team on answers 403 or 404 here, which is fine).
        await api(server, "DELETE", `/teams/${fresh.teamId}`, { token: people.owner.token });
        await api(server, "DELETE", `/teams/${fresh.otherTeamId}`, { token: people.outsider.token });
        expect(`${name} -> ${res.status}`).toBe(`${name} -> ${SUCCESS.get(name)}`);
      });
    });
  }
});
