import { percent } from "./render";
import type { PublicServer } from "./public";

export const BADGE_KINDS = ["status", "players", "uptime-24h", "uptime-7d", "uptime-30d", "version"] as const;
export type BadgeKind = (typeof BADGE_KINDS)[number];

const xml = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&apos;" })[c]!);

/** Verdana 11px advance widths, roughly: enough to size a badge without a font at hand. */
function textWidth(s: string): number {
  let w = 0;
  for (const ch of s) w += /[il.:|!,'` ]/.test(ch) ? 3.6 : /[mwMW@%]/.test(ch) ? 10 : /[A-Z0-9#]/.test(ch) ? 7.6 : 6.6;
  return Math.ceil(w);
}

const COLOURS = { green: "#2e7d32", red: "#c62828", grey: "#616161", blue: "#1565c0", amber: "#a15c00" };

/** A flat two-part badge, `label | message`, with its text as the image's accessible name. */
export function badgeSvg(label: string, message: string, colour: string): string {
  const lw = textWidth(label) + 12;
  const mw = textWidth(message) + 12;
  const w = lw + mw;
  const l = xml(label);
  const m = xml(message);
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="20" role="img" aria-label="${l}: ${m}"><title>${l}: ${m}</title><clipPath id="r"><rect width="${w}" height="20" rx="3"/></clipPath><g clip-path="url(#r)"><rect width="${lw}" height="20" fill="#555"/><rect x="${lw}" width="${mw}" height="20" fill="${colour}"/></g><g fill="#fff" text-anchor="middle" font-family="Verdana,DejaVu Sans,sans-serif" font-size="11"><text x="${lw / 2}" y="14">${l}</text><text x="${lw + mw / 2}" y="14">${m}</text></g></svg>`;
}

/**
 * What a badge of a server says, or null when its page does not show that figure (players and
 * version are the team's choice; state and uptime are on every page).
 */
export function badgeFor(
  kind: BadgeKind,
  s: PublicServer,
  show: { players: boolean; version: boolean },
): { label: string; message: string; colour: string } | null {
  switch (kind) {
    case "status":
      return s.online === true
        ? { label: s.name, message: "online", colour: COLOURS.green }
        : s.online === false
          ? { label: s.name, message: "offline", colour: COLOURS.red }
          : { label: s.name, message: "unknown", colour: COLOURS.grey };
    case "players":
      if (!show.players) return null;
      return {
        label: "players",
        message:
          s.playersOnline === null
            ? "offline"
            : `${s.playersOnline}${s.playersMax === null ? "" : ` / ${s.playersMax}`}`,
        colour: s.playersOnline === null ? COLOURS.grey : COLOURS.blue,
      };
    case "version":
      if (!show.version) return null;
      return { label: "version", message: s.version || "unknown", colour: s.version ? COLOURS.blue : COLOURS.grey };
    default: {
      const window = kind.slice("uptime-".length) as "24h" | "7d" | "30d";
      const u = s.uptime[window];
      return {
        label: `uptime ${window}`,
        message: u === null ? "no data" : percent(u),
        colour: u === null ? COLOURS.grey : u >= 0.99 ? COLOURS.green : u >= 0.95 ? COLOURS.amber : COLOURS.red,
      };
    }
  }
}
