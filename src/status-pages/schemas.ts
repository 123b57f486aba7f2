import { z } from "zod";
import { ZName, ZTimestamp, ZUuid } from "../lib/schemas";
import { ZTeamRef } from "../teams/schemas";

/** How many status pages a team may keep, and how many servers and networks one page may name. */
export const STATUS_PAGE_LIMITS = { perTeam: 20, servers: 100, networks: 20 } as const;

export const ZSlug = z
  .string()
  .trim()
  .toLowerCase()
  .max(63)
  .regex(/^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/, "1 to 63 letters, digits and inner hyphens")
  .meta({
    description: "The page's address: `/status/<slug>`; letters, digits and inner hyphens",
    example: "blockworks",
  });

/** A DNS name of at least two labels, no port, no trailing dot; stored in lower case. */
export const ZHostName = z
  .string()
  .trim()
  .toLowerCase()
  .max(253)
  .regex(
    /^(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z](?:[a-z0-9-]{0,61}[a-z0-9])?$/,
    "a host name such as status.example.com (no scheme, port or path)",
  )
  .meta({
    description:
      "A host name of your own (point it at this service); a request whose `Host` is this name gets the page at `/`",
    example: "status.example.com",
  });

export const ZShow = z
  .object({
    players: z.boolean().default(false).meta({ description: "Players online (and the most the server allows)" }),
    version: z.boolean().default(false).meta({ description: "The version the server reports" }),
    motd: z.boolean().default(false).meta({ description: "The MOTD, with its colours" }),
    latency: z.boolean().default(false).meta({ description: "The latency of the last ping" }),
  })
  .meta({ description: "What each server shows besides its state, uptime and incidents; all off unless turned on" });

export const ZTheme = z.enum(["auto", "light", "dark"]).meta({ description: "`auto` follows the reader's system" });
export const ZAccent = z
  .string()
  .trim()
  .toLowerCase()
  .max(7)
  .regex(/^#[0-9a-f]{6}$/, "a colour as #rrggbb")
  .meta({ example: "#2f6fde" });
export const ZLogoUrl = z
  .url({ protocol: /^https$/ })
  .max(2000)
  .meta({ description: "An https URL of an image shown beside the title", example: "https://example.com/logo.png" });

const fields = {
  title: ZName,
  description: z.string().trim().max(500),
  host_name: ZHostName.nullable(),
  server_ids: z.array(ZUuid).max(STATUS_PAGE_LIMITS.servers),
  network_names: z.array(z.string().trim().min(1).max(64)).max(STATUS_PAGE_LIMITS.networks),
  show: ZShow,
  logo_url: ZLogoUrl.nullable(),
  accent_color: ZAccent,
  theme: ZTheme,
};

export const ZCreateStatusPage = ZTeamRef.extend({
  slug: ZSlug,
  title: fields.title,
  description: fields.description.default(""),
  host_name: fields.host_name.default(null),
  server_ids: fields.server_ids.default([]),
  network_names: fields.network_names.default([]),
  show: ZShow.default({ players: false, version: false, motd: false, latency: false }),
  logo_url: fields.logo_url.default(null),
  accent_color: fields.accent_color.default("#2f6fde"),
  theme: fields.theme.default("auto"),
  published: z.boolean().default(false).meta({ description: "Whether the page is public now" }),
});

export const ZStatusPageRef = ZTeamRef.extend({ page_id: ZUuid });

export const ZUpdateStatusPage = ZStatusPageRef.extend({
  slug: ZSlug.optional(),
  title: fields.title.optional(),
  description: fields.description.optional(),
  host_name: fields.host_name.optional(),
  server_ids: fields.server_ids.optional(),
  network_names: fields.network_names.optional(),
  show: ZShow.partial().optional(),
  logo_url: fields.logo_url.optional(),
  accent_color: fields.accent_color.optional(),
  theme: fields.theme.optional(),
});

export const ZStatusPage = z.object({
  page_id: ZUuid,
  team_id: ZUuid,
  slug: z.string().max(63),
  title: z.string().max(100),
  description: z.string().max(500),
  host_name: z.string().max(253).nullable(),
  published: z.boolean(),
  server_ids: z.array(ZUuid).max(STATUS_PAGE_LIMITS.servers),
  network_names: z.array(z.string().max(64)).max(STATUS_PAGE_LIMITS.networks),
  show: z.object({ players: z.boolean(), version: z.boolean(), motd: z.boolean(), latency: z.boolean() }),
  logo_url: z.string().max(2000).nullable(),
  accent_color: z.string().max(7),
  theme: ZTheme,
  url: z.string().max(2100).meta({ description: "Where the public reads the page (PUBLIC_URL/status/<slug>)" }),
  created_at: ZTimestamp,
  updated_at: ZTimestamp,
});

export const ZStatusPageList = z.object({ pages: z.array(ZStatusPage).max(STATUS_PAGE_LIMITS.perTeam) });

export const ZWidgetQuery = z.object({
  slug: ZSlug,
  server_id: ZUuid.optional().meta({ description: "Only this server of the page" }),
});

const ZUptime = z.number().min(0).max(1).nullable();

export const ZWidgetServer = z.object({
  server_id: ZUuid,
  name: z.string().max(100),
  status: z.enum(["up", "down", "unknown"]).meta({ description: "`unknown`: not checked yet" }),
  players_online: z.number().int().nullable().optional().meta({ description: "Only when the page shows players" }),
  players_max: z.number().int().nullable().optional().meta({ description: "Only when the page shows players" }),
  version: z.string().max(200).nullable().optional().meta({ description: "Only when the page shows the version" }),
  motd: z
    .string()
    .max(500)
    .nullable()
    .optional()
    .meta({ description: "Only when the page shows the MOTD; § codes kept" }),
  latency_ms: z.number().int().nullable().optional().meta({ description: "Only when the page shows latency" }),
  uptime: z
    .object({ "24h": ZUptime, "7d": ZUptime, "30d": ZUptime })
    .meta({ description: "The share of pings that found the server up over each window; null without pings" }),
  checked_at: ZTimestamp.nullable(),
  incident: z
    .object({ started_at: ZTimestamp, duration_seconds: z.number().int() })
    .nullable()
    .meta({ description: "The outage going on now, if any" }),
  badges: z.record(z.string().max(20), z.string().max(2200)).meta({
    description:
      "The URL of each SVG badge of this server: status, players, uptime-24h, uptime-7d, uptime-30d, version",
  }),
});

export const ZWidget = z.object({
  slug: z.string().max(63),
  title: z.string().max(100),
  url: z.string().max(2100),
  generated_at: ZTimestamp,
  servers: z.array(ZWidgetServer).max(STATUS_PAGE_LIMITS.servers * 2),
});
