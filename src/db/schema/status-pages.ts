import { sql } from "drizzle-orm";
import { boolean, index, jsonb, pgTable, text, timestamp, uniqueIndex, uuid } from "drizzle-orm/pg-core";
import { teams } from "./teams";

const tz = (name: string) => timestamp(name, { withTimezone: true });

/** What a status page shows of each server besides its state, uptime and incidents. */
export interface StatusPageShow {
  players: boolean;
  version: boolean;
  motd: boolean;
  latency: boolean;
}

/**
 * A team's public status page (docs/status-pages.md): served at `/status/<slug>`, and at `/` of
 * `host_name` when a request's Host names it, only while `published`. It shows the servers it
 * names and every server of the networks it names, and of each only what `show` turns on.
 */
export const statusPages = pgTable(
  "status_pages",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    teamId: uuid("team_id")
      .notNull()
      .references(() => teams.id, { onDelete: "cascade" }),
    slug: text("slug").notNull(),
    title: text("title").notNull(),
    description: text("description").notNull().default(""),
    /** A custom host name (lower case, no port) whose `/` is this page. */
    hostName: text("host_name"),
    published: boolean("published").notNull().default(false),
    serverIds: uuid("server_ids").array().notNull().default(sql`'{}'::uuid[]`),
    networkNames: text("network_names").array().notNull().default(sql`'{}'::text[]`),
    show: jsonb("show").$type<StatusPageShow>().notNull(),
    logoUrl: text("logo_url"),
    /** `#rrggbb`. */
    accentColor: text("accent_color").notNull().default("#2f6fde"),
    /** `auto` follows the reader's system setting. */
    theme: text("theme").notNull().default("auto"),
    createdAt: tz("created_at").notNull().defaultNow(),
    updatedAt: tz("updated_at").notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex("status_pages_slug_uq").on(t.slug),
    uniqueIndex("status_pages_host_uq").on(t.hostName),
    index("status_pages_team_idx").on(t.teamId),
  ],
);
