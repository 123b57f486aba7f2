import { z } from "zod";
import { ZName, ZTimestamp, ZUuid } from "../lib/schemas";
import { checkRedirectUri } from "./redirect-uri";

const ZHttpUrl = z
  .string()
  .max(2048)
  .refine((v) => {
    try {
      const u = new URL(v);
      return (u.protocol === "https:" || u.protocol === "http:") && !u.username && !u.password;
    } catch {
      return false;
    }
  }, "must be an http(s) URL");

export const ZRedirectUri = z
  .string()
  .max(2048)
  .superRefine((v, ctx) => {
    const r = checkRedirectUri(v);
    if (!r.ok) ctx.addIssue({ code: "custom", message: `post_login_redirect_uri ${r.reason}` });
  });

export const ZClientApp = z.object({
  client_id: ZUuid,
  team_id: ZUuid,
  name: z.string(),
  title: z.string(),
  description: z.string(),
  logo_url: z.string().nullable(),
  modules: z.array(z.literal("ms_auth")).max(1),
  created_at: ZTimestamp,
  updated_at: ZTimestamp,
  secret_rotated_at: ZTimestamp,
});

export const ZClientRef = z.object({ client_id: ZUuid });

export const ZCreateClient = z.object({
  team_id: ZUuid,
  name: ZName,
  title: z.string().trim().min(1).max(100),
  description: z.string().trim().min(1).max(1000),
  logo_url: ZHttpUrl.optional(),
});

export const ZUpdateClient = ZClientRef.extend({
  name: ZName.optional(),
  title: z.string().trim().min(1).max(100).optional(),
  description: z.string().trim().min(1).max(1000).optional(),
  logo_url: ZHttpUrl.nullable().optional(),
});

export const ZCreatedClient = z.object({ app: ZClientApp, client_secret: z.string() });
export const ZListClients = z.object({ team_id: ZUuid });

export const ZMsAuthModule = z.object({
  module_key: z.literal("ms_auth"),
  post_login_redirect_uri: z.string(),
  created_at: ZTimestamp,
  updated_at: ZTimestamp,
});
export const ZEnableMsAuth = ZClientRef.extend({ post_login_redirect_uri: ZRedirectUri });
