/**
 * Where a redirect URI sends the player, as a page names it to them (the consent page, the
 * player's apps page): the host of a web address, or a launcher's own scheme without the colon
 * (`com.example.launcher`). Null when there is none or it does not parse.
 */
export function redirectHostOf(uri: string | null): string | null {
  if (!uri) return null;
  try {
    const u = new URL(uri);
    return u.protocol === "http:" || u.protocol === "https:" ? u.host : u.protocol.slice(0, -1);
  } catch {
    return null;
  }
}
