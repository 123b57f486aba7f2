import { createHash } from "node:crypto";
import { gzipSync } from "node:zlib";
import { and, eq, isNotNull } from "drizzle-orm";
import type { Db } from "../db/client";
import { statusPages } from "../db/schema";
import type { Logger } from "../lib/log";
import { badgeFor, type BadgeKind, badgeSvg } from "./badge";
import { atomFeed } from "./feed";
import { type PublicView, readPublicView } from "./public";
import { renderPage, stateOf } from "./render";
import type { StatusPageRow } from "./service";

/** A body served as is, with its entity tag, and gzipped once for clients that take it. */
export interface Artefact {
  body: string;
  etag: string;
  gzip: Uint8Array | null;
  /** The page's own content security policy (HTML only). */
  csp?: string;
}

const etagOf = (body: string) => `"${createHash("sha256").update(body).digest("base64url").slice(0, 27)}"`;
function artefact(body: string, csp?: string): Artefact {
  // Small bodies gain nothing from compression.
  return { body, etag: etagOf(body), gzip: body.length > 1400 ? gzipSync(body) : null, csp };
}

/**
 * One published page as read at one moment, and what is made of it on demand: the HTML per
 * address it is reached by, the feed, the widget JSON and each badge, each made once per version.
 */
export class PageVersion {
  private readonly made = new Map<string, Artefact | null>();
  readonly widgetCache = new Map<string, ReturnType<typeof widgetOf>>();

  constructor(
    readonly view: PublicView,
    /** A digest of everything the page shows: an unchanged digest keeps the version (and its ETags). */
    readonly digest: string,
    private readonly publicUrl: string,
  ) {}

  private memo(key: string, make: () => Artefact | null): Artefact | null {
    let a = this.made.get(key);
    if (a === undefined) {
      a = make();
      this.made.set(key, a);
    }
    return a;
  }

  /** The HTML, its links starting at `base` (`/status/<slug>`, or `` on the page's own host). */
  html(base: string): Artefact {
    return this.memo(`html:${base}`, () => {
      const { html, csp } = renderPage(this.view, { base, live: `/status-pages/${this.view.page.slug}/widget` });
      return artefact(html, csp);
    })!;
  }

  atom(): Artefact {
    return this.memo("atom", () => artefact(atomFeed(this.view, `${this.publicUrl}/status/${this.view.page.slug}`)))!;
  }

  badge(serverId: string, kind: BadgeKind): Artefact | null {
    return this.memo(`badge:${serverId}:${kind}`, () => {
      const s = this.view.servers.find((x) => x.id === serverId);
      const b = s && badgeFor(kind, s, this.view.page.show);
      return b ? artefact(badgeSvg(b.label, b.message, b.colour)) : null;
    });
  }

  widget(serverId?: string) {
    const key = serverId ?? "";
    let w = this.widgetCache.get(key);
    if (!w) {
      w = widgetOf(this.view, this.publicUrl, serverId);
      this.widgetCache.set(key, w);
    }
    return w;
  }

  widgetEtag(serverId?: string) {
    return this.memo(`widget:${serverId ?? ""}`, () => artefact(JSON.stringify(this.widget(serverId))))!.etag;
  }
}

/** The widget JSON: the same figures as the badges, only those the page shows. */
function widgetOf(view: PublicView, publicUrl: string, serverId?: string) {
  const { page } = view;
  const show = page.show;
  const base = `${publicUrl}/status/${page.slug}`;
  return {
    slug: page.slug,
    title: page.title,
    url: base,
    generated_at: view.generatedAt,
    servers: view.servers
      .filter((s) => !serverId || s.id === serverId)
      .map((s) => ({
        server_id: s.id,
        name: s.name,
        status: stateOf(s),
        ...(show.players && { players_online: s.playersOnline, players_max: s.playersMax }),
        ...(show.version && { version: s.version }),
        ...(show.motd && { motd: s.motd }),
        ...(show.latency && { latency_ms: s.latencyMs }),
        uptime: s.uptime,
        checked_at: s.checkedAt,
        incident: s.incident
          ? { started_at: s.incident.startedAt, duration_seconds: s.incident.durationSeconds }
          : null,
        badges: Object.fromEntries(
          (["status", "uptime-24h", "uptime-7d", "uptime-30d"] as string[])
            .concat(show.players ? ["players"] : [], show.version ? ["version"] : [])
            .map((k) => [k, `${base}/badges/${s.id}/${k}.svg`]),
        ),
      })),
  };
}

interface Slot {
  version: PageVersion | null;
  at: number;
  refreshing?: Promise<PageVersion | null>;
  /** Moved on by every change of the page's settings, so a read begun before it is not kept. */
  generation: number;
}

/** How long a version is served before it is read again; the pages' max-age. */
export const PAGE_TTL_MS = 10_000;
/** Past this a stale version is not served while the next is read: the reader waits for it. */
const MAX_STALE_MS = 60_000;
const MAX_SLOTS = 2000;

