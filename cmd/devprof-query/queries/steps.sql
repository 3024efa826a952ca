-- steps: each session's step times after its warm-up, as devprof analyze measures them
--
-- One row per session (run, host, session) with steps: how many steps,
-- how many of the first ones are warm-up, and the distribution of the
-- others' wall time in nanoseconds (percentiles by nearest rank).
-- The warm-up is analyze's: the first step, and the steps after it (at
-- most a quarter of all) while each takes more than 1.5 times the median
-- of the steps after that quarter; fewer than three steps have none.
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
)
select run, host, session,
       max(n) as steps,
       max(warmup) as warmup,
       count(*) as measured,
       cast(floor(sum(dur_ns) / count(*)) as bigint) as mean_ns,
       min(dur_ns) as min_ns,
       max(case when r = floor((50 * m + 99) / 100) then dur_ns end) as p50_ns,
       max(case when r = floor((90 * m + 99) / 100) then dur_ns end) as p90_ns,
       max(case when r = floor((99 * m + 99) / 100) then dur_ns end) as p99_ns,
       max(dur_ns) as max_ns
from steady
group by run, host, session
order by run, host, session
