import { type KeyboardEvent, type ReactNode, useId, useRef, useState } from "react";

export interface Tab {
  id: string;
  label: string;
  panel: () => ReactNode;
}

/**
 * Tabs after the WAI-ARIA pattern (automatic activation): a `tablist` of `tab` buttons, one
 * `tabpanel` shown. Left and right arrows move between tabs (wrapping), Home and End go to the
 * first and last; only the selected tab is in the Tab order. The caller owns the selection (a page
 * keeps it in its address, so a reload, a shared link and the back button keep it). A panel is
 * rendered the first time it is shown and then kept, hidden, so a half-typed form or a secret
 * shown once survives a look at another tab.
 */
export function Tabs({
  label,
  tabs,
  selected,
  onSelect,
}: {
  label: string;
  tabs: Tab[];
  selected: string;
  onSelect: (id: string) => void;
}) {
  const base = useId();
  const refs = useRef(new Map<string, HTMLButtonElement>());
  const [seen, setSeen] = useState(() => new Set([selected]));
  if (!seen.has(selected)) setSeen(new Set([...seen, selected]));
  const move = (e: KeyboardEvent, from: number) => {
    const last = tabs.length - 1;
    const to =
      e.key === "ArrowRight"
        ? from === last
          ? 0
          : from + 1
        : e.key === "ArrowLeft"
          ? from === 0
            ? last
            : from - 1
          : e.key === "Home"
            ? 0
            : e.key === "End"
              ? last
              : null;
    if (to === null) return;
    e.preventDefault();
    const tab = tabs[to]!;
    refs.current.get(tab.id)?.focus();
    onSelect(tab.id);
  };
  return (
    <>
      <div className="tab-bar">
        <div role="tablist" aria-label={label}>
          {tabs.map((t, i) => (
            <button
              key={t.id}
              ref={(el) => {
                if (el) refs.current.set(t.id, el);
                else refs.current.delete(t.id);
              }}
              type="button"
              role="tab"
              id={`${base}-tab-${t.id}`}
              aria-selected={t.id === selected}
              // Only a panel that exists is named: a reference to nothing is an error to a screen reader.
              aria-controls={seen.has(t.id) ? `${base}-panel-${t.id}` : undefined}
              tabIndex={t.id === selected ? 0 : -1}
              data-tab={t.id}
              onClick={() => onSelect(t.id)}
              onKeyDown={(e) => move(e, i)}
            >
              {t.label}
            </button>
          ))}
        </div>
      </div>
      {tabs
        .filter((t) => seen.has(t.id))
        .map((t) => (
          <div
            key={t.id}
            role="tabpanel"
            id={`${base}-panel-${t.id}`}
            aria-labelledby={`${base}-tab-${t.id}`}
            hidden={t.id !== selected}
            // The panel itself takes the focus after the tab list (its first control may be far down),
            // as the WAI-ARIA tabs pattern advises; Biome does not read the role.
            // biome-ignore lint/a11y/noNoninteractiveTabindex: a tabpanel is focusable in the WAI-ARIA tabs pattern
            tabIndex={0}
            className="tab-panel"
          >
            {t.panel()}
          </div>
        ))}
    </>
  );
}
