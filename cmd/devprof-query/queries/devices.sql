-- devices: each device's time from its first work to its last as compute, communication, memory and idle, as devprof analyze breaks it down
--
-- One row per session and device: the window from the device's first
-- work to its last (start_ns, wall_ns), and within it the union of its
-- kernels' intervals (compute), of its collectives' less compute
-- (communication), of its copies' and memsets' less both (memory), and
-- the rest (idle), in nanoseconds, with idle as a share of the window.
-- Work is classified as in kernels.sql. This is analyze's temporal
-- breakdown exactly; analyze's idle time by cause (host wait, kernel
-- wait, sync) follows each gap to its launch call and is not here.
-- Portable SQL: runs unchanged on DuckDB and Spark SQL.
with work as (
  select run, host, session, device, stream, track, id, name, start_ns, end_ns, dur_ns, kind, correlation_id,
         case
           when kind = 'kernel' then 'kernel'
           when kind = 'memcpy' or kind = 'memset' then 'memory'
           when kind <> 'unknown' then 'none'
           when instr(args, '"sync_type":') > 0 or instr(args, '"wait_on_stream":') > 0
                or instr(args, '"wait_on_cuda_event_record_corr_id":') > 0 then 'none'
           when copy_kind <> '' or instr(args, '"memcpy_details":') > 0 then 'memory'
           when instr(name, 'Synchroniz') > 0 or name like '% Sync' or name = 'MemoryAlloc' or name = 'MemoryFree' then 'none'
           when lower(name) like 'memcpy%' or lower(name) like 'memset%' or name like 'dma%' then 'memory'
           else 'kernel'
         end as what
  from kernels
  where device >= 0
),
on_stream as (
  select w.*,
         lead(start_ns) over (partition by run, host, session, device, stream, track order by start_ns, id) as next_start,
         lead(end_ns) over (partition by run, host, session, device, stream, track order by start_ns, id) as next_end
  from work w
  where what <> 'none'
),
device_work as (
  select run, host, session, device, start_ns, end_ns,
         case
           when what = 'memory' then 'memory'
           when lower(name) like 'nccl%' or lower(name) like 'rccl%'
                or instr(lower(name), 'all-reduce') > 0 or instr(lower(name), 'allreduce') > 0 or instr(lower(name), 'all_reduce') > 0
                or instr(lower(name), 'all-gather') > 0 or instr(lower(name), 'allgather') > 0 or instr(lower(name), 'all_gather') > 0
                or instr(lower(name), 'reduce-scatter') > 0 or instr(lower(name), 'reducescatter') > 0 or instr(lower(name), 'reduce_scatter') > 0
                or instr(lower(name), 'all-to-all') > 0 or instr(lower(name), 'alltoall') > 0 or instr(lower(name), 'all_to_all') > 0
                or instr(lower(name), 'collective-permute') > 0 or instr(lower(name), 'sendrecv') > 0
             then 'communication' else 'compute'
         end as category
  from on_stream
  where not (kind = 'unknown' and what = 'kernel' and correlation_id = 0 and next_start is not null
             and next_start < end_ns and next_end <= end_ns)
),
covered as (
  -- In start order, each interval adds to a union what it reaches past
  -- every earlier one's end: one pass, a running max per union
  -- (compute; compute and communication; all work).
  select d.*,
         max(case when category = 'compute' then end_ns end) over w as reach_compute,
         max(case when category <> 'memory' then end_ns end) over w as reach_compute_comm,
         max(end_ns) over w as reach_all
  from device_work d
  window w as (partition by run, host, session, device order by start_ns, end_ns rows between unbounded preceding and 1 preceding)
),
unions as (
  select run, host, session, device,
         sum(case when category = 'compute' then greatest(0, end_ns - greatest(start_ns, coalesce(reach_compute, start_ns))) else 0 end) as compute_ns,
         sum(case when category <> 'memory' then greatest(0, end_ns - greatest(start_ns, coalesce(reach_compute_comm, start_ns))) else 0 end) as compute_comm_ns,
         sum(greatest(0, end_ns - greatest(start_ns, coalesce(reach_all, start_ns)))) as busy_ns
  from covered
  group by run, host, session, device
),
windows as (
  select run, host, session, device, min(start_ns) as start_ns, max(end_ns) - min(start_ns) as wall_ns
  from device_work
  group by run, host, session, device
)
select w.run, w.host, w.session, w.device, w.start_ns, w.wall_ns,
       u.compute_ns,
       u.compute_comm_ns - u.compute_ns as communication_ns,
       u.busy_ns - u.compute_comm_ns as memory_ns,
       w.wall_ns - u.busy_ns as idle_ns,
       case when w.wall_ns > 0 then round(100.0 * (w.wall_ns - u.busy_ns) / w.wall_ns, 1) end as idle_pct
from windows w
join unions u on w.run = u.run and w.host = u.host and w.session = u.session and w.device = u.device
order by w.run, w.host, w.session, w.device
