-- kernels: each session's kernels by name, the most total time first, as devprof analyze ranks them
--
-- One row per session and kernel name, the top 10 names of each session
-- by total time (rank 1 the most): its category (compute or
-- communication), count, total, mean and nearest-rank p50 and p99 in
-- nanoseconds. A piece of work counts as analyze counts it: on a device
-- (device >= 0), of kind kernel, or of kind unknown (a trace that does
-- not say, such as a .pftrace's device slices) when it is neither a
-- wait, an allocation or a copy by its arguments and name, nor a range a
-- profiler annotated around later work on its stream (a slice with no
-- launch that encloses the next one). Collectives (NCCL, RCCL, XLA's
-- all-reduce and the like, by name) are communication.
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
kernel_work as (
  select run, host, session, name, dur_ns,
         case
           when lower(name) like 'nccl%' or lower(name) like 'rccl%'
                or instr(lower(name), 'all-reduce') > 0 or instr(lower(name), 'allreduce') > 0 or instr(lower(name), 'all_reduce') > 0
                or instr(lower(name), 'all-gather') > 0 or instr(lower(name), 'allgather') > 0 or instr(lower(name), 'all_gather') > 0
                or instr(lower(name), 'reduce-scatter') > 0 or instr(lower(name), 'reducescatter') > 0 or instr(lower(name), 'reduce_scatter') > 0
                or instr(lower(name), 'all-to-all') > 0 or instr(lower(name), 'alltoall') > 0 or instr(lower(name), 'all_to_all') > 0
                or instr(lower(name), 'collective-permute') > 0 or instr(lower(name), 'sendrecv') > 0
             then 'communication' else 'compute'
         end as category
  from on_stream
  where what = 'kernel'
    and not (kind = 'unknown' and correlation_id = 0 and next_start is not null
             and next_start < end_ns and next_end <= end_ns)
),
ranked as (
  select run, host, session, name, category, dur_ns,
         row_number() over (partition by run, host, session, name order by dur_ns) as r,
         count(*) over (partition by run, host, session, name) as m
  from kernel_work
),
by_name as (
  select run, host, session, name,
         max(category) as category,
         count(*) as count,
         sum(dur_ns) as total_ns,
         cast(floor(sum(dur_ns) / count(*)) as bigint) as mean_ns,
         max(case when r = floor((50 * m + 99) / 100) then dur_ns end) as p50_ns,
         max(case when r = floor((99 * m + 99) / 100) then dur_ns end) as p99_ns
  from ranked
  group by run, host, session, name
),
top_names as (
  select b.*, row_number() over (partition by run, host, session order by total_ns desc, name) as rank
  from by_name b
)
select run, host, session, rank, name, category, count, total_ns, mean_ns, p50_ns, p99_ns
from top_names
where rank <= 10
order by run, host, session, rank
