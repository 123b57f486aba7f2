import { readFileSync } from "node:fs";
import type { AxeResults } from "axe-core";
import type { Page } from "playwright-core";

/**
 * Accessibility checks run in Chromium on whatever page is open: axe-core, plus what axe does not
 * see (it counts a label as found when a label names the control's id, even when that id belongs
 * to another control first; it does not check the contrast of a field's border).
 */

const AXE_SOURCE = readFileSync(require.resolve("axe-core/axe.min.js"), "utf8");

/** Serious and critical axe violations, one line each with the elements and what is wrong with them. */
export async function axeViolations(page: Page, where: string): Promise<string[]> {
  // Evaluated rather than added as a <script>: every page we serve forbids inline script by its CSP.
  if (!(await page.evaluate(() => "axe" in window))) await page.evaluate(AXE_SOURCE);
  const result = (await page.evaluate(() =>
    (window as unknown as { axe: { run: (ctx: Document, opts: object) => Promise<unknown> } }).axe.run(document, {
      resultTypes: ["violations"],
    }),
  )) as AxeResults;
  return result.violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .map(
      (v) =>
        `${where}: ${v.id} (${v.impact}) ${v.help}: ${v.nodes
          .map((n) => `${n.target.join(" ")} [${n.failureSummary?.replace(/\s+/g, " ")}]`)
          .join("; ")}`,
    );
}

interface AXNode {
  ignored: boolean;
  role?: { value: string };
  name?: { value: string };
  backendDOMNodeId?: number;
}

/** Chromium's own accessibility tree: the names a screen reader announces. */
async function accessibilityTree(page: Page) {
  const cdp = await page.context().newCDPSession(page);
  try {
    const { nodes } = (await cdp.send("Accessibility.getFullAXTree")) as { nodes: AXNode[] };
    const describe = async (n: AXNode) => {
      if (!n.backendDOMNodeId) return n.role?.value ?? "?";
      const { node } = (await cdp.send("DOM.describeNode", { backendNodeId: n.backendDOMNodeId })) as {
        node: { localName: string; attributes?: string[] };
      };
      const a = node.attributes ?? [];
      const attrs = [];
      for (let i = 0; i < a.length; i += 2)
        if (/^(id|name|type|class)$/.test(a[i]!)) attrs.push(`${a[i]}="${a[i + 1]}"`);
      return `<${node.localName} ${attrs.join(" ")}>`;
    };
    const shown = nodes.filter((n) => !n.ignored);
    const unnamed = [];
    for (const n of shown)
      if (FIELD_ROLES.has(n.role?.value ?? "") && !n.name?.value.trim()) unnamed.push(await describe(n));
    const buttons = shown.filter((n) => n.role?.value === "button").map((n) => n.name?.value ?? "");
    return { unnamed, buttons };
  } finally {
    await cdp.detach();
  }
}
const FIELD_ROLES = new Set([
  "textbox",
  "searchbox",
  "combobox",
  "spinbutton",
  "checkbox",
  "radio",
  "listbox",
  "slider",
]);

/** Field borders (WCAG 1.4.11): at least 3:1 against what surrounds the field. */
function fieldBorderContrast(): string[] {
  const rgb = (c: string) => {
    const m = c.match(/rgba?\(([\d.]+),? ([\d.]+),? ([\d.]+)(?:,? \/? ?([\d.]+))?\)/);
    return m ? { c: [Number(m[1]), Number(m[2]), Number(m[3])], a: m[4] === undefined ? 1 : Number(m[4]) } : null;
  };
  const lum = ([r, g, b]: number[]) => {
    const f = (v: number) => {
      const s = v / 255;
      return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
    };
    return 0.2126 * f(r!) + 0.7152 * f(g!) + 0.0722 * f(b!);
  };
  const ratio = (x: number[], y: number[]) => {
    const [a, b] = [lum(x), lum(y)].sort((p, q) => q - p);
    return (a! + 0.05) / (b! + 0.05);
  };
  const around = (el: Element) => {
    for (let e = el.parentElement; e; e = e.parentElement) {
      const bg = rgb(getComputedStyle(e).backgroundColor);
      if (bg && bg.a > 0) return bg.c;
    }
    return [255, 255, 255];
  };
  const out: string[] = [];
  for (const el of document.querySelectorAll("input:not([type=hidden]):not([type=checkbox]), select, textarea")) {
    if (!el.getClientRects().length) continue;
    const style = getComputedStyle(el);
    const border = rgb(style.borderTopColor);
    if (!border || Number.parseFloat(style.borderTopWidth) === 0) continue;
    const r = ratio(border.c, around(el));
    if (r < 3) out.push(`${el.localName}#${el.id || "?"} border ${style.borderTopColor} is ${r.toFixed(2)}:1`);
  }
  return out;
}

/**
 * What axe misses: ids used twice (a label then names only the first control), fields with no
 * name, field borders under 3:1, and buttons that share a name (a "Delete" that does not say
 * what it deletes).
 */
export async function pageProblems(page: Page, where: string): Promise<string[]> {
  const duplicates = await page.evaluate(() => {
    const seen = new Map<string, number>();
    for (const el of document.querySelectorAll("[id]")) seen.set(el.id, (seen.get(el.id) ?? 0) + 1);
    return [...seen].filter(([, n]) => n > 1).map(([id, n]) => `id "${id}" used ${n} times`);
  });
  const borders = await page.evaluate(fieldBorderContrast);
  const { unnamed, buttons } = await accessibilityTree(page);
  const counts = new Map<string, number>();
  for (const b of buttons) counts.set(b, (counts.get(b) ?? 0) + 1);
  const sameName = [...counts].filter(([, n]) => n > 1).map(([b, n]) => `${n} buttons named "${b}"`);
  return [...duplicates, ...unnamed.map((u) => `field without a name: ${u}`), ...borders, ...sameName].map(
    (p) => `${where}: ${p}`,
  );
}

/** The accessible name of the focused element and how it is marked up, e.g. `h1 "Servers"`. */
export async function focused(page: Page): Promise<string> {
  return page.evaluate(() => {
    const el = document.activeElement;
    if (!el || el === document.body) return "body";
    return `${el.localName} "${(el.getAttribute("aria-label") ?? el.textContent ?? "").trim()}"`;
  });
}

export const VIEWPORTS = { phone: { width: 390, height: 844 }, desktop: { width: 1280, height: 860 } } as const;
export const SCHEMES = ["light", "dark"] as const;

/** Every check above in both color schemes at phone and desktop width; the page is left light and desktop. */
export async function checkEverywhere(page: Page, where: string): Promise<string[]> {
  const problems: string[] = [];
  for (const scheme of SCHEMES)
    for (const [size, viewport] of Object.entries(VIEWPORTS)) {
      await page.emulateMedia({ colorScheme: scheme });
      await page.setViewportSize(viewport);
      const at = `${where} (${scheme}, ${size})`;
      problems.push(...(await axeViolations(page, at)), ...(await pageProblems(page, at)));
    }
  await page.emulateMedia({ colorScheme: "light" });
  return problems;
}
