-- stragglers: each run's hosts side by side, the straggling ones marked, as devprof analyze names them across hosts
--
-- One row per session (a host's trace) of each run with steps: its
-- steps after the warm-up (as in steps.sql) and their nearest-rank
-- median, the run's median host's median (the lower median over its
-- hosts), how far the host's median is above it (excess, a fraction)
-- and whether it is a straggler: more than 10% slower, in a run of two
-- or more hosts with steps (analyze's -straggler 10; edit the 0.10 below
-- for another threshold). The slowest first within each run.
-- Portable SQL: runs unchanged on DuckDB and Spark SQL.
with ordered as (
  select run, host, session, step_num, dur_ns,
         row_number() over (partition by run, host, session order by start_ns, span_id) as i,
         count(*) over (partition by run, host, session) as n
  from steps
),
bounded as (
  -- limit: how many first steps may be warm-up
  select o.*, cast(greatest(1, floor(n / 4)) as bigint) as lim from ordered o
),
after_limit as (
  select run, host, session, dur_ns,
         row_number() over (partition by run, host, session order by dur_ns) as r,
         count(*) over (partition by run, host, session) as m
  from bounded
  where i > lim
),
rest_median as (
  select run, host, session, max(case when r = floor((50 * m + 99) / 100) then dur_ns end) as med
  from after_limit
  group by run, host, session
),
warm as (
  -- the first step at or after the second that is not over 1.5 medians ends the warm-up
  select b.run, b.host, b.session,
         case when max(b.n) < 3 then cast(0 as bigint)
              else coalesce(min(case when b.i >= 2 and b.i <= b.lim and b.dur_ns <= 1.5 * rm.med then b.i end), max(b.lim) + 1) - 1
         end as warmup
  from bounded b
  join rest_median rm on b.run = rm.run and b.host = rm.host and b.session = rm.session
  group by b.run, b.host, b.session
),
steady as (
  select o.run, o.host, o.session, o.step_num, o.dur_ns, o.n, w.warmup,
         row_number() over (partition by o.run, o.host, o.session order by o.dur_ns) as r,
         count(*) over (partition by o.run, o.host, o.session) as m
  from ordered o
  join warm w on o.run = w.run and o.host = w.host and o.session = w.session
  where o.i > w.warmup
),
per_host as (
  select run, host, session, count(*) as steps,
         max(case when r = floor((50 * m + 99) / 100) then dur_ns end) as p50_ns
  from steady
  group by run, host, session
),
ranked_hosts as (
  select p.*,
         row_number() over (partition by run order by p50_ns, host, session) as k,
         count(*) over (partition by run) as hosts
  from per_host p
),
run_median as (
  select run, max(case when k = floor((hosts - 1) / 2) + 1 then p50_ns end) as median_ns, max(hosts) as hosts
  from ranked_hosts
  group by run
)
select p.run, p.host, p.session, p.steps, p.p50_ns, rm.median_ns,
       case when rm.median_ns > 0 then (p.p50_ns - rm.median_ns) / rm.median_ns end as excess,
       case when rm.hosts > 1 and rm.median_ns > 0 then (p.p50_ns - rm.median_ns) / rm.median_ns > 0.10 else false end as straggler
from per_host p
join run_median rm on p.run = rm.run
order by p.run, excess desc, p.host, p.session
