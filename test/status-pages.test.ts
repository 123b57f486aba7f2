import { afterAll, describe, expect, test } from "bun:test";
import { and, eq } from "drizzle-orm";
import { type Responder, startStatusResponder } from "../scripts/demo-mc-server";
import { auditLog } from "../src/db/schema";
import { sharedServer } from "./harness";
import { api, expectError, newTeam, newUser } from "./helpers";
import { newServer, pastOutage } from "./servers-fixture";

const server = await sharedServer();
const responders: Responder[] = [];
afterAll(async () => {
  for (const r of responders) await r.close().catch(() => {});
});

let seq = 0;
const slug = (tag: string) => `${tag}-${Date.now().toString(36)}-${(seq++).toString(36)}`;

/** A team with a real status responder registered as a server and checked once (up). */
async function fixture(motd = "§aWelcome §lhome §r<b>&amp;") {
  const mc = await startStatusResponder({ motd, version: "1.21.1", maxPlayers: 50, players: 4 });
  responders.push(mc);
  const s = await newServer(server, { host: "127.0.0.1", port: mc.port, name: "Survival <One>" });
  expect(await server.services.monitoring.checkNow(s.serverId)).toMatchObject({ online: true });
  return { ...s, mc };
}

async function createPage(f: { owner: { token: string }; teamId: string }, body: Record<string, unknown>) {
  const res = await api(server, "POST", `/teams/${f.teamId}/status-pages`, { token: f.owner.token, body });
  expect(`${res.status} ${res.text}`).toStartWith("201");
  return res.body as { page_id: string; slug: string; url: string };
}

describe("status pages: management", () => {
  test("create, list, get, update, publish, unpublish, delete; each change audited", async () => {
    const f = await fixture();
    const s = slug("crud");
    const page = await createPage(f, { slug: s, title: "Blockworks", server_ids: [f.serverId] });
    expect(page).toMatchObject({
      slug: s,
      published: false,
      show: { players: false, version: false, motd: false, latency: false },
      theme: "auto",
      accent_color: "#2f6fde",
      url: `${server.services.config.PUBLIC_URL}/status/${s}`,
    });
    const base = `/teams/${f.teamId}/status-pages`;
    const list = await api(server, "GET", base, { token: f.owner.token });
    expect(list.body.pages.map((p: { slug: string }) => p.slug)).toEqual([s]);
    const got = await api(server, "GET", `${base}/${page.page_id}`, { token: f.owner.token });
    expect(got.body.page_id).toBe(page.page_id);

    const upd = await api(server, "PATCH", `${base}/${page.page_id}`, {
      token: f.owner.token,
      body: { title: "Blockworks Network", show: { players: true }, theme: "dark", accent_color: "#AA3300" },
    });
    expect(upd.status).toBe(200);
    expect(upd.body).toMatchObject({
      title: "Blockworks Network",
      show: { players: true, version: false },
      theme: "dark",
      accent_color: "#aa3300",
    });
    const pub = await api(server, "POST", `${base}/${page.page_id}/publish`, { token: f.owner.token });
    expect(pub.body.published).toBe(true);
    expect((await api(server, "GET", `/status/${s}`)).status).toBe(200);
    const unpub = await api(server, "POST", `${base}/${page.page_id}/unpublish`, { token: f.owner.token });
    expect(unpub.body.published).toBe(false);
    expect((await api(server, "GET", `/status/${s}`)).status).toBe(404);
    const del = await api(server, "DELETE", `${base}/${page.page_id}`, { token: f.owner.token });
    expect(del.body).toEqual({ ok: true });
    expectError(await api(server, "GET", `${base}/${page.page_id}`, { token: f.owner.token }), 404, "not_found");

    const rows = await server.services.database.db
      .select({ action: auditLog.action })
      .from(auditLog)
      .where(and(eq(auditLog.teamId, f.teamId), eq(auditLog.targetId, page.page_id)))
      .orderBy(auditLog.id);
    expect(rows.map((r) => r.action)).toEqual([
      "status_page.create",
      "status_page.update",
      "status_page.publish",
      "status_page.unpublish",
      "status_page.delete",
    ]);
  });

  test("bad input is a clear 4xx and writes nothing: taken slug or host, another team's server, unknown network, own host", async () => {
    const f = await fixture();
    const s = slug("dup");
    await createPage(f, { slug: s, title: "One", host_name: `${s}.example.test` });
    const base = `/teams/${f.teamId}/status-pages`;
    expectError(
      await api(server, "POST", base, { token: f.owner.token, body: { slug: s, title: "Two" } }),
      409,
      "conflict",
    );
    expectError(
      await api(server, "POST", base, {
        token: f.owner.token,
        body: { slug: slug("h"), title: "Two", host_name: `${s}.EXAMPLE.test` },
      }),
      409,
      "conflict",
    );
    const other = await newServer(server);
    expectError(
      await api(server, "POST", base, {
        token: f.owner.token,
        body: { slug: slug("x"), title: "X", server_ids: [other.serverId] },
      }),
      400,
      "validation_failed",
    );
    expectError(
      await api(server, "POST", base, {
        token: f.owner.token,
        body: { slug: slug("x"), title: "X", network_names: ["nope"] },
      }),
      400,
      "validation_failed",
    );
    expectError(
      await api(server, "POST", base, {
        token: f.owner.token,
        body: { slug: slug("x"), title: "X", host_name: "127.0.0.1" },
      }),
      400,
      "validation_failed",
    );
    expectError(
      await api(server, "POST", base, { token: f.owner.token, body: { slug: "Bad slug!", title: "X" } }),
      400,
      "validation_failed",
    );
    expectError(
      await api(server, "POST", base, {
        token: f.owner.token,
        body: { slug: slug("x"), title: "X", logo_url: "javascript:alert(1)" },
      }),
      400,
      "validation_failed",
    );
    const list = await api(server, "GET", base, { token: f.owner.token });
    expect(list.body.pages).toHaveLength(1);
  });
});

