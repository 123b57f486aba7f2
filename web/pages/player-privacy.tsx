import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useRef, useState } from "react";
import { client, errorMessage, forTeam, trpc } from "../api";
import { useCurrent } from "../current";
import { useToast } from "../ui";

/**
 * A player's privacy actions for team admins (docs/privacy.md): download everything held about
 * them as JSON, and erase them after typing their name or UUID. Shown wherever a player is.
 */
export function PlayerPrivacyActions({ teamId, uuid, name }: { teamId: string; uuid: string; name?: string }) {
  const { canWrite } = useCurrent();
  const toast = useToast();
  const qc = useQueryClient();
  const dialog = useRef<HTMLDialogElement>(null);
  const [typed, setTyped] = useState("");
  const [exporting, setExporting] = useState(false);
  const erase = useMutation(
    trpc.privacy.erasePlayer.mutationOptions({
      ...forTeam(teamId),
      onSuccess: (r) => {
        dialog.current?.close();
        setTyped("");
        const rows = Object.values(r.erased).reduce((a, b) => a + b, 0);
        toast(`${name ?? "Player"} erased (${rows} rows)`);
        void qc.invalidateQueries();
      },
      onError: (e) => toast(errorMessage(e), "error"),
    }),
  );
  if (!canWrite) return null;
  const who = name ?? uuid;
  const matches = typed.trim().toLowerCase() === uuid.toLowerCase() || (name !== undefined && typed.trim() === name);
  const download = async () => {
    setExporting(true);
    try {
      const data = await client.privacy.exportPlayer.query({ uuid }, { context: { teamId } });
      const url = URL.createObjectURL(new Blob([JSON.stringify(data, null, 2)], { type: "application/json" }));
      const a = document.createElement("a");
      a.href = url;
      a.download = `player-${uuid}.json`;
      a.click();
      setTimeout(() => URL.revokeObjectURL(url), 10_000);
      toast(`Data of ${who} exported`);
    } catch (e) {
      toast(errorMessage(e), "error");
    } finally {
      setExporting(false);
    }
  };
  return (
    <>
      <button type="button" aria-label={`Export data of ${who}`} disabled={exporting} onClick={() => void download()}>
        {exporting ? "Exporting…" : "Export data"}
      </button>
      <button
        type="button"
        className="danger"
        data-action="Erase"
        aria-label={`Erase ${who}`}
        onClick={() => dialog.current?.showModal()}
      >
        Erase
      </button>
      <dialog ref={dialog} aria-labelledby={`erase-${uuid}`}>
        <form
          onSubmit={(e) => {
            e.preventDefault();
            if (matches) erase.mutate({ uuid });
          }}
        >
          <h3 id={`erase-${uuid}`}>Erase {who}?</h3>
          <p>
            Their sessions, playtime and notes are deleted from every server of the team, and the charts are rebuilt
            without them. A ban stays, without their name, so it still holds. This cannot be undone.
          </p>
          <div className="field">
            <label htmlFor={`erase-confirm-${uuid}`}>
              Type {name ? "their name or UUID" : "their UUID"} to confirm
            </label>
            <input
              id={`erase-confirm-${uuid}`}
              autoComplete="off"
              value={typed}
              onChange={(e) => setTyped(e.target.value)}
            />
          </div>
          <div className="row">
            <button
              type="button"
              onClick={() => {
                dialog.current?.close();
                setTyped("");
              }}
            >
              Cancel
            </button>
            <button type="submit" className="danger" disabled={!matches || erase.isPending}>
              {erase.isPending ? "Erasing…" : "Erase"}
            </button>
          </div>
        </form>
      </dialog>
    </>
  );
}
