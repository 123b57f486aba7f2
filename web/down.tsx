/**
 * Why a server is down, in words: the server record's `status.down_reason` (a fixed set, see
 * docs/monitoring.md) and `status.down_since`.
 */

type Reason =
  | "connection_refused"
  | "timed_out"
  | "name_not_found"
  | "unreachable"
  | "refused_by_policy"
  | "bad_answer";

const REASONS: Record<Reason, [short: string, long: string]> = {
  connection_refused: ["connection refused", "The address answered, but nothing listens on that port."],
  timed_out: [
    "timed out",
    "Nothing answered within the ping timeout: the machine is off, or a firewall drops the ping.",
  ],
  name_not_found: ["name not found", "The host name has no address: check its spelling and its DNS records."],
  unreachable: ["unreachable", "The network has no route to that address."],
  refused_by_policy: [
    "refused by policy",
    "The address is private or loopback: a production service does not connect there unless OUTBOUND_ALLOW_PRIVATE=true.",
  ],
  bad_answer: ["bad answer", "Something answered on that port, but not with a Minecraft server status."],
};

export interface DownStatus {
  down_reason: Reason | null;
  down_since: string | null;
}

function since(iso: string): string {
  const d = new Date(iso);
  const today = new Date().toDateString() === d.toDateString();
  return today ? d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" }) : d.toLocaleString();
}

/** The short words for a reason ("connection refused"), for lists such as the incidents. */
export function reasonText(reason: Reason | null): string {
  return reason ? REASONS[reason][0] : "reason not recorded";
}

/** "Down since 14:02: connection refused", with the longer explanation beside it when asked (`detail`). */
export function DownNote({ status, detail = false }: { status: DownStatus; detail?: boolean }) {
  const [short, long] = status.down_reason ? REASONS[status.down_reason] : ["reason not known yet", ""];
  return (
    <p className="down-note" data-testid="down-reason" data-reason={status.down_reason ?? ""}>
      <strong>
        Down{status.down_since ? ` since ${since(status.down_since)}` : ""}: {short}
      </strong>
      {detail && long ? <span className="muted"> {long}</span> : null}
    </p>
  );
}
