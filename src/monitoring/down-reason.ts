import { OutboundRefused } from "../lib/address-guard";

/**
 * Why a check found a server down, as a fixed set a dashboard or a script can act on; the
 * `error` text beside it keeps the details. docs/monitoring.md says what each means.
 */
export const DOWN_REASONS = [
  "connection_refused",
  "timed_out",
  "name_not_found",
  "unreachable",
  "refused_by_policy",
  "bad_answer",
] as const;
export type DownReason = (typeof DOWN_REASONS)[number];

/** Resolver failures: the name has no address, or none could be had for it. */
const NAME_CODES = new Set(["ENOTFOUND", "ENODATA", "EAI_NONAME", "EAI_NODATA", "EAI_AGAIN", "ESERVFAIL", "ENONAME"]);
/** The network has no route to the address: nothing there to refuse or to answer. */
const UNREACHABLE_CODES = new Set(["EHOSTUNREACH", "ENETUNREACH", "EHOSTDOWN", "ENETDOWN", "EADDRNOTAVAIL"]);
const TIMEOUT_CODES = new Set(["ETIMEDOUT", "ETIMEOUT"]);
/**
 * The pinger's timers: the status exchange's ("timed out: no status answer within ...", code
 * ETIMEDOUT) and the address lookup's ("Address lookup timed out"). "offline or unreachable" is
 * what minecraft-server-util, the client before, said on its timeout.
 */
const TIMEOUT_TEXT = /offline or unreachable|timed out/i;

/**
 * The reason for a failed ping. Anything that is not about reaching the server (it accepted the
 * connection, then closed it, reset it or answered something that is not a status) is a bad answer.
 */
export function downReason(err: unknown): DownReason {
  if (err instanceof OutboundRefused) return err.kind === "no_address" ? "name_not_found" : "refused_by_policy";
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === "string") {
    if (code === "ECONNREFUSED") return "connection_refused";
    if (TIMEOUT_CODES.has(code)) return "timed_out";
    if (NAME_CODES.has(code)) return "name_not_found";
    if (UNREACHABLE_CODES.has(code)) return "unreachable";
  }
  if (err instanceof Error && TIMEOUT_TEXT.test(err.message)) return "timed_out";
  return "bad_answer";
}
