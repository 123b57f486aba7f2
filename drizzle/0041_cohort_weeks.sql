CREATE TABLE "analytics_cohort_weeks" (
	"team_id" uuid NOT NULL,
	"scope" text NOT NULL,
	"cohort" date NOT NULL,
	"week" date NOT NULL,
	"c00" integer DEFAULT 0 NOT NULL,
	"c01" integer DEFAULT 0 NOT NULL,
	"c02" integer DEFAULT 0 NOT NULL,
	"c03" integer DEFAULT 0 NOT NULL,
	"c04" integer DEFAULT 0 NOT NULL,
	"c05" integer DEFAULT 0 NOT NULL,
	"c06" integer DEFAULT 0 NOT NULL,
	"c10" integer DEFAULT 0 NOT NULL,
	"c11" integer DEFAULT 0 NOT NULL,
	"c12" integer DEFAULT 0 NOT NULL,
	"c13" integer DEFAULT 0 NOT NULL,
	"c14" integer DEFAULT 0 NOT NULL,
	"c15" integer DEFAULT 0 NOT NULL,
	"c16" integer DEFAULT 0 NOT NULL,
	"c20" integer DEFAULT 0 NOT NULL,
	"c21" integer DEFAULT 0 NOT NULL,
	"c22" integer DEFAULT 0 NOT NULL,
	"c23" integer DEFAULT 0 NOT NULL,
	"c24" integer DEFAULT 0 NOT NULL,
	"c25" integer DEFAULT 0 NOT NULL,
	"c26" integer DEFAULT 0 NOT NULL,
	"c30" integer DEFAULT 0 NOT NULL,
	"c31" integer DEFAULT 0 NOT NULL,
	"c32" integer DEFAULT 0 NOT NULL,
	"c33" integer DEFAULT 0 NOT NULL,
	"c34" integer DEFAULT 0 NOT NULL,
	"c35" integer DEFAULT 0 NOT NULL,
	"c36" integer DEFAULT 0 NOT NULL,
	"c40" integer DEFAULT 0 NOT NULL,
	"c41" integer DEFAULT 0 NOT NULL,
	"c42" integer DEFAULT 0 NOT NULL,
	"c43" integer DEFAULT 0 NOT NULL,
	"c44" integer DEFAULT 0 NOT NULL,
	"c45" integer DEFAULT 0 NOT NULL,
	"c46" integer DEFAULT 0 NOT NULL,
	"c50" integer DEFAULT 0 NOT NULL,
	"c51" integer DEFAULT 0 NOT NULL,
	"c52" integer DEFAULT 0 NOT NULL,
	"c53" integer DEFAULT 0 NOT NULL,
	"c54" integer DEFAULT 0 NOT NULL,
	"c55" integer DEFAULT 0 NOT NULL,
	"c56" integer DEFAULT 0 NOT NULL,
	"c60" integer DEFAULT 0 NOT NULL,
	"c61" integer DEFAULT 0 NOT NULL,
	"c62" integer DEFAULT 0 NOT NULL,
	"c63" integer DEFAULT 0 NOT NULL,
	"c64" integer DEFAULT 0 NOT NULL,
	"c65" integer DEFAULT 0 NOT NULL,
	"c66" integer DEFAULT 0 NOT NULL,
	CONSTRAINT "analytics_cohort_weeks_scope_cohort_week_pk" PRIMARY KEY("scope","cohort","week")
);
--> statement-breakpoint
-- Backfill: retention's kept counts of every player-hour row, in each team's time zone
-- (src/analytics/aggregates.ts, `cohortRowsOf`).
insert into analytics_cohort_weeks (team_id, scope, cohort, week, c00, c01, c02, c03, c04, c05, c06, c10, c11, c12, c13, c14, c15, c16, c20, c21, c22, c23, c24, c25, c26, c30, c31, c32, c33, c34, c35, c36, c40, c41, c42, c43, c44, c45, c46, c50, c51, c52, c53, c54, c55, c56, c60, c61, c62, c63, c64, c65, c66)

  select team_id, scope, cohort, week, coalesce(sum(n) filter (where d = 0 and fd = 0), 0)::int as c00, coalesce(sum(n) filter (where d = 0 and fd = 1), 0)::int as c01, coalesce(sum(n) filter (where d = 0 and fd = 2), 0)::int as c02, coalesce(sum(n) filter (where d = 0 and fd = 3), 0)::int as c03, coalesce(sum(n) filter (where d = 0 and fd = 4), 0)::int as c04, coalesce(sum(n) filter (where d = 0 and fd = 5), 0)::int as c05, coalesce(sum(n) filter (where d = 0 and fd = 6), 0)::int as c06, coalesce(sum(n) filter (where d = 1 and fd = 0), 0)::int as c10, coalesce(sum(n) filter (where d = 1 and fd = 1), 0)::int as c11, coalesce(sum(n) filter (where d = 1 and fd = 2), 0)::int as c12, coalesce(sum(n) filter (where d = 1 and fd = 3), 0)::int as c13, coalesce(sum(n) filter (where d = 1 and fd = 4), 0)::int as c14, coalesce(sum(n) filter (where d = 1 and fd = 5), 0)::int as c15, coalesce(sum(n) filter (where d = 1 and fd = 6), 0)::int as c16, coalesce(sum(n) filter (where d = 2 and fd = 0), 0)::int as c20, coalesce(sum(n) filter (where d = 2 and fd = 1), 0)::int as c21, coalesce(sum(n) filter (where d = 2 and fd = 2), 0)::int as c22, coalesce(sum(n) filter (where d = 2 and fd = 3), 0)::int as c23, coalesce(sum(n) filter (where d = 2 and fd = 4), 0)::int as c24, coalesce(sum(n) filter (where d = 2 and fd = 5), 0)::int as c25, coalesce(sum(n) filter (where d = 2 and fd = 6), 0)::int as c26, coalesce(sum(n) filter (where d = 3 and fd = 0), 0)::int as c30, coalesce(sum(n) filter (where d = 3 and fd = 1), 0)::int as c31, coalesce(sum(n) filter (where d = 3 and fd = 2), 0)::int as c32, coalesce(sum(n) filter (where d = 3 and fd = 3), 0)::int as c33, coalesce(sum(n) filter (where d = 3 and fd = 4), 0)::int as c34, coalesce(sum(n) filter (where d = 3 and fd = 5), 0)::int as c35, coalesce(sum(n) filter (where d = 3 and fd = 6), 0)::int as c36, coalesce(sum(n) filter (where d = 4 and fd = 0), 0)::int as c40, coalesce(sum(n) filter (where d = 4 and fd = 1), 0)::int as c41, coalesce(sum(n) filter (where d = 4 and fd = 2), 0)::int as c42, coalesce(sum(n) filter (where d = 4 and fd = 3), 0)::int as c43, coalesce(sum(n) filter (where d = 4 and fd = 4), 0)::int as c44, coalesce(sum(n) filter (where d = 4 and fd = 5), 0)::int as c45, coalesce(sum(n) filter (where d = 4 and fd = 6), 0)::int as c46, coalesce(sum(n) filter (where d = 5 and fd = 0), 0)::int as c50, coalesce(sum(n) filter (where d = 5 and fd = 1), 0)::int as c51, coalesce(sum(n) filter (where d = 5 and fd = 2), 0)::int as c52, coalesce(sum(n) filter (where d = 5 and fd = 3), 0)::int as c53, coalesce(sum(n) filter (where d = 5 and fd = 4), 0)::int as c54, coalesce(sum(n) filter (where d = 5 and fd = 5), 0)::int as c55, coalesce(sum(n) filter (where d = 5 and fd = 6), 0)::int as c56, coalesce(sum(n) filter (where d = 6 and fd = 0), 0)::int as c60, coalesce(sum(n) filter (where d = 6 and fd = 1), 0)::int as c61, coalesce(sum(n) filter (where d = 6 and fd = 2), 0)::int as c62, coalesce(sum(n) filter (where d = 6 and fd = 3), 0)::int as c63, coalesce(sum(n) filter (where d = 6 and fd = 4), 0)::int as c64, coalesce(sum(n) filter (where d = 6 and fd = 5), 0)::int as c65, coalesce(sum(n) filter (where d = 6 and fd = 6), 0)::int as c66
    from (
  select w.team_id, w.scope, date_trunc('week', w.f at time zone w.z)::date as cohort, (extract(isodow from w.f at time zone w.z)::int - 1) as d,
         w.aw::date as week, (extract(isodow from w.fq at time zone w.z)::int - 1) as fd, 1 as n
    from (select x.*, min(x.fq) over (partition by x.scope, x.uuid) as f from (
  select sv.team_id, sc.scope, h.uuid, tm.time_zone as z,
         date_trunc('week', (h.hour + i * interval '15 minutes') at time zone tm.time_zone) as aw,
         min(h.hour + i * interval '15 minutes') as fq
    from (select h.* from analytics_player_hours h) h cross join generate_series(0, 3) as i 
    join servers sv on sv.id = h.server_id
    cross join lateral (
      select h.server_id::text as scope
      union all
      select 'n:' || sv.team_id || ':' || sv.network_name where sv.network_name is not null) sc
    join teams tm on tm.id = sv.team_id
   where (h.seen >> i) & 1 = 1
   group by 1, 2, 3, 4, 5) x) w) x group by 1, 2, 3, 4
  having sum(n) filter (where d = 0 and fd = 0) <> 0 or sum(n) filter (where d = 0 and fd = 1) <> 0 or sum(n) filter (where d = 0 and fd = 2) <> 0 or sum(n) filter (where d = 0 and fd = 3) <> 0 or sum(n) filter (where d = 0 and fd = 4) <> 0 or sum(n) filter (where d = 0 and fd = 5) <> 0 or sum(n) filter (where d = 0 and fd = 6) <> 0 or sum(n) filter (where d = 1 and fd = 0) <> 0 or sum(n) filter (where d = 1 and fd = 1) <> 0 or sum(n) filter (where d = 1 and fd = 2) <> 0 or sum(n) filter (where d = 1 and fd = 3) <> 0 or sum(n) filter (where d = 1 and fd = 4) <> 0 or sum(n) filter (where d = 1 and fd = 5) <> 0 or sum(n) filter (where d = 1 and fd = 6) <> 0 or sum(n) filter (where d = 2 and fd = 0) <> 0 or sum(n) filter (where d = 2 and fd = 1) <> 0 or sum(n) filter (where d = 2 and fd = 2) <> 0 or sum(n) filter (where d = 2 and fd = 3) <> 0 or sum(n) filter (where d = 2 and fd = 4) <> 0 or sum(n) filter (where d = 2 and fd = 5) <> 0 or sum(n) filter (where d = 2 and fd = 6) <> 0 or sum(n) filter (where d = 3 and fd = 0) <> 0 or sum(n) filter (where d = 3 and fd = 1) <> 0 or sum(n) filter (where d = 3 and fd = 2) <> 0 or sum(n) filter (where d = 3 and fd = 3) <> 0 or sum(n) filter (where d = 3 and fd = 4) <> 0 or sum(n) filter (where d = 3 and fd = 5) <> 0 or sum(n) filter (where d = 3 and fd = 6) <> 0 or sum(n) filter (where d = 4 and fd = 0) <> 0 or sum(n) filter (where d = 4 and fd = 1) <> 0 or sum(n) filter (where d = 4 and fd = 2) <> 0 or sum(n) filter (where d = 4 and fd = 3) <> 0 or sum(n) filter (where d = 4 and fd = 4) <> 0 or sum(n) filter (where d = 4 and fd = 5) <> 0 or sum(n) filter (where d = 4 and fd = 6) <> 0 or sum(n) filter (where d = 5 and fd = 0) <> 0 or sum(n) filter (where d = 5 and fd = 1) <> 0 or sum(n) filter (where d = 5 and fd = 2) <> 0 or sum(n) filter (where d = 5 and fd = 3) <> 0 or sum(n) filter (where d = 5 and fd = 4) <> 0 or sum(n) filter (where d = 5 and fd = 5) <> 0 or sum(n) filter (where d = 5 and fd = 6) <> 0 or sum(n) filter (where d = 6 and fd = 0) <> 0 or sum(n) filter (where d = 6 and fd = 1) <> 0 or sum(n) filter (where d = 6 and fd = 2) <> 0 or sum(n) filter (where d = 6 and fd = 3) <> 0 or sum(n) filter (where d = 6 and fd = 4) <> 0 or sum(n) filter (where d = 6 and fd = 5) <> 0 or sum(n) filter (where d = 6 and fd = 6) <> 0;--> statement-breakpoint
ALTER TABLE "analytics_cohort_weeks" ADD CONSTRAINT "analytics_cohort_weeks_team_id_teams_id_fk" FOREIGN KEY ("team_id") REFERENCES "public"."teams"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "analytics_cohort_weeks_team_idx" ON "analytics_cohort_weeks" USING btree ("team_id");