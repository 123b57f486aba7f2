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
    case "webhook.test":
      return { title: "Test event from mc-platform", color: GREY, fields: [] };
  }
}

/** A Discord execute-webhook body: one embed. */
export function discordBody(e: EventBody) {
  const s = summarize(e);
  return {
    username: "mc-platform",
    embeds: [
      {
        title: s.title.slice(0, 256),
        color: s.color,
        timestamp: e.timestamp,
        fields: s.fields.map(([name, value]) => ({ name, value: value.slice(0, 1024), inline: true })),
        footer: { text: e.type },
      },
    ],
  };
}

/** A Slack incoming-webhook body: a fallback text and blocks. */
export function slackBody(e: EventBody) {
  const s = summarize(e);
  const lines = s.fields.map(([k, v]) => `*${k}:* ${v}`).join("\n");
  return {
    text: s.title,
    blocks: [
      { type: "section", text: { type: "mrkdwn", text: `*${s.title}*${lines ? `\n${lines}` : ""}` } },
      { type: "context", elements: [{ type: "mrkdwn", text: `${e.type} · ${e.timestamp}` }] },
    ],
  };
}
