import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { DEV_IDP_OUTCOMES } from "../src/identity/dev-provider/outcomes";
import { signInHtml, signInPage } from "../src/identity/dev-provider/page";
import { consentHtml, consentPage, type ConsentView, deviceHtml, devicePage } from "../src/ms-auth/pages";

/**
 * The login flow's two pages are answered from templates React rendered once (src/lib/page.tsx),
 * with each request's values escaped into them. Here each page is rendered both ways, with
 * values built to break markup (quotes, angle brackets, ampersands, entities, markers' look-alikes,
 * empty strings, non-ASCII), and the markup must be the same byte for byte.
 */

const RUNS = Number(process.env.PAGES_RUNS ?? 300);

/** Strings that stress HTML escaping, mixed with arbitrary ones. */
const hostile = fc.oneof(
  fc.string(),
  fc.string({ unit: "grapheme" }),
  fc.constantFrom(
    "",
    "<script>alert(1)</script>",
    `"><img src=x onerror=alert(1)>`,
    "' onmouseover='x",
    "&amp;&lt;&#x27;&quot;",
    "a & b < c > d \" e ' f",
    "mcphole0123456789abcdefx0x",
    "javascript:alert(1)",
    "\u0000\u0001\u2028\ud83d\ude00",
  ),
);
const httpUrl = fc.oneof(
  fc.webUrl(),
  hostile.map((s) => `https://logo.example/${s}`),
  fc.constantFrom('https://logo.example/a.png?x=1&y="2"', "HTTP://LOGO.EXAMPLE/'a'"),
);

const html = (res: Response) => res.text();

describe("consent page", () => {
  test("the template's markup is React's, with and without a logo or a redirect host, for any values", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          authRequestId: hostile,
          csrf: hostile,
          title: hostile,
          description: hostile,
          logoUrl: fc.oneof(fc.constant(null), fc.constant(""), httpUrl, hostile),
          playerName: hostile,
          redirectHost: fc.option(hostile),
          sessionDays: fc.option(fc.integer({ min: 1, max: 90 }), { nil: undefined }),
          revokeUrl: fc.option(fc.constant("https://service.example/me/apps"), { nil: undefined }),
        }),
        fc.option(fc.constantFrom("https://launcher.example", "mylauncher:")),
        async (r, origin) => {
          const v: ConsentView = {
            client: { title: r.title, description: r.description, logoUrl: r.logoUrl },
            redirectHost: r.redirectHost,
            playerName: r.playerName,
            action: "/client/ms-auth/authorize",
            fields: { auth_request_id: r.authRequestId, csrf_token: r.csrf },
            sessionDays: r.sessionDays,
            revokeUrl: r.revokeUrl,
          };
          const res = consentPage(v, origin);
          expect(await html(res)).toBe(consentHtml(v));
        },
      ),
      { numRuns: RUNS },
    );
  });

  test("it says who asks (title, redirect host), what is shared (name and UUID only) and how to revoke", async () => {
    const page = await html(
      consentPage(
        {
          client: { title: "Blocky", description: "d", logoUrl: null },
          redirectHost: "launcher.example.com",
          playerName: "Notch",
          action: "/client/ms-auth/authorize",
          fields: { a: "1" },
          sessionDays: 30,
        },
        null,
      ),
    );
    expect(page).toContain("Sign in to Blocky");
    expect(page).toContain('<span class="host">launcher.example.com</span>');
    expect(page).toContain("your Minecraft name (Notch)");
    expect(page).toContain("your Minecraft UUID");
    expect(page).toContain("Nothing else");
    expect(page).toContain("Sign out in Blocky to end it at any time. Unless you do, it ends by itself after 30 days.");
    const device = await html(
      consentPage(
        {
          client: { title: "Blocky", description: "d", logoUrl: null },
          redirectHost: null,
          playerName: "Notch",
          action: "/x",
          fields: {},
        },
        null,
      ),
    );
    expect(device).toContain("you go back to the device that showed you the code");
  });

  test("headers: images only with a logo; the redirect's origin beside 'self'", () => {
    const v: ConsentView = {
      client: { title: "T", description: "d", logoUrl: null },
      redirectHost: "launcher.example",
      playerName: "p",
      action: "/client/ms-auth/authorize",
      fields: { auth_request_id: "r", csrf_token: "c" },
    };
    const plain = consentPage(v, "https://launcher.example", { "set-cookie": "a=b" });
    expect(plain.headers.get("content-security-policy")).not.toContain("img-src");
    expect(plain.headers.get("content-security-policy")).toContain("form-action 'self' https://launcher.example");
    expect(plain.headers.get("set-cookie")).toBe("a=b");
    const logo = consentPage({ ...v, client: { ...v.client, logoUrl: "https://logo.example/a.png" } }, null);
    expect(logo.headers.get("content-security-policy")).toContain("img-src https: data:");
    expect(logo.headers.get("content-security-policy")).toContain("form-action 'self';");
  });
});

describe("device code page", () => {
  test("the template's markup is React's, with and without an error, for any values", async () => {
    await fc.assert(
      fc.asyncProperty(fc.record({ csrf: hostile, code: hostile, error: hostile }), async (v) => {
        expect(await html(devicePage(v, "/device"))).toBe(deviceHtml(v, "/device"));
      }),
      { numRuns: RUNS },
    );
  });
});

describe("development provider's sign-in page", () => {
  const outcomes = DEV_IDP_OUTCOMES.map((o) => o.value);

  test("the template's markup is React's, for every outcome, with and without an error, for any values", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          client_id: hostile,
          redirect_uri: httpUrl,
          state: hostile,
          code_challenge: hostile,
        }),
        fc.record(
          {
            username: hostile,
            outcome: fc.oneof(fc.constantFrom(...outcomes), hostile),
            error: hostile,
          },
          { requiredKeys: [] },
        ),
        async (p, opts) => {
          let origin: string;
          try {
            origin = new URL(p.redirect_uri).origin;
          } catch {
            return; // authorizeParams refuses such a request before any page
          }
          const params = { ...p, code_challenge_method: "S256" as const };
          const res = signInPage(params, opts);
          expect(res.status).toBe(opts.error ? 400 : 200);
          expect(await html(res)).toBe(
            signInHtml({
              ...params,
              origin,
              username: opts.username ?? "",
              outcome: opts.outcome ?? "success",
              error: opts.error ?? "",
            }),
          );
        },
      ),
      { numRuns: RUNS },
    );
  });

  test("the chosen outcome is the one selected", async () => {
    const p = {
      client_id: "c",
      redirect_uri: "http://127.0.0.1:9/cb",
      state: "s",
      code_challenge: "x".repeat(43),
      code_challenge_method: "S256" as const,
    };
    const page = await html(signInPage(p, { outcome: "flaky", username: "Steve" }));
    expect(page).toContain('<option value="flaky" selected="">');
    expect(page.match(/selected=""/g)).toHaveLength(1);
    expect(page).toContain('value="Steve"');
    expect(await html(signInPage(p))).toContain('<option value="success" selected="">');
  });
});
