-- Frees the slots ended attempts held in their tenants, locked after the batches and
-- groups (one order of locking across completions).
--
-- $1 tenant ids (bigint[])
-- $2 slots freed in each (int[], matching $1)
-- $3 the slot time their attempts held, in microseconds (bigint[], matching $1)
-- $4 the CPU time their attempts used, in microseconds (bigint[], matching $1)
-- $5 the memory their attempts held, in MiB-seconds (float8[], matching $1)
UPDATE tenants AS n SET running = n.running - u.n, slot_micros = n.slot_micros + u.held,
    cpu_micros = n.cpu_micros + u.cpu, memory_mib_seconds = n.memory_mib_seconds + u.memory
FROM unnest($1::bigint[], $2::int[], $3::bigint[], $4::bigint[], $5::float8[])
    AS u(id, n, held, cpu, memory)
WHERE n.id = u.id
