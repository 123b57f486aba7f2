import fc from "fast-check";
import { BADGE_KINDS } from "../../src/status-pages/badge";
import { pctEncode, type Operation } from "./requests";
import type { Doc } from "./schema";

/**
 * What the fuzzer sends to the routes that are not tRPC procedures and that /openapi.json does
 * not describe one by one: the public status pages (and their Host-header twins), the OAuth
 * endpoints' POST forms, client authentication at the token endpoint, and methods no route takes.
 */

/** Operations served but not in the document: userinfo by POST (RFC 6750 form body) and authorize by POST. */
export function undocumentedOperations(doc: Doc): Operation[] {
  const userinfo = doc.paths["/oidc/userinfo"].get;
  const authorize = doc.paths["/oidc/authorize"].get;
  const form = (schema: object) => ({ required: true, content: { "application/x-www-form-urlencoded": { schema } } });
  return [
    {
      key: "POST /oidc/userinfo",
      method: "POST",
      path: "/oidc/userinfo",
      spec: {
        ...userinfo,
        // A form body past the service's limit is its usual 413.
        responses: { ...userinfo.responses, "413": { description: "Payload too large" } },
        requestBody: form({ type: "object", properties: { access_token: { type: "string", maxLength: 200 } } }),
      },
      success: "200",
      html: false,
      bearer: true,
    },
    {
      key: "POST /oidc/authorize",
      method: "POST",
      path: "/oidc/authorize",
      spec: {
        ...authorize,
        parameters: [],
        requestBody: form({
          type: "object",
          required: authorize.parameters.filter((p: any) => p.required).map((p: any) => p.name),
          properties: Object.fromEntries(authorize.parameters.map((p: any) => [p.name, p.schema])),
        }),
      },
      success: "200",
      html: true,
      bearer: false,
    },
  ];
}

/** Every route outside the procedures, with the methods it answers; any other method must be a clean 404/405. */
export const OUTSIDE_ROUTES: Record<string, string[]> = {
  "/.well-known/openid-configuration": ["GET"],
  "/oidc/jwks.json": ["GET"],
  "/oidc/authorize": ["GET", "POST"],
  "/oidc/token": ["POST"],
  "/oidc/userinfo": ["GET", "POST"],
  "/device": ["GET", "POST"],
  "/account/apps": ["GET"],
  "/account/apps/sign-in": ["GET"],
  "/account/apps/callback": ["GET"],
  "/account/apps/revoke": ["POST"],
  "/account/apps/sign-out": ["POST"],
  "/status/{slug}": ["GET"],
  "/status/{slug}/feed.atom": ["GET"],
  "/status/{slug}/badges/{server_id}/status.svg": ["GET"],
};

export interface StatusFixture {
  slug: string;
  host: string;
  serverId: string;
  /** a page of the same team that is not published: nothing of it may show */
  hiddenSlug: string;
  hiddenTitle: string;
}

export interface StatusRequest {
  label: string;
  route: "page" | "feed" | "badge" | "host-root" | "host-feed" | "host-badge";
  method: "GET" | "HEAD";
  path: string;
  headers: Record<string, string>;
  /** the path's slug, as sent (before any decoding) */
  slug: string;
  /** whether the request names the published page, by slug or by its own host */
  published: boolean;
}

const NASTY_SEGMENTS = [
  "%00",
  "%",
  "%ZZ",
  "%E0%A4%A",
  "%C0%AF",
  "%ED%A0%80",
  "%2F",
  "a%2F..%2Fb",
  "a%20b",
  "%F0%9F%A7%B1",
  "%EF%BB%BF",
  "-",
  "a-",
  "x".repeat(64),
  "x".repeat(4000),
  "00000000-0000-0000-0000-000000000000",
  "%3Cscript%3E",
  "'%20OR%201%3D1",
];

/** A path segment; never a dot segment, which the URL resolves away (`/status/..` is `/`), nor empty. */
const segment = fc
  .oneof(
    fc.constantFrom(...NASTY_SEGMENTS),
    fc.string({ unit: "binary", maxLength: 40 }).map(pctEncode),
    fc.stringMatching(/^[A-Za-z0-9-]{1,70}$/),
  )
  .filter((s) => s !== "" && !/^(?:\.|%2e){1,2}$/i.test(s));

const headerValue = fc.oneof(
  fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength: 80 }),
  fc.string({ unit: fc.integer({ min: 0xa0, max: 0xff }).map((c) => String.fromCharCode(c)), maxLength: 20 }),
  fc.constantFrom("*", '"x"', 'W/"x"', "", ",", "x".repeat(3000)),
);

