import type { TeamEventType } from "../lib/events";

/** The event as every kind of endpoint sees it before formatting. */
export interface EventBody {
  type: TeamEventType;
  timestamp: string;
  data: Record<string, unknown>;
}

const RED = 0xd83c3e;
const GREEN = 0x2d9d78;
const GREY = 0x7a7f87;

const str = (v: unknown) => (v === null || v === undefined || v === "" ? "—" : String(v));

/** A one-line title, a colour and a few fields for the chat formats. */
export function summarize(e: EventBody): { title: string; color: number; fields: [string, string][] } {
  const d = e.data;
  const server = str(d.server_name ?? d.server_id);
  switch (e.type) {
    case "server.down":
      return {
        title: `Server ${server} is down`,
        color: RED,
        fields: [
          ["Failed pings", str(d.failed_pings)],
          ["Reason", str(d.reason)],
          ["Error", str(d.error)],
        ],
      };
    case "server.up":
      return { title: `Server ${server} is up again`, color: GREEN, fields: [["Latency", `${str(d.latency_ms)} ms`]] };
    case "player.banned":
      return {
        title: `${str(d.name ?? d.uuid)} was banned on ${server}`,
        color: RED,
        fields: [
          ["Reason", str(d.reason)],
          ["Source", str(d.source)],
          ["Expires", str(d.expires)],
        ],
      };
    case "player.unbanned":
      return { title: `${str(d.uuid)} was unbanned on ${server}`, color: GREEN, fields: [["Source", str(d.source)]] };
    case "agent.offline":
      return {
        title: `The agent on ${server} went silent`,
        color: RED,
        fields: [["Last heartbeat", str(d.last_heartbeat_at)]],
      };
    case "agent.online":
      return { title: `The agent on ${server} is back`, color: GREEN, fields: [] };
    case "incident.opened":
    case "incident.updated":
    case "incident.resolved": {
      const crash = d.crash as { description?: string; lines?: string[] } | null | undefined;
      const update = d.update as { status?: string; message?: string } | undefined;
      const fields: [string, string][] = [
        ["Status", str(d.status)],
        ["Kind", str(d.kind)],
      ];
      if (update) fields.push(["Update", str(update.message)]);
      if (crash)
        fields.push(["Crash", [crash.description, ...(crash.lines ?? []).slice(0, 6)].join("\n").slice(0, 1000)]);
      const verb = e.type === "incident.opened" ? "Incident" : e.type === "incident.resolved" ? "Resolved" : "Update";
      return {
        title: `${verb}: ${str(d.title)}`,
        color: e.type === "incident.resolved" ? GREEN : e.type === "incident.opened" ? RED : GREY,
        fields,
      };
    }
    case "alert.firing":
    case "alert.resolved": {
      const firing = e.type === "alert.firing";
      const value = d.metric === "memory_share" ? `${Math.round(Number(d.value) * 1000) / 10}%` : str(d.value);
      const threshold =
        d.metric === "memory_share" ? `${Math.round(Number(d.threshold) * 1000) / 10}%` : str(d.threshold);
      return {
        title: firing
          ? `${str(d.rule_name)}: ${str(d.metric)} ${str(d.op)} ${threshold} on ${server}`
          : `${str(d.rule_name)} recovered on ${server}`,
        color: firing ? RED : GREEN,
        fields: [
          ["Value", value],
          ["Threshold", `${str(d.op)} ${threshold}`],
          ["Since", str(d.since)],
        ],
      };
    }
    case "login.authorized":
      return {
        title: `${str(d.mc_username)} signed in to ${str(d.client_name ?? d.client_id)}`,
        color: GREEN,
        fields: [["Player UUID", str(d.mc_uuid)]],
      };
    case "login.denied":
      return {
        title: `A sign-in to ${str(d.client_name ?? d.client_id)} was denied`,
        color: RED,
        fields: [["Code", str(d.error)]],
      };
    case "session.revoked":
      return {
        title: `${str(d.mc_username)} revoked ${str(d.client_name ?? d.client_id)}'s access`,
        color: GREY,
        fields: [
          ["Player UUID", str(d.mc_uuid)],
          ["Sessions ended", str(d.sessions)],
        ],
      };
    case "client.secret_rotated":
      return {
        title: `The secret of client ${str(d.client_name ?? d.client_id)} was rotated`,
        color: GREY,
        fields: [],
      };
    case "endpoint.disabled":
      return {
        title: "A webhook endpoint was disabled after failing",
        color: RED,
        fields: [
          ["Endpoint", str(d.url)],
          ["Failing since", str(d.failing_since)],
        ],
      };
    case "endpoint.paused":
      return {
        title: "A webhook endpoint was paused after failing",
        color: RED,
        fields: [
          ["Endpoint", str(d.url)],
          ["Failures in a row", str(d.consecutive_failures)],
          ["Paused until", d.paused_until ? str(d.paused_until) : "resumed by an admin"],
        ],
      };
    case "webhook.test":
      return { title: "Test event from mc-platform", color: GREY, fields: [] };
    case "audit.entry": {
      const actor = (d.actor ?? {}) as { name?: unknown };
      const target = (d.target ?? {}) as { type?: unknown; id?: unknown; name?: unknown };
      return {
        title: `${str(actor.name)}: ${str(d.action)}`,
        color: GREY,
        fields: [
          ["Target", `${str(target.type)} ${str(target.name ?? target.id)}`],
          ["Changed", str(Object.keys((d.changes ?? {}) as object).join(", "))],
        ],
      };
    }
  }
}

/**
 * Discord's markdown, escaped with a backslash: player names and ban reasons come from players,
 * and a masked link (`[text](url)`) in an embed field would show one address and open another.
 */
const discordText = (s: string) => s.replace(/[\\*_~`|<>[\]()#]/g, "\\$&");

/** Shortens to `max` characters without leaving a lone escaping backslash at the end. */
const cut = (s: string, max: number) => {
  const t = s.slice(0, max);
  const trailing = t.length - t.replace(/\\+$/, "").length;
  return trailing % 2 ? t.slice(0, -1) : t;
};

/** A Discord execute-webhook body: one embed; `allowed_mentions` empty, so no text can ping anyone. */
export function discordBody(e: EventBody) {
  const s = summarize(e);
  return {
    username: "mc-platform",
    allowed_mentions: { parse: [] as string[] },
    embeds: [
      {
        title: cut(discordText(s.title), 256),
        color: s.color,
        timestamp: e.timestamp,
        fields: s.fields.map(([name, value]) => ({ name, value: cut(discordText(value), 1024), inline: true })),
        footer: { text: e.type },
      },
    ],
  };
}

/**
 * Slack's control characters, as its formatting guide asks: `<`, `>` and `&` in text from
 * elsewhere would otherwise make `<!channel>` mentions and `<url|label>` links that hide
 * where they go.
 */
const slackText = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

/** A Slack incoming-webhook body: a fallback text and blocks. */
export function slackBody(e: EventBody) {
  const s = summarize(e);
  const title = slackText(s.title);
  const lines = s.fields.map(([k, v]) => `*${k}:* ${slackText(v)}`).join("\n");
  return {
    text: title,
    blocks: [
      { type: "section", text: { type: "mrkdwn", text: `*${title}*${lines ? `\n${lines}` : ""}` } },
      { type: "context", elements: [{ type: "mrkdwn", text: slackText(`${e.type} · ${e.timestamp}`) }] },
    ],
  };
}
