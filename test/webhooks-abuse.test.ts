import { describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import type { RunningServer } from "../src/app";
import { TEAM_EVENT_TYPES } from "../src/lib/events";
import { createLogger } from "../src/lib/log";
import { discordBody, slackBody } from "../src/webhooks/formats";
import { startTestServer } from "./harness";
import { api, expectError, newTeam, newUser, type TestUser, trpcClient } from "./helpers";
import { makePeople, makeTeam } from "./security/fixture";
import { agentApi, eventId, newServer } from "./servers-fixture";
import { receiversForFile, withWebhookServer } from "./webhook-receiver";

/**
 * What a team could do with webhooks to others or learn through them: amplify its own calls
 * into floods of POSTs, inject mentions and links into chat channels, read a chat webhook URL
 * (a credential) with a viewer's rights, or learn what a name resolves to inside the network.
 * Servers that deliver are stopped at the end of their test: on PostgreSQL they share a queue.
 */
const receiver = receiversForFile();

const create = (srv: RunningServer, who: TestUser, teamId: string, body: Record<string, unknown>) =>
  api(srv, "POST", `/teams/${teamId}/webhooks`, { token: who.token, body });

async function endpoint(srv: RunningServer, who: TestUser, teamId: string, body: Record<string, unknown>) {
  const res = await create(srv, who, teamId, body);
  expect(`${res.status} ${res.text}`).toStartWith("201");
  return res.body.endpoint.endpoint_id as string;
}

const settle = async (srv: RunningServer) => {
  await srv.services.webhooks.flush();
  await srv.services.webhookWorker.drain();
};

describe("amplification", () => {
  test("a second endpoint with the same URL in a team is a 409, however the URL is spelled; another team may use it", async () => {
    const srv = await startTestServer();
    const owner = await newUser(srv, "dup");
    const teamId = await newTeam(srv, owner);
    await endpoint(srv, owner, teamId, { url: "https://hooks.example.test/in/abc?b=2&a=1" });
    for (const url of [
      "https://hooks.example.test/in/abc?b=2&a=1",
      "HTTPS://Hooks.Example.TEST:443/in/abc?a=1&b=2",
      "https://hooks.example.test./in/abc/?a=1&b=2#fragment",
      "https://hooks.example.test/in/%61bc?a=1&b=2",
    ]) {
      const res = await create(srv, owner, teamId, { url, kind: "slack" });
      expectError(res, 409, "conflict");
      expect(res.body.error.message).toContain("same URL");
    }
    const other = await endpoint(srv, owner, teamId, { url: "https://hooks.example.test/in/abd" });
    // Changing another endpoint to the same URL is refused too, and leaves it as it was.
    const moved = await api(srv, "PATCH", `/teams/${teamId}/webhooks/${other}`, {
      token: owner.token,
      body: { url: "https://HOOKS.example.test/in/abc?a=1&b=2" },
    });
    expectError(moved, 409, "conflict");
    const kept = await api(srv, "GET", `/teams/${teamId}/webhooks/${other}`, { token: owner.token });
    expect(kept.body.url).toBe("https://hooks.example.test/in/abd");
    // Patching an endpoint to its own URL is no conflict.
    const same = await api(srv, "PATCH", `/teams/${teamId}/webhooks/${other}`, {
      token: owner.token,
      body: { url: "https://hooks.example.test/in/abd", description: "same" },
    });
    expect(same.status).toBe(200);
    const list = await api(srv, "GET", `/teams/${teamId}/webhooks`, { token: owner.token });
    expect(list.body.endpoints).toHaveLength(2);

    const elsewhere = await newUser(srv, "dup2");
    const otherTeam = await newTeam(srv, elsewhere);
    await endpoint(srv, elsewhere, otherTeam, { url: "https://hooks.example.test/in/abc?b=2&a=1" });
  });

  test("past a team's per-minute budget events are not queued but counted: in the team's webhook list, the metrics and the log", async () => {
    const TOKEN = "metrics-token-for-budget-test";
    const lines: string[] = [];
    await withWebhookServer(
      { WEBHOOK_TEAM_EVENTS_PER_MIN: "4", WEBHOOK_TEAM_DELIVERIES_PER_MIN: "6", METRICS_TOKEN: TOKEN },
      async (srv) => {
        const bans = (n: number) => ({
          events: Array.from({ length: n }, (_, i) => ({
            event_id: eventId(),
            type: "ban",
            uuid: crypto.randomUUID(),
            name: `Griefer${i}`,
          })),
        });
        // Two endpoints: every event makes two deliveries, so the delivery budget binds first.
        const a = await newServer(srv);
        const [a1, a2] = [receiver(), receiver()];
        for (const r of [a1, a2])
          await endpoint(srv, a.owner, a.teamId, { url: r.url, event_types: ["player.banned"] });
        expect((await agentApi(srv, a.agentToken, "POST", "/agent/events", bans(10))).status).toBe(200);
        // One endpoint: the event budget binds.
        const b = await newServer(srv);
        const b1 = receiver();
        await endpoint(srv, b.owner, b.teamId, { url: b1.url, event_types: ["player.banned"] });
        expect((await agentApi(srv, b.agentToken, "POST", "/agent/events", bans(10))).status).toBe(200);
        // A third team is not touched by the others' spending.
        const c = await newServer(srv);
        const c1 = receiver();
        await endpoint(srv, c.owner, c.teamId, { url: c1.url, event_types: ["player.banned"] });
        expect((await agentApi(srv, c.agentToken, "POST", "/agent/events", bans(1))).status).toBe(200);
        await settle(srv);
        await Bun.sleep(200);
        await settle(srv);

        expect([a1.got.length, a2.got.length, b1.got.length, c1.got.length]).toEqual([3, 3, 4, 1]);
        const usage = async (f: typeof a) =>
          (await api(srv, "GET", `/teams/${f.teamId}/webhooks`, { token: f.owner.token })).body.usage;
        expect(await usage(a)).toMatchObject({
          events_per_minute: 4,
          deliveries_per_minute: 6,
          dropped_events: 7,
          dropped_deliveries: 14,
        });
        expect((await usage(a)).last_dropped_at).toBeString();
        expect(await usage(b)).toMatchObject({ dropped_events: 6, dropped_deliveries: 6 });
        expect(await usage(c)).toMatchObject({ dropped_events: 0, dropped_deliveries: 0, last_dropped_at: null });

        const metrics = await (
          await fetch(`${srv.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })
        ).text();
        expect(metrics).toContain('webhook_budget_exceeded_total{kind="events"} 13');
        expect(metrics).toContain('webhook_budget_exceeded_total{kind="deliveries"} 20');

        // One warning for each over-budget team, not one per event or per batch: the team, what
        // did not fit in the batch that spent it (the totals are the list's), and the limits.
        const warnings = lines.map((l) => JSON.parse(l)).filter((l) => l.msg.includes("webhook budget"));
        expect(warnings.map((w) => w.team_id).sort()).toEqual([a.teamId, b.teamId].sort());
        for (const w of warnings) {
          expect(w.dropped_events).toBeGreaterThan(0);
          expect(w).toMatchObject({ level: "warn", events_per_minute: 4, deliveries_per_minute: 6 });
        }
      },
      createLogger("warn", {}, { write: (_level, line) => lines.push(line) }),
    );
  }, 60_000);
});

describe("chat formats", () => {
  const hostile = "<!channel> <https://evil.example|appeal here> & [bank](https://evil.example) @everyone";

  test("a ban reason and player name cannot mention a Slack channel or disguise a link, and Discord mentions nothing", async () => {
    await withWebhookServer({}, async (srv) => {
      const slack = receiver("/services/T0/B0/x");
      const discord = receiver("/api/webhooks/1/x");
      const f = await newServer(srv);
      await endpoint(srv, f.owner, f.teamId, { url: slack.url, kind: "slack", event_types: ["player.banned"] });
      await endpoint(srv, f.owner, f.teamId, { url: discord.url, kind: "discord", event_types: ["player.banned"] });
      const ban = await api(srv, "POST", "/server/bans", {
        ...f.as(),
        body: { uuid: crypto.randomUUID(), name: "<!here>", reason: hostile },
      });
      expect(`${ban.status} ${ban.text}`).toStartWith("201");
      const [s] = await slack.until(1);
      const [d] = await discord.until(1);

      const sBody = JSON.parse(s!.body);
      const slackTexts = [
        sBody.text,
        ...sBody.blocks.flatMap((b: any) => [b.text?.text, ...(b.elements ?? []).map((e: any) => e.text)]),
      ]
        .filter(Boolean)
        .join("\n");
      expect(slackTexts).not.toMatch(/[<>]/);
      expect(slackTexts).toContain("&lt;!channel&gt;");
      expect(slackTexts).toContain("&lt;!here&gt;");
      expect(slackTexts).toContain("&lt;https://evil.example|appeal here&gt; &amp; ");

      const dBody = JSON.parse(d!.body);
      expect(dBody.allowed_mentions).toEqual({ parse: [] });
      const reason = dBody.embeds[0].fields.find((x: { name: string }) => x.name === "Reason").value;
      expect(reason).not.toContain("[bank](https://evil.example)");
      expect(reason).toContain("\\[bank\\]\\(https://evil.example\\)");
    });
  }, 60_000);

  test("every event type's chat bodies escape every field the event carries", () => {
    const data = Object.fromEntries(
      [
        "server_name",
        "server_id",
        "name",
        "uuid",
        "reason",
        "source",
        "expires",
        "error",
        "mc_username",
        "client_name",
        "client_id",
        "url",
        "failed_pings",
        "last_heartbeat_at",
        "latency_ms",
        "failing_since",
        "mc_uuid",
        "paused_until",
        "consecutive_failures",
      ].map((k) => [k, hostile]),
    );
    for (const type of TEAM_EVENT_TYPES) {
      const event = { type, timestamp: "2026-11-23T12:00:00.000Z", data };
      const slack = JSON.stringify(slackBody(event));
      expect(`${type}: ${/<|>|\\u003c|\\u003e/.test(slack)}`).toBe(`${type}: false`);
      const discord = discordBody(event);
      expect(discord.allowed_mentions).toEqual({ parse: [] });
      expect(`${type}: ${JSON.stringify(discord).includes("[bank](")}`).toBe(`${type}: false`);
    }
  });
});

describe("webhook URLs are credentials", () => {
  test("viewers and viewer API keys get the URL masked on both doors; admins, admin keys and owners get it whole", async () => {
    const srv = await startTestServer();
    const people = await makePeople(srv);
    const team = await makeTeam(srv, people);
    const discordUrl =
      "https://discord.com/api/webhooks/1234567890123456789/Zq8sEcReTtOkEn-aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789abcdefgh";
    const slackUrl = "https://hooks.slack.com/services/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";
    const ids = [
      await endpoint(srv, people.owner, team.teamId, { url: discordUrl, kind: "discord" }),
      await endpoint(srv, people.owner, team.teamId, { url: slackUrl, kind: "slack" }),
    ];
    const secrets = ["Zq8sEcReTtOkEn", "1234567890123456789", "SeCrEtSlackToken", "B0000BBBB"];
    const callers: [string, string, boolean][] = [
      ["viewer", people.viewer.token, true],
      ["key:viewer", team.keys.viewer, true],
      ["admin", people.admin.token, false],
      ["key:admin", team.keys.admin, false],
      ["owner", people.owner.token, false],
    ];
    for (const [who, token, masked] of callers) {
      const list = await api(srv, "GET", `/teams/${team.teamId}/webhooks`, { token });
      expect(`${who} ${list.status}`).toBe(`${who} 200`);
      const one = await api(srv, "GET", `/teams/${team.teamId}/webhooks/${ids[0]}`, { token });
      const typed = await trpcClient(srv, token).webhooks.get.query({ team_id: team.teamId, endpoint_id: ids[1]! });
      const urls = [list.body.endpoints[0].url, list.body.endpoints[1].url, one.body.url, typed.url];
      if (masked) {
        for (const s of secrets) expect(`${who}: ${JSON.stringify([list.text, one.text, typed])}`).not.toContain(s);
        expect(urls).toEqual([
          "https://discord.com/…efgh",
          "https://hooks.slack.com/…abcd",
          "https://discord.com/…efgh",
          "https://hooks.slack.com/…abcd",
        ]);
        expect([list.body.endpoints[0].url_masked, one.body.url_masked, typed.url_masked]).toEqual([true, true, true]);
      } else {
        expect(urls).toEqual([discordUrl, slackUrl, discordUrl, slackUrl]);
        expect([list.body.endpoints[0].url_masked, one.body.url_masked, typed.url_masked]).toEqual([
          false,
          false,
          false,
        ]);
      }
    }
  });
});

describe("delivery errors", () => {
  test("a host name refused at delivery time is reported as refused by policy, without the address it resolves to", async () => {
    await withWebhookServer({ OUTBOUND_ALLOW_PRIVATE: "false", WEBHOOK_ALLOW_PRIVATE: "false" }, async (srv) => {
      const inside = receiver();
      const owner = await newUser(srv, "dns");
      const teamId = await newTeam(srv, owner);
      const id = await endpoint(srv, owner, teamId, { url: "https://hooks.example.test/in" });
      // As if registered while private targets were allowed and the operator has since turned that off.
      await srv.services.database.db.execute(
        sql`update webhook_endpoints set url = ${`http://localhost:${inside.port}/hook`} where id = ${id}`,
      );
      const queued = await api(srv, "POST", `/teams/${teamId}/webhooks/${id}/test`, { token: owner.token });
      expect(queued.status).toBe(200);
      await settle(srv);
      const [d] = (await api(srv, "GET", `/teams/${teamId}/webhooks/${id}/deliveries`, { token: owner.token })).body
        .deliveries;
      expect(d).toMatchObject({ status: "failed", attempts: 1, last_status_code: null });
      expect(d.last_error).toContain("refused by policy");
      expect(d.last_error).not.toMatch(/127\.0\.0\.1|::1|loopback|private/);
      expect(inside.got).toHaveLength(0);
    });
  }, 60_000);
});
