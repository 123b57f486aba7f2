import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useEffect, useState } from "react";
import { errorMessage, fieldErrors, trpc } from "../api";
import { useCurrent } from "../current";
import { ConfirmButton, Q, SubmitButton, TextField, useIntent, useOutcome, useToast } from "../ui";

/** The team settings' Privacy section (docs/privacy.md): the opt-out list and retention. */
export function PrivacySettings() {
  const { canModerate } = useCurrent();
  if (!canModerate) return <Retention />;
  return (
    <section className="card" aria-labelledby="privacy-h">
      <h2 id="privacy-h">Privacy</h2>
      <p className="muted">
        Players on the opt-out list are not tracked: the agents send nothing of theirs and the platform drops their
        joins and leaves. Bans still apply. Opting out does not erase what was collected before: erase a player from
        their row on a server page.
      </p>
      <OptOuts />
      <Retention inner />
    </section>
  );
}

function OptOuts() {
  const { team, canWrite } = useCurrent();
  const team_id = team!.team_id;
  const qc = useQueryClient();
  const toast = useToast();
  const list = useQuery(trpc.privacy.optOuts.queryOptions({ team_id }));
  const refresh = () => qc.invalidateQueries(trpc.privacy.optOuts.queryFilter());
  const outcome = useOutcome(refresh);
  const intent = useIntent();
  const [uuid, setUuid] = useState("");
  const [name, setName] = useState("");
  const add = useMutation(
    trpc.privacy.addOptOut.mutationOptions({
      ...intent.options(),
      onSuccess: (o) => {
        void refresh();
        toast(`${o.name ?? o.uuid} opted out`);
      },
    }),
  );
  const remove = useMutation(trpc.privacy.removeOptOut.mutationOptions(outcome("Collection resumed")));
  const errs = fieldErrors(add.error);
  return (
    <>
      <h3>Opted-out players</h3>
      <Q q={list}>
        {(d) =>
          d.opt_outs.length === 0 ? (
            <p className="muted">Nobody has opted out.</p>
          ) : (
            <table className="stack" aria-label="Opted-out players">
              <thead>
                <tr>
                  <th>Player</th>
                  <th>Since</th>
                  {canWrite && <th>Actions</th>}
                </tr>
              </thead>
              <tbody>
                {d.opt_outs.map((o) => (
                  <tr key={o.uuid}>
                    <td data-label="Player">
                      {o.name ?? <span className="muted">(no name)</span>} <code className="muted">{o.uuid}</code>
                    </td>
                    <td data-label="Since">{new Date(o.created_at).toLocaleDateString()}</td>
                    {canWrite && (
                      <td data-label="Actions">
                        <ConfirmButton
                          label="Remove"
                          target={o.name ?? o.uuid}
                          danger={false}
                          question={`Collect ${o.name ?? o.uuid}'s joins and leaves again?`}
                          onConfirm={() => remove.mutate({ team_id, uuid: o.uuid })}
                        />
                      </td>
                    )}
                  </tr>
                ))}
              </tbody>
            </table>
          )
        }
      </Q>
      <form
        className="row-form"
        aria-label="Opt a player out"
        onSubmit={(e) => {
          e.preventDefault();
          intent.submit(add, { team_id, uuid: uuid.trim(), ...(name.trim() && { name: name.trim() }) }, () => {
            setUuid("");
            setName("");
          });
        }}
      >
        <TextField
          label="Player UUID"
          required
          value={uuid}
          onChange={setUuid}
          error={errs.uuid ?? (add.error && !errs.name ? errorMessage(add.error) : undefined)}
        />
        <TextField label="Name (optional)" value={name} onChange={setName} error={errs.name} />
        <SubmitButton pending={add.isPending} busy="Adding…">
          Opt out
        </SubmitButton>
      </form>
    </>
  );
}

const asDays = (v: string) => (v.trim() === "" ? null : Number(v));

function Retention({ inner = false }: { inner?: boolean }) {
  const { team, canWrite } = useCurrent();
  const team_id = team!.team_id;
  const qc = useQueryClient();
  const settings = useQuery(trpc.privacy.settings.queryOptions({ team_id }));
  const [sessions, setSessions] = useState("");
  const [players, setPlayers] = useState("");
  useEffect(() => {
    if (!settings.data) return;
    setSessions(settings.data.session_retention_days?.toString() ?? "");
    setPlayers(settings.data.player_retention_days?.toString() ?? "");
  }, [settings.data]);
  const outcome = useOutcome(() => qc.invalidateQueries(trpc.privacy.settings.queryFilter()));
  const save = useMutation(trpc.privacy.updateSettings.mutationOptions(outcome("Retention saved")));
  const errs = fieldErrors(save.error);
  const body = (
    <Q q={settings}>
      {(d) => (
        <>
          <h3>Retention</h3>
          <p className="muted">
            Sessions are kept {d.effective_session_retention_days} days; a player not seen for{" "}
            {d.effective_player_retention_days} days is forgotten (bans stay). Leave a field empty for the default.
          </p>
          {canWrite && (
            <form
              className="row-form"
              aria-label="Retention"
              onSubmit={(e) => {
                e.preventDefault();
                save.mutate({
                  team_id,
                  session_retention_days: asDays(sessions),
                  player_retention_days: asDays(players),
                });
              }}
            >
              <TextField
                label={`Session retention, days (at most ${d.max_session_retention_days})`}
                type="number"
                min={1}
                max={d.max_session_retention_days}
                value={sessions}
                onChange={setSessions}
                error={errs.session_retention_days}
              />
              <TextField
                label={`Player retention, days (at most ${d.max_player_retention_days})`}
                type="number"
                min={1}
                max={d.max_player_retention_days}
                value={players}
                onChange={setPlayers}
                error={errs.player_retention_days}
              />
              <SubmitButton pending={save.isPending} busy="Saving…">
                Save
              </SubmitButton>
            </form>
          )}
        </>
      )}
    </Q>
  );
  if (inner) return body;
  return (
    <section className="card" aria-labelledby="privacy-h">
      <h2 id="privacy-h">Privacy</h2>
      {body}
    </section>
  );
}