export function statusRequest(f: StatusFixture): fc.Arbitrary<StatusRequest> {
  const slug = fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(f.slug, f.slug.toUpperCase()) },
    { weight: 1, arbitrary: fc.constantFrom(f.hiddenSlug, "no-such-page") },
    { weight: 3, arbitrary: segment },
  );
  const serverId = fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(f.serverId, f.serverId.toUpperCase()) },
    { weight: 1, arbitrary: fc.uuid() },
    { weight: 2, arbitrary: segment },
  );
  const file = fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(...BADGE_KINDS.map((k) => `${k}.svg`)) },
    {
      weight: 2,
      arbitrary: fc.oneof(
        fc.constantFrom(
          "status",
          "status.SVG",
          "status.svg.svg",
          "..%2Fstatus.svg",
          ".svg",
          "%00.svg",
          "status.svg%00",
        ),
        segment,
      ),
    },
  );
  const host = fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(f.host, `${f.host.toUpperCase()}:8080`, `${f.host}:1`) },
    {
      weight: 2,
      arbitrary: fc.constantFrom(
        "localhost",
        "[::1]:80",
        "[",
        "]",
        ":",
        ":80",
        "[::1",
        `${f.host}.`,
        `x.${f.host}`,
        "a".repeat(300),
        "%00",
        "127.0.0.1:99999",
      ),
    },
    { weight: 1, arbitrary: headerValue },
  );
  const extra = fc.record(
    {
      "if-none-match": headerValue,
      "accept-encoding": fc.oneof(fc.constantFrom("gzip", "br, gzip;q=0", "*", "identity;q=0"), headerValue),
      accept: fc.oneof(fc.constantFrom("text/html", "application/json", "image/svg+xml"), headerValue),
    },
    { requiredKeys: [] },
  );
  const query = fc.oneof(
    fc.constant(""),
    fc.tuple(segment, segment).map(([k, v]) => `?${k}=${v}`),
    fc.constantFrom("?", "?%", "?a=%ZZ", "?slug=other", "?theme=dark&__proto__=1"),
  );
  return fc
    .record({
      route: fc.constantFrom("page", "feed", "badge", "host-root", "host-feed", "host-badge") as fc.Arbitrary<
        StatusRequest["route"]
      >,
      method: fc.constantFrom("GET", "GET", "HEAD") as fc.Arbitrary<"GET" | "HEAD">,
      slug,
      serverId,
      file,
      host,
      extra,
      query,
    })
    .map((r) => {
      const onHost = r.route.startsWith("host-");
      const path =
        r.route === "page"
          ? `/status/${r.slug}`
          : r.route === "feed"
            ? `/status/${r.slug}/feed.atom`
            : r.route === "badge"
              ? `/status/${r.slug}/badges/${r.serverId}/${r.file}`
              : r.route === "host-root"
                ? "/"
                : r.route === "host-feed"
                  ? "/feed.atom"
                  : `/badges/${r.serverId}/${r.file}`;
      const hostName = r.host.replace(/:\d*$/, "").toLowerCase();
      return {
        label: `${r.method} ${r.route}`,
        route: r.route,
        method: r.method,
        path: `${path}${r.query}`,
        headers: { ...r.extra, ...(onHost ? { host: r.host } : {}) },
        slug: onHost ? "" : r.slug,
        published: onHost ? hostName === f.host : r.slug.toLowerCase() === f.slug,
      };
    });
}

/** Client authentication at the token endpoint as a broken or hostile client sends it. */
export function clientAuthNoise(
  client: { clientId: string; secret: string },
  other: { clientId: string; secret: string },
) {
  const b64 = (s: string | Uint8Array) => Buffer.from(s).toString("base64");
  const enc = encodeURIComponent;
  const basic = fc.oneof(
    fc.constantFrom(
      "Basic",
      "Basic ",
      "Basic ====",
      "Basic !!!!",
      "Basic a",
      "Basic YQ",
      `Basic ${b64(client.clientId)}`,
      `Basic ${b64(`${client.clientId}:`)}`,
      `Basic ${b64(`:${client.secret}`)}`,
      `Basic ${b64(`${enc(client.clientId)}:wrong-secret`)}`,
      `Basic ${b64(`${enc(client.clientId)}:${enc(other.secret)}`)}`,
      `Basic ${b64(`${enc(other.clientId)}:${enc(other.secret)}`)}`,
      `Basic ${b64(`${crypto.randomUUID()}:${enc(client.secret)}`)}`,
      `Basic ${b64(`${enc(client.clientId)}:%ZZ`)}`,
      `Basic ${b64(`%E0%A4%A:${enc(client.secret)}`)}`,
      `Basic ${b64(`${enc(client.clientId)}:${enc(client.secret)}%00`)}`,
      `Basic ${b64(new Uint8Array([0xff, 0xfe, 0x3a, 0xc3, 0x28]))}`,
      `Basic ${b64(`${client.clientId}:${"x".repeat(5000)}`)}`,
      `basic ${b64(`${enc(client.clientId)}:wrong`)}`,
      `Basic  ${b64(`${enc(client.clientId)}:wrong`)}`,
      `Basic ${b64(`${enc(client.clientId)}:wrong`)} extra`,
      `Bearer ${client.secret}`,
      `Digest username="${client.clientId}"`,
      "Basic dXNlcjpwYXNz",
    ),
    fc.base64String({ maxLength: 200 }).map((s) => `Basic ${s}`),
    fc
      .tuple(fc.string({ unit: "binary", maxLength: 40 }), fc.string({ unit: "binary", maxLength: 40 }))
      .map(([id, secret]) => `Basic ${b64(`${id}:${secret}`)}`),
  );
  const body = fc.record(
    {
      client_id: fc.oneof(
        fc.constantFrom(client.clientId, other.clientId, crypto.randomUUID(), "", "%00", "x"),
        segment,
      ),
      client_secret: fc.oneof(fc.constantFrom("wrong", other.secret, "", "x".repeat(300)), segment),
    },
    { requiredKeys: [] },
  );
  return fc.record({ authorization: fc.option(basic, { nil: undefined }), creds: body });
}