describe("status pages: what the public reads", () => {
  test("server-rendered, only what the team chose, MOTD colours escaped, 90 bars, incident history; ETag and 304", async () => {
    const f = await fixture();
    const outage = await pastOutage(server, f.serverId, f.mc, 2);
    responders.push(outage.responder);
    const s = slug("page");
    await createPage(f, { slug: s, title: "Blockworks <&>", server_ids: [f.serverId], published: true });

    const res = await api(server, "GET", `/status/${s}`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(res.headers.get("cache-control")).toBe("public, max-age=10");
    expect(res.headers.get("content-security-policy")).toContain("script-src 'sha256-");
    const html = res.text;
    expect(html).toContain("Blockworks &lt;&amp;&gt;");
    expect(html).toContain("Survival &lt;One&gt;");
    expect(html).not.toContain("<One>");
    // Nothing the team did not choose: no players, version, MOTD or latency.
    expect(html).not.toContain("1.21.1");
    expect(html).not.toContain("Welcome");
    expect(html).not.toContain("Players");
    expect(html).not.toContain("Latency");
    expect(html.match(/<li tabindex="0" class="/g)).toHaveLength(90);
    // Checked on a few days only: the figure says so rather than claim a month.
    expect(html).toMatch(/uptime since checks began \(\d days?\)/);
    expect(html).toContain("Incident history");
    expect(html).toContain("Survival &lt;One&gt; was down");
    // No maintenance windows: no such section at all.
    expect(html).not.toContain("Scheduled maintenance");

    const etag = res.headers.get("etag")!;
    expect(etag).toMatch(/^"/);
    const again = await fetch(`${server.url}/status/${s}`, { headers: { "if-none-match": etag } });
    expect(again.status).toBe(304);
    // Answered from memory ahead of the router, still with its own request id.
    expect(again.headers.get("x-request-id")).toBeTruthy();
    expect(await again.text()).toBe("");
  });

  test("the figures a page turns on are shown: players, latency, version, the MOTD's codes as classes with its text escaped", async () => {
    const f = await fixture();
    const s = slug("shown");
    const page = await createPage(f, { slug: s, title: "Shown", server_ids: [f.serverId], published: true });
    expect((await api(server, "GET", `/status/${s}`)).text).not.toContain("Welcome");
    await api(server, "PATCH", `/teams/${f.teamId}/status-pages/${page.page_id}`, {
      token: f.owner.token,
      body: { show: { players: true, version: true, motd: true, latency: true } },
    });
    const shown = (await api(server, "GET", `/status/${s}`)).text;
    expect(shown).toContain("1.21.1");
    expect(shown).toContain(
      '<span class="mc-ca">Welcome </span><span class="mc-ca mc-l">home </span><span class="mc-cf">&lt;b&gt;&amp;amp;</span>',
    );
    expect(shown).toMatch(/data-field="players">4 \/ 50</);
    expect(shown).toMatch(/data-field="latency">\d+ ms</);
  });

  test("a down server shows its current incident; badges and the widget say so, CORS open; the feed lists it", async () => {
    const f = await fixture();
    const s = slug("down");
    const page = await createPage(f, {
      slug: s,
      title: "Down test",
      server_ids: [f.serverId],
      show: { players: true },
      published: true,
    });
    await f.mc.close();
    expect(await server.services.monitoring.checkNow(f.serverId)).toMatchObject({ online: false });
    // The page was never read before the check: the first read is of the down server.
    const html = (await api(server, "GET", `/status/${s}`)).text;
    expect(html).toContain('class="state down"');
    expect(html).toMatch(/<p class="incident" data-field="incident">Down since /);
    expect(html).toContain("1 of 1 servers down");

    const badge = await fetch(`${server.url}/status/${s}/badges/${f.serverId}/status.svg`);
    expect(badge.status).toBe(200);
    expect(badge.headers.get("content-type")).toBe("image/svg+xml; charset=utf-8");
    expect(badge.headers.get("access-control-allow-origin")).toBe("*");
    const svg = await badge.text();
    expect(svg).toContain("Survival &lt;One&gt;: offline");
    expect((await fetch(`${server.url}/status/${s}/badges/${f.serverId}/players.svg`)).status).toBe(200);
    // The version is not shown on this page: no badge of it either.
    expect((await fetch(`${server.url}/status/${s}/badges/${f.serverId}/version.svg`)).status).toBe(404);
    expect((await fetch(`${server.url}/status/${s}/badges/${crypto.randomUUID()}/status.svg`)).status).toBe(404);
    const uptime = await (await fetch(`${server.url}/status/${s}/badges/${f.serverId}/uptime-24h.svg`)).text();
    expect(uptime).toMatch(/uptime 24h: \d+\.\d\d%/);

    const w = await fetch(`${server.url}/status-pages/${s}/widget`, { headers: { origin: "https://list.example" } });
    expect(w.status).toBe(200);
    expect(w.headers.get("access-control-allow-origin")).toBe("*");
    const body = await w.json();
    expect(body.servers).toHaveLength(1);
    expect(body.servers[0]).toMatchObject({ server_id: f.serverId, status: "down", players_online: null });
    expect(body.servers[0]).not.toHaveProperty("version");
    expect(body.servers[0]).not.toHaveProperty("motd");
    expect(body.servers[0].incident.started_at).toBeString();
    const w304 = await fetch(`${server.url}/status-pages/${s}/widget`, {
      headers: { "if-none-match": w.headers.get("etag")! },
    });
    expect(w304.status).toBe(304);
    expectError(await api(server, "GET", `/status-pages/${s}/widget?server_id=${crypto.randomUUID()}`), 404);

    const feed = await fetch(`${server.url}/status/${s}/feed.atom`);
    expect(feed.headers.get("content-type")).toBe("application/atom+xml; charset=utf-8");
    const atom = await feed.text();
    expect(atom).toContain('<feed xmlns="http://www.w3.org/2005/Atom">');
    expect(atom).toContain(`<id>urn:uuid:${page.page_id}</id>`);
    expect(atom).toContain("Survival &lt;One&gt; is down (ongoing)");
  });

  test("incidents the team posts, with their updates, and maintenance windows ahead or running are on the page and in the feed; another server's are not", async () => {
    const f = await fixture();
    const other = await api(server, "POST", "/server/servers", {
      token: f.owner.token,
      body: { team_id: f.teamId, name: "Hidden", host: "127.0.0.1", port: 9, kind: "single" },
    });
    expect(other.status).toBe(201);
    const s = slug("inc");
    await createPage(f, { slug: s, title: "Incidents", server_ids: [f.serverId], published: true });
    const team = { token: f.owner.token, headers: { "x-team-id": f.teamId } };
    const posted = await api(server, "POST", "/server/incidents", {
      ...team,
      body: {
        server_id: f.serverId,
        title: "Chunk loading slow",
        status: "investigating",
        message: "Looking into it.",
      },
    });
    expect(`${posted.status} ${posted.text}`).toStartWith("201");
    const update = await api(server, "POST", `/server/incidents/${posted.body.incident_id}/updates`, {
      ...team,
      body: { status: "identified", message: "A plugin chunk cache; patch coming." },
    });
    expect(update.status).toBe(201);
    await api(server, "POST", "/server/incidents", {
      ...team,
      body: { server_id: other.body.server_id, title: "Not for this page", status: "investigating", message: "x" },
    });
    const soon = Date.now() + 86_400_000;
    const window = await api(server, "POST", "/server/maintenance", {
      ...team,
      body: {
        server_id: f.serverId,
        title: "World backup",
        message: "The world is copied off site; the server restarts once.",
        starts_at: new Date(soon).toISOString(),
        ends_at: new Date(soon + 3_600_000).toISOString(),
      },
    });
    expect(`${window.status} ${window.text}`).toStartWith("201");
    // The page is read for the first time now: everything posted above is in it.
    const html = (await api(server, "GET", `/status/${s}`)).text;
    expect(html).toContain("World backup");
    expect(html).toContain("Chunk loading slow");
    expect(html).toContain("The world is copied off site; the server restarts once.");
    expect(html).toContain("A plugin chunk cache; patch coming.");
    expect(html).not.toContain("Not for this page");
    const atom = await (await fetch(`${server.url}/status/${s}/feed.atom`)).text();
    expect(atom).toContain("Chunk loading slow (ongoing)");
    expect(atom).toContain("World backup");
    expect(atom).toContain("The world is copied off site; the server restarts once.");
    // A run of a window is an entry with an id of its own that is a valid IRI.
    expect(atom).toContain(`<id>${server.url}/status/${s}#maintenance-${window.body.window_id}-${soon}</id>`);
    expect(atom).not.toContain("Not for this page");
  });

  test("a custom host name answers the page at /; other hosts do not; a deleted team's page is 404", async () => {
    const owner = await newUser(server, "host");
    const teamId = await newTeam(server, owner);
    const s = slug("host");
    const host = `${s}.example.test`;
    await createPage({ owner, teamId }, { slug: s, title: "Hosted", host_name: host, published: true });
    const onHost = await fetch(`${server.url}/`, { headers: { host: `${host.toUpperCase()}:8080` } });
    expect(onHost.status).toBe(200);
    const html = await onHost.text();
    expect(html).toContain("<h1>Hosted</h1>");
    expect(html).toContain('href="/feed.atom"');
    const feed = await fetch(`${server.url}/feed.atom`, { headers: { host } });
    expect(await feed.text()).toContain("<title>Hosted: incidents</title>");
    // Another host's / is the service as usual (the dashboard), never a page.
    const plain = await fetch(`${server.url}/`);
    expect(await plain.text()).not.toContain("<h1>Hosted</h1>");

    expect((await api(server, "GET", `/status/${s}`)).status).toBe(200);
    const gone = await api(server, "DELETE", `/teams/${teamId}`, { token: owner.token });
    expect(gone.status).toBe(200);
    expect((await api(server, "GET", `/status/${s}`)).status).toBe(404);
    expect(await (await fetch(`${server.url}/`, { headers: { host } })).text()).not.toContain("<h1>Hosted</h1>");
    expect((await api(server, "GET", "/status/no-such-page")).status).toBe(404);
  });
});
