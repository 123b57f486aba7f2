/**
 * A MOTD's `§` formatting codes as HTML spans. Every character of the text is escaped; the
 * codes become class names only (`mc-c0`..`mc-cf`, `mc-l`, `mc-m`, `mc-n`, `mc-o`), so the
 * page's content security policy needs no inline style. A colour code resets the formatting,
 * `§r` resets both, `§k` (scrambled) is shown as plain text; an unknown code is dropped.
 */
const COLOURS = "0123456789abcdef";
const FORMATS: Record<string, string> = { l: "mc-l", m: "mc-m", n: "mc-n", o: "mc-o" };

export function motdHtml(motd: string): string {
  let out = "";
  let colour: string | null = null;
  let formats: string[] = [];
  let text = "";
  const flush = () => {
    if (!text) return;
    const classes = [...(colour ? [`mc-c${colour}`] : []), ...formats];
    const body = Bun.escapeHTML(text).replaceAll("\n", "<br>");
    out += classes.length ? `<span class="${classes.join(" ")}">${body}</span>` : body;
    text = "";
  };
  for (let i = 0; i < motd.length; i++) {
    const ch = motd[i]!;
    if (ch === "§" && i + 1 < motd.length) {
      const code = motd[i + 1]!.toLowerCase();
      i++;
      flush();
      if (COLOURS.includes(code)) {
        colour = code;
        formats = [];
      } else if (code === "r") {
        colour = null;
        formats = [];
      } else if (FORMATS[code] && !formats.includes(FORMATS[code])) formats.push(FORMATS[code]);
      continue;
    }
    text += ch;
  }
  flush();
  return out;
}

/**
 * The sixteen colours on the MOTD's dark panel. The darkest of Minecraft's own (black, dark
 * blue, dark red, dark purple, dark grey, blue) are lightened so every colour keeps a contrast
 * of at least 4.5:1 on it (WCAG AA); the rest are the game's.
 */
export const MOTD_CSS = [
  ["0", "#9e9e9e"],
  ["1", "#8f8fff"],
  ["2", "#00b300"],
  ["3", "#00b3b3"],
  ["4", "#ff6e6e"],
  ["5", "#e77ee7"],
  ["6", "#ffaa00"],
  ["7", "#aaaaaa"],
  ["8", "#a3a3a3"],
  ["9", "#8c8cff"],
  ["a", "#55ff55"],
  ["b", "#55ffff"],
  ["c", "#ff5555"],
  ["d", "#ff55ff"],
  ["e", "#ffff55"],
  ["f", "#ffffff"],
]
  .map(([c, hex]) => `.motd .mc-c${c}{color:${hex}}`)
  .join("")
  .concat(
    ".motd .mc-l{font-weight:700}.motd .mc-m{text-decoration:line-through}.motd .mc-n{text-decoration:underline}.motd .mc-o{font-style:italic}",
  );
