/**
 * Prints a server's live analytics stream, one JSON message a line.
 *
 *   node_modules/.bin/bun scripts/watch-analytics.ts <server_id> <token> [base_url]
 *
 * `base_url` defaults to $BASE (as the guides' walkthroughs set it), then http://localhost:3000.
 * `token` is a user access token or a team API key (viewer or higher). With WATCH_AUTH=message
 * it authenticates the way a browser must, with a first `auth` message instead of a header.
 */
const [serverId, token, base = process.env.BASE || "http://localhost:3000"] = process.argv.slice(2);
if (!serverId || !token) {
  console.error("usage: watch-analytics.ts <server_id> <token> [base_url]");
  process.exit(2);
}
const url = `${base.replace(/^http/, "ws")}/ws/server/${serverId}/analytics`;
const byMessage = process.env.WATCH_AUTH === "message";
const ws = new WebSocket(url, (byMessage ? {} : { headers: { authorization: `Bearer ${token}` } }) as never);
ws.onopen = () => {
  if (byMessage) ws.send(JSON.stringify({ type: "auth", token }));
};
ws.onmessage = (ev) => console.log(String(ev.data));
ws.onclose = (ev) => {
  console.error(`closed: ${ev.code} ${ev.reason}`);
  process.exit(ev.code === 1000 ? 0 : 1);
};
