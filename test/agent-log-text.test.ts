import { beforeAll, describe, expect, test } from "bun:test";
import type { RunningServer } from "../src/app";
import { sharedServer } from "./harness";
import { api } from "./helpers";
import { agentApi, newServer } from "./servers-fixture";

/**
 * Log text from the agent (a stop line, a crash report's file, description and lines) is kept as
 * read, except a lone surrogate, stored as U+FFFD (a fuzzed crash report with one was a 500: the
 * report goes into jsonb). A NUL is refused, as in every input, and nothing of the batch is kept.
 */
let server: RunningServer;
beforeAll(async () => {
  server = await sharedServer();
});

describe("agent log text", () => {
  test("a crash report with lone surrogates is taken, each stored as U+FFFD; one with a NUL is a 400 and nothing is kept", async () => {
    const s = await newServer(server);
    const report = (lines: string[]) => ({
      events: [
        {
          event_id: "crash.odd",
          type: "crash_report",
          file: "crash-odd\ud800.txt",
          description: "Exception \ud800 in tick",
          lines,
        },
      ],
    });
    const nul = await agentApi(server, s.agentToken, "POST", "/agent/events", report(["a\u0000b"]));
    expect(nul.status).toBe(400);
    expect(nul.body.error.details.issues[0].path).toBe("events.0.lines.0");
    const res = await agentApi(
      server,
      s.agentToken,
      "POST",
      "/agent/events",
      report(["java.lang.Error: \udfff", "plain"]),
    );
    expect(`${res.status} ${res.text}`).toStartWith("200");
    expect(res.body.accepted).toBe(1);
    const list = await api(server, "GET", "/server/incidents", {
      token: s.owner.token,
      headers: { "x-team-id": s.teamId },
    });
    expect(list.status).toBe(200);
    const crash = list.body.incidents.find((i: any) => i.crash)?.crash;
    expect(crash).toMatchObject({
      file: "crash-odd\ufffd.txt",
      description: "Exception \ufffd in tick",
      lines: ["java.lang.Error: \ufffd", "plain"],
    });
  });
});