/**
 * Published pages as the public reads them, cached per page: a request within PAGE_TTL_MS of the
 * last read is answered from memory (a Map lookup and an If-None-Match comparison); after it, the
 * version in hand is still answered while the next is read once in the background. A change of a
 * page's settings on this instance drops its version at once; other instances notice within
 * PAGE_TTL_MS. Unknown and unpublished slugs are remembered as such for as long.
 */
export class PublishedPages {
  private readonly slots = new Map<string, Slot>();
  private hosts = new Map<string, string>();
  private hostsAt = -Infinity;
  private hostsLoading: Promise<void> | null = null;

  constructor(
    private readonly db: Db,
    private readonly log: Logger,
    private readonly publicUrl: string,
    private readonly now: () => number = Date.now,
  ) {}

  /** Settings of `page` changed (or it was removed): its cached version and the host list go. */
  changed(page: Pick<StatusPageRow, "slug" | "hostName">) {
    const slot = this.slots.get(page.slug);
    if (slot) {
      slot.generation++;
      slot.version = null;
      slot.at = -Infinity;
    }
    this.hostsAt = -Infinity;
  }

  /** A team was deleted: every cached version of its pages goes. */
  teamDeleted(teamId: string) {
    for (const slot of this.slots.values())
      if (slot.version?.view.page.teamId === teamId) {
        slot.generation++;
        slot.version = null;
        slot.at = -Infinity;
      }
    this.hostsAt = -Infinity;
  }

  /** The current version of a published page, or null when there is none at this slug. */
  async get(slug: string): Promise<PageVersion | null> {
    const now = this.now();
    const slot = this.slots.get(slug);
    if (slot && now - slot.at < PAGE_TTL_MS) return slot.version;
    if (slot && now - slot.at < MAX_STALE_MS) {
      this.refresh(slug).catch(() => {});
      return slot.version;
    }
    return this.refresh(slug);
  }

  /**
   * The version in hand for a slug, without waiting: one that is fresh, or stale but servable
   * (the next is then read in the background). Undefined when there is none to answer from memory
   * (never read, unpublished, too old): the caller takes the ordinary path.
   */
  peek(slug: string): PageVersion | undefined {
    const slot = this.slots.get(slug);
    if (!slot?.version) return undefined;
    const age = this.now() - slot.at;
    if (age < PAGE_TTL_MS) return slot.version;
    if (age < MAX_STALE_MS) {
      this.refresh(slug).catch(() => {});
      return slot.version;
    }
    return undefined;
  }

  private refresh(slug: string): Promise<PageVersion | null> {
    let slot = this.slots.get(slug);
    if (!slot) {
      if (this.slots.size >= MAX_SLOTS) this.slots.delete(this.slots.keys().next().value!);
      slot = { version: null, at: -Infinity, generation: 0 };
      this.slots.set(slug, slot);
    }
    if (slot.refreshing) return slot.refreshing;
    const s = slot;
    const generation = s.generation;
    s.refreshing = this.read(slug, s.version)
      .then((version) => {
        if (s.generation === generation) {
          s.version = version;
          s.at = this.now();
        }
        return version;
      })
      .catch((err) => {
        this.log.error("reading a status page failed", { slug, err });
        throw err;
      })
      .finally(() => {
        s.refreshing = undefined;
      });
    return s.refreshing;
  }

  private async read(slug: string, previous: PageVersion | null): Promise<PageVersion | null> {
    const [page] = await this.db
      .select()
      .from(statusPages)
      .where(and(eq(statusPages.slug, slug), eq(statusPages.published, true)))
      .limit(1);
    if (!page) return null;
    const view = await readPublicView(this.db, page);
    const { generatedAt, ...content } = view;
    const digest = createHash("sha256")
      .update(JSON.stringify({ ...content, page: { ...page, createdAt: 0, updatedAt: page.updatedAt.getTime() } }))
      .digest("base64url");
    // Nothing shown changed: the version in hand stays, with its bodies and entity tags.
    if (previous && previous.digest === digest) return previous;
    return new PageVersion(view, digest, this.publicUrl);
  }

  /**
   * The slug of the published page whose host name is `host` (lower case, no port). The list of
   * host names is read at most once per PAGE_TTL_MS, in the background once it has been read.
   */
  async slugForHost(host: string): Promise<string | undefined> {
    const stale = this.now() - this.hostsAt >= PAGE_TTL_MS;
    if (stale) {
      this.hostsLoading ??= this.loadHosts().finally(() => {
        this.hostsLoading = null;
      });
      if (this.hostsAt === -Infinity) await this.hostsLoading;
    }
    return this.hosts.get(host);
  }

  private async loadHosts() {
    const at = this.now();
    try {
      const rows = await this.db
        .select({ host: statusPages.hostName, slug: statusPages.slug })
        .from(statusPages)
        .where(and(eq(statusPages.published, true), isNotNull(statusPages.hostName)))
        .limit(10_000);
      this.hosts = new Map(rows.map((r) => [r.host!, r.slug]));
      this.hostsAt = at;
    } catch (err) {
      this.log.error("reading status page host names failed", { err });
      this.hostsAt = at - PAGE_TTL_MS / 2;
    }
  }
}
