import { z } from "zod";
import { checkRedirectUri } from "../clients/redirect-uri";
import { ZTimestamp, ZUuid } from "../lib/schemas";

const ZOidcRedirectUri = z
  .string()
  .max(2048)
  .superRefine((v, ctx) => {
    const r = checkRedirectUri(v);
    if (!r.ok) ctx.addIssue({ code: "custom", message: `redirect_uri ${r.reason}` });
  });

export const ZIdTokenAlg = z.enum(["RS256", "EdDSA"]);

export const ZEnableOidc = z.object({
  client_id: ZUuid,
  redirect_uris: z.array(ZOidcRedirectUri).min(1).max(10).meta({
    description:
      "Where the authorization endpoint may send the player back, compared exactly: https URLs, http on loopback, or a private-use scheme (com.example.app:/cb).",
  }),
  public: z.boolean().optional().meta({
    description:
      "A public client (a single-page or native app) has no secret at the token endpoint and must use PKCE (S256). Default false: a confidential client authenticating with the client app's secret (client_secret_basic or client_secret_post).",
  }),
  id_token_signed_response_alg: ZIdTokenAlg.optional().meta({
    description: "How ID tokens for this client are signed: RS256 (default) or EdDSA (Ed25519).",
  }),
});

export const ZOidcSettings = z
  .object({
    redirect_uris: z.array(z.string()).max(10),
    public: z.boolean(),
    id_token_signed_response_alg: ZIdTokenAlg,
    created_at: ZTimestamp,
    updated_at: ZTimestamp,
  })
  .meta({ id: "OidcSettings", description: "A client app's OpenID Connect settings" });
