/**
 * The peer for bench/oidc-peer.ts: the `oidc-provider` package (panva/node-oidc-provider) as an
 * OpenID Provider with its default in-memory adapter, on Node 22 (which it requires):
 *
 *   PORT=4000 npx -y node@22 bench/peer/oidc-provider.mjs
 *
 * One confidential client (client_secret_basic, PKCE S256 required, RS256 ID tokens) and a
 * minimal interaction: the login prompt signs the player in as the `login_hint` (the name the
 * bench draws per flow) and the consent prompt grants `openid profile`, each answering with the
 * package's own redirect back to the authorization endpoint, as its example's forms do after a
 * submission. A user agent with cookies follows 5 redirects to the code, then the client posts to
 * /token: the same 6 HTTP requests as this service's flows.
 */
import { generateKeyPairSync } from "node:crypto";
import { createServer } from "node:http";
import Provider from "oidc-provider";

const port = Number(process.env.PORT ?? 4000);
const issuer = `http://127.0.0.1:${port}`;
const rsa = generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey.export({ format: "jwk" });

const provider = new Provider(issuer, {
  clients: [
    {
      client_id: "bench",
      client_secret: "bench-secret-bench-secret-bench-secret",
      redirect_uris: ["http://127.0.0.1:9/cb"],
      grant_types: ["authorization_code"],
      response_types: ["code"],
      token_endpoint_auth_method: "client_secret_basic",
      id_token_signed_response_alg: "RS256",
    },
  ],
  jwks: { keys: [{ ...rsa, use: "sig", alg: "RS256", kid: "bench-rs256" }] },
  cookies: { keys: ["bench-cookie-key-bench-cookie-key"] },
  pkce: { required: () => true },
  ttl: { AuthorizationCode: 60, Interaction: 3600, Session: 3600, Grant: 3600, AccessToken: 3600, IdToken: 600 },
  claims: { openid: ["sub"], profile: ["preferred_username"] },
  features: { devInteractions: { enabled: false } },
  interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
  async findAccount(_ctx, sub) {
    return { accountId: sub, claims: async () => ({ sub, preferred_username: sub }) };
  },
});
provider.on("server_error", (_ctx, err) => console.error("server_error", err));

const callback = provider.callback();
const server = createServer(async (req, res) => {
  try {
    if (req.url === "/health") {
      res.writeHead(200, { "content-type": "application/json" }).end('{"status":"ok"}');
      return;
    }
    if (req.url?.startsWith("/interaction/")) {
      const details = await provider.interactionDetails(req, res);
      if (details.prompt.name === "login") {
        const accountId = String(details.params.login_hint ?? "player");
        await provider.interactionFinished(req, res, { login: { accountId } }, { mergeWithLastSubmission: false });
        return;
      }
      const grant = details.grantId
        ? await provider.Grant.find(details.grantId)
        : new provider.Grant({ accountId: details.session.accountId, clientId: details.params.client_id });
      grant.addOIDCScope("openid profile");
      const grantId = await grant.save();
      await provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
      return;
    }
    callback(req, res);
  } catch (err) {
    console.error(err);
    if (!res.headersSent) res.writeHead(500).end(String(err));
  }
});
server.listen(port, "127.0.0.1");
process.once("SIGTERM", () => server.close(() => process.exit(0)));
