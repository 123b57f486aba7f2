import { durationLabel, timeLabel } from "./render";
import type { PublicView } from "./public";

const xml = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&apos;" })[c]!);

/**
 * The page's Atom feed (RFC 4287): an entry per incident of `pageIncidents` and per maintenance
 * window, each updated when it changes (an incident when it ends), so feed readers show it again.
 */
export function atomFeed(view: PublicView, pageUrl: string): string {
  const { page } = view;
  const entries: { id: string; title: string; updated: string; published: string; text: string }[] = [];
  for (const i of view.incidents) {
    const text = i.ongoing
      ? `Ongoing since ${timeLabel(i.startedAt)} (${durationLabel(i.durationSeconds)} so far).`
      : `From ${timeLabel(i.startedAt)} to ${timeLabel(i.endedAt!)} (${durationLabel(i.durationSeconds)}).`;
    const updates = i.updates.map((u) => `\n${u.status} (${timeLabel(u.at)}): ${u.message}`).join("");
    entries.push({
      id: `urn:uuid:${i.id}`,
      title: i.ongoing ? `${i.title} (ongoing)` : `${i.title} (resolved)`,
      updated: i.updates.at(-1)?.at ?? i.endedAt ?? i.startedAt,
      published: i.startedAt,
      text: text + updates,
    });
  }
  for (const m of view.maintenance)
    entries.push({
      // One entry per run of a window: the page's address with the window and the run's start.
      id: `${pageUrl}#maintenance-${m.windowId}-${Date.parse(m.startsAt)}`,
      title: `Maintenance: ${m.title}`,
      updated: m.startsAt,
      published: m.startsAt,
      text: `${timeLabel(m.startsAt)} to ${timeLabel(m.endsAt)}${m.serverNames.length ? `: ${m.serverNames.join(", ")}` : ""}.${m.message ? `\n${m.message}` : ""}`,
    });
  entries.sort((a, b) => b.updated.localeCompare(a.updated));
  const updated = entries[0]?.updated ?? page.updatedAt.toISOString();
  const body = entries
    .map(
      (e) =>
        `<entry><id>${e.id}</id><title>${xml(e.title)}</title><updated>${e.updated}</updated><published>${e.published}</published><link rel="alternate" href="${xml(pageUrl)}"/><content type="text">${xml(e.text)}</content></entry>`,
    )
    .join("\n");
  return `<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="http://www.w3.org/2005/Atom"><id>urn:uuid:${page.id}</id><title>${xml(page.title)}: incidents</title><updated>${updated}</updated><author><name>${xml(page.title)}</name></author><link rel="alternate" type="text/html" href="${xml(pageUrl)}"/><link rel="self" type="application/atom+xml" href="${xml(pageUrl)}/feed.atom"/>
${body}
</feed>`;
}
