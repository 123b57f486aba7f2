import { describe, expect, test } from "bun:test";
import { devIdp, sharedServer, startTestServer } from "./harness";
import { api } from "./helpers";
import { hiddenFields, newClient, start } from "./ms-auth-helpers";

const csp = (h: Headers) => h.get("content-security-policy") ?? "";

describe("browser-facing pages", () => {
  test("the sign-in page (development provider) cannot be framed and leaks no referrer", async () => {
    const server = await sharedServer();
    const c = await newClient(server);
    const page = await fetch((await start(server, c)).auth_url);
    expect(page.status).toBe(200);
    expect(csp(page.headers)).toContain("frame-ancestors 'none'");
    expect(csp(page.headers)).toMatch(/default-src 'none'|default-src 'self'/);
    expect(page.headers.get("referrer-policy")).toBe("no-referrer");
  });

  test("the consent page (callback): CSP with frame-ancestors 'none', no-referrer, no caching", async () => {
    const server = await sharedServer();
    const c = await newClient(server);
    const started = await start(server, c);
    const page = await fetch(started.auth_url);
    const form = new URLSearchParams({ ...hiddenFields(await page.text()), username: "Headers", outcome: "success" });
    const submitted = await fetch(started.auth_url.split("?")[0]!, { method: "POST", body: form, redirect: "manual" });
    const callback = await fetch(submitted.headers.get("location")!, { redirect: "manual" });
    expect(callback.status).toBe(200);
    expect(csp(callback.headers)).toContain("frame-ancestors 'none'");
    expect(csp(callback.headers)).toContain("default-src 'none'");
    expect(callback.headers.get("x-frame-options")).toBe("DENY");
    expect(callback.headers.get("referrer-policy")).toBe("no-referrer");
    expect(callback.headers.get("cache-control")).toBe("no-store");
    // Error pages of the flow carry the same headers.
    const bad = await fetch(`${server.url}/client/ms-auth/callback?state=nope`, { redirect: "manual" });
    expect(bad.status).toBe(400);
    expect(csp(bad.headers)).toContain("frame-ancestors 'none'");
  });

  test("the consent page allows images only when it shows the client's logo", async () => {
    const server = await sharedServer();
    const c = await newClient(server);
    const consent = async () => {
      const started = await start(server, c);
      const page = await fetch(started.auth_url);
      const form = new URLSearchParams({ ...hiddenFields(await page.text()), username: "Logo", outcome: "success" });
      const submitted = await fetch(started.auth_url.split("?")[0]!, {
        method: "POST",
        body: form,
        redirect: "manual",
      });
      const callback = await fetch(submitted.headers.get("location")!, { redirect: "manual" });
      expect(callback.status).toBe(200);
      return { policy: csp(callback.headers), html: await callback.text() };
    };
    const withLogo = await consent();
    expect(withLogo.policy).toContain("img-src https: data:");
    expect(withLogo.html).toContain('<img class="logo" src="https://cdn.example.com/logo.png"');
    const cleared = await api(server, "PATCH", `/client/apps/${c.clientId}`, {
      token: c.owner.token,
      body: { logo_url: null },
    });
    expect(cleared.status).toBe(200);
    const without = await consent();
    expect(without.policy).not.toContain("img-src");
    expect(without.policy).toContain("default-src 'none'");
    expect(without.html).not.toContain("<img");
    expect(without.html).toContain("Blocky Launcher");
  });

  test("a consent form over 8 KiB is refused with 413 (a page), declared or chunked, before anything is read", async () => {
    const server = await sharedServer();
    const big = `auth_request_id=${"a".repeat(9000)}`;
    const headers = { "content-type": "application/x-www-form-urlencoded" };
    const declared = await fetch(`${server.url}/client/ms-auth/authorize`, { method: "POST", headers, body: big });
    expect(declared.status).toBe(413);
    const chunked = await fetch(`${server.url}/client/ms-auth/authorize`, {
      method: "POST",
      headers,
      body: new ReadableStream({
        start(c) {
          for (let i = 0; i < 3; i++) c.enqueue(new TextEncoder().encode(big.slice(i * 3000, (i + 1) * 3000 + 1)));
          c.close();
        },
      }),
    });
    expect(chunked.status).toBe(413);
    expect(chunked.headers.get("content-type")).toContain("text/html");
  });

  test("the API reference page: CSP without inline scripts, frame-ancestors 'none'", async () => {
    const server = await sharedServer();
    const docs = await fetch(`${server.url}/docs`);
    expect(csp(docs.headers)).toContain("frame-ancestors 'none'");
    expect(csp(docs.headers)).toContain("script-src 'self'");
    expect(csp(docs.headers)).not.toContain("'unsafe-inline' 'unsafe-eval'");
    expect(await docs.text()).not.toMatch(/<script>(?!<\/script>)/);
  });

  test("outside loopback (an https public address) the sign-in cookie is Secure, HttpOnly, SameSite=Strict", async () => {
    const idp = await devIdp();
    const srv = await startTestServer({ DEV_IDP_URL: idp.url, PUBLIC_URL: "https://mc.example.test" });
    const c = await newClient(srv);
    const started = await start(srv, c);
    const page = await fetch(started.auth_url);
    const form = new URLSearchParams({ ...hiddenFields(await page.text()), username: "Secure", outcome: "success" });
    const submitted = await fetch(started.auth_url.split("?")[0]!, { method: "POST", body: form, redirect: "manual" });
    // The public address is the load balancer's; reach this instance directly.
    const location = new URL(submitted.headers.get("location")!);
    expect(location.origin).toBe("https://mc.example.test");
    const callback = await fetch(`${srv.url}${location.pathname}${location.search}`, { redirect: "manual" });
    expect(callback.status).toBe(200);
    const cookie = callback.headers.get("set-cookie")!;
    expect(cookie).toContain("HttpOnly");
    expect(cookie).toContain("SameSite=Strict");
    expect(cookie).toContain("Secure");
    expect(cookie).toContain("Path=/client/ms-auth");
  });
});
