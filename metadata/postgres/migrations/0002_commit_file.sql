-- floe_commit_file records one object file and sequences all its batches in
-- one call (so one round trip, in the caller's implicit transaction).
--
-- Batches are given as parallel arrays, one element per batch, in file
-- order. It returns one row per batch, in the same order: the base offset
-- (-1 when refused), the append time (unix ms, this server's clock), whether
-- the batch is an idempotent producer's duplicate (then base_offset is the
-- original one and nothing was written), and an error code:
--   0 accepted, 1 topic not found, 2 partition not found,
--   3 out of order sequence, 4 producer fenced.
--
-- Concurrency: the partitions' rows are locked FOR UPDATE in (topic_id,
-- partition) order before anything else reads them, so concurrent commits
-- serialise per partition and never deadlock. producer_state rows are only
-- touched under their partition's lock.
--
-- Cost: everything is set-based except the idempotence check, a loop over
-- in-memory arrays that only runs when the file holds idempotent batches.
CREATE FUNCTION floe_commit_file(
    p_key      text,
    p_size     bigint,
    p_topic    bigint[],
    p_part     integer[],
    p_byte_off bigint[],
    p_byte_len bigint[],
    p_count    integer[],
    p_max_ts   bigint[],
    p_pid      bigint[],
    p_epoch    smallint[],
    p_seq      integer[],
    p_channel  text
) RETURNS TABLE (base_offset bigint, append_time bigint, duplicate boolean, error_code smallint)
LANGUAGE plpgsql AS $fn$
DECLARE
    n         integer := cardinality(p_topic);
    v_file    bigint;
    v_ms      bigint;
    v_payload text;
    -- The locked partitions, in (topic_id, partition) order.
    l_topic   bigint[];
    l_part    integer[];
    l_lso     bigint[];
    l_hw      bigint[];
    -- Per batch, in file order.
    b_pidx    integer[];  -- index into l_*; NULL when the partition does not exist
    b_err     smallint[];
    b_dup     bigint[];   -- duplicate of: offset >= 0, or -ordinal of an earlier batch of this file
    b_base    bigint[];   -- assigned base offset; NULL when refused or duplicate
    b_key     integer[];  -- index into k_*; NULL when not idempotent
    -- Idempotent producers touched by this file: (topic, partition, producer).
    k_t       bigint[];
    k_q       integer[];
    k_pid     bigint[];
    k_epoch   smallint[]; -- NULL: no state yet
    k_n       integer[];  -- number of remembered batches (<= 5)
    k_dirty   boolean[];
    -- The remembered batches of key k are at (k-1)*5+1 .. (k-1)*5+k_n[k], oldest first.
    e_bs      integer[];
    e_ls      bigint[];
    e_off     bigint[];   -- base offset, or -ordinal of a batch of this file
    -- Loop variables.
    i         integer;
    j         integer;
    k         integer;
    e         integer;
    v_seq     bigint;
    v_last    bigint;
    v_prev    bigint;
    v_epoch   smallint;
    v_found   boolean;
BEGIN
    INSERT INTO files (key, size) VALUES (p_key, p_size) RETURNING id INTO v_file;

    -- Lock the partitions in canonical order.
    SELECT array_agg(x.topic_id ORDER BY x.topic_id, x.partition),
           array_agg(x.partition ORDER BY x.topic_id, x.partition),
           array_agg(x.log_start_offset ORDER BY x.topic_id, x.partition),
           array_agg(x.high_watermark ORDER BY x.topic_id, x.partition)
      INTO l_topic, l_part, l_lso, l_hw
      FROM (SELECT p.topic_id, p.partition, p.log_start_offset, p.high_watermark
              FROM partitions p
             WHERE (p.topic_id, p.partition) IN (SELECT DISTINCT u.t, u.q FROM unnest(p_topic, p_part) AS u(t, q))
             ORDER BY p.topic_id, p.partition
               FOR UPDATE) x;

    -- The clock is read once the locks are held, so that append times
    -- follow offset order within a partition.
    v_ms := floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint;

    SELECT array_agg(l.idx ORDER BY u.ord)
      INTO b_pidx
      FROM unnest(p_topic, p_part) WITH ORDINALITY AS u(t, q, ord)
      LEFT JOIN unnest(l_topic, l_part) WITH ORDINALITY AS l(t, q, idx) ON l.t = u.t AND l.q = u.q;

    b_err := array_fill(0::smallint, ARRAY[n]);
    IF array_position(b_pidx, NULL) IS NOT NULL THEN
        SELECT array_agg(CASE
                   WHEN u.idx IS NOT NULL THEN 0
                   WHEN EXISTS (SELECT 1 FROM topics t WHERE t.id = u.t AND t.deleted_at IS NULL) THEN 2
                   ELSE 1 END::smallint ORDER BY u.ord)
          INTO b_err
          FROM unnest(p_topic, b_pidx) WITH ORDINALITY AS u(t, idx, ord);
    END IF;

    -- Idempotence, in file order.
    SELECT array_agg(d.t ORDER BY d.t, d.q, d.pid), array_agg(d.q ORDER BY d.t, d.q, d.pid),
           array_agg(d.pid ORDER BY d.t, d.q, d.pid)
      INTO k_t, k_q, k_pid
      FROM (SELECT DISTINCT u.t, u.q, u.pid
              FROM unnest(p_topic, p_part, p_pid, p_seq, b_pidx) AS u(t, q, pid, seq, idx)
             WHERE u.pid >= 0 AND u.seq >= 0 AND u.idx IS NOT NULL) d;
    IF k_t IS NOT NULL THEN
        SELECT array_agg(k2.kidx ORDER BY u.ord)
          INTO b_key
          FROM unnest(p_topic, p_part, p_pid, p_seq, b_pidx) WITH ORDINALITY AS u(t, q, pid, seq, idx, ord)
          LEFT JOIN unnest(k_t, k_q, k_pid) WITH ORDINALITY AS k2(t, q, pid, kidx)
            ON u.pid >= 0 AND u.seq >= 0 AND u.idx IS NOT NULL
           AND k2.t = u.t AND k2.q = u.q AND k2.pid = u.pid;

        SELECT array_agg(s.epoch ORDER BY k2.kidx) FILTER (WHERE g.j = 1),
               array_agg(coalesce(cardinality(s.base_seqs), 0) ORDER BY k2.kidx) FILTER (WHERE g.j = 1),
               array_agg(s.base_seqs[g.j] ORDER BY k2.kidx, g.j),
               array_agg(s.last_seqs[g.j]::bigint ORDER BY k2.kidx, g.j),
               array_agg(s.base_offsets[g.j] ORDER BY k2.kidx, g.j)
          INTO k_epoch, k_n, e_bs, e_ls, e_off
          FROM unnest(k_t, k_q, k_pid) WITH ORDINALITY AS k2(t, q, pid, kidx)
          LEFT JOIN producer_state s
            ON s.topic_id = k2.t AND s.partition = k2.q AND s.producer_id = k2.pid
         CROSS JOIN generate_series(1, 5) AS g(j);
        k_dirty := array_fill(false, ARRAY[cardinality(k_t)]);

        FOR i IN 1 .. n LOOP
            k := b_key[i];
            CONTINUE WHEN k IS NULL;
            e := (k - 1) * 5;
            v_seq := p_seq[i];
            v_last := v_seq + p_count[i] - 1;
            IF v_last > 2147483647 THEN
                v_last := v_last - 2147483648;
            END IF;
            v_epoch := p_epoch[i];
            IF k_epoch[k] IS NULL THEN
                -- First batch we know of: any sequence starts the state.
                k_epoch[k] := v_epoch;
                k_n[k] := 0;
            ELSIF v_epoch < k_epoch[k] THEN
                b_err[i] := 4;
                CONTINUE;
            ELSIF v_epoch > k_epoch[k] THEN
                IF v_seq <> 0 THEN
                    b_err[i] := 3;
                    CONTINUE;
                END IF;
                k_epoch[k] := v_epoch;
                k_n[k] := 0;
            ELSE
                v_found := false;
                FOR j IN 1 .. k_n[k] LOOP
                    IF e_bs[e + j] = v_seq AND e_ls[e + j] = v_last
                       AND (e_off[e + j] < 0 OR e_off[e + j] >= l_lso[b_pidx[i]]) THEN
                        IF b_dup IS NULL THEN
                            b_dup := array_fill(NULL::bigint, ARRAY[n]);
                        END IF;
                        b_dup[i] := e_off[e + j];
                        v_found := true;
                        EXIT;
                    END IF;
                END LOOP;
                CONTINUE WHEN v_found;
                IF k_n[k] > 0 THEN
                    v_prev := e_ls[e + k_n[k]];
                    IF v_seq <> CASE WHEN v_prev = 2147483647 THEN 0 ELSE v_prev + 1 END THEN
                        b_err[i] := 3;
                        CONTINUE;
                    END IF;
                END IF;
            END IF;
            -- Accepted: remember it (its offset is resolved below).
            IF k_n[k] = 5 THEN
                FOR j IN 1 .. 4 LOOP
                    e_bs[e + j] := e_bs[e + j + 1];
                    e_ls[e + j] := e_ls[e + j + 1];
                    e_off[e + j] := e_off[e + j + 1];
                END LOOP;
                k_n[k] := 4;
            END IF;
            k_n[k] := k_n[k] + 1;
            e_bs[e + k_n[k]] := v_seq;
            e_ls[e + k_n[k]] := v_last;
            e_off[e + k_n[k]] := -i;
            k_dirty[k] := true;
        END LOOP;
    END IF;

    -- Offsets: each partition's accepted batches follow its high watermark
    -- in file order.
    SELECT array_agg(CASE WHEN y.acc THEN l_hw[y.idx] + y.run - y.cnt END ORDER BY y.ord)
      INTO b_base
      FROM (SELECT x.ord, x.idx, x.cnt, x.acc,
                   sum(CASE WHEN x.acc THEN x.cnt ELSE 0 END) OVER (PARTITION BY x.idx ORDER BY x.ord) AS run
              FROM (SELECT u.ord, u.idx, u.cnt::bigint AS cnt,
                           (u.idx IS NOT NULL AND u.err = 0 AND u.dup IS NULL) AS acc
                      FROM unnest(b_pidx, p_count, b_err, b_dup) WITH ORDINALITY AS u(idx, cnt, err, dup, ord)) x) y;

    INSERT INTO batches (topic_id, partition, base_offset, last_offset, file_id,
                         byte_offset, byte_length, record_count, max_timestamp, append_time)
    SELECT u.t, u.q, u.base, u.base + u.cnt - 1, v_file, u.bo, u.bl, u.cnt, u.mts, v_ms
      FROM unnest(p_topic, p_part, b_base, p_count, p_byte_off, p_byte_len, p_max_ts)
           AS u(t, q, base, cnt, bo, bl, mts)
     WHERE u.base IS NOT NULL;

    WITH s AS (
        SELECT l_topic[u.idx] AS t, l_part[u.idx] AS q, l_hw[u.idx] + sum(u.cnt) AS hw
          FROM unnest(b_pidx, b_base, p_count) AS u(idx, base, cnt)
         WHERE u.base IS NOT NULL
         GROUP BY u.idx
    ), upd AS (
        UPDATE partitions p SET high_watermark = s.hw
          FROM s
         WHERE p.topic_id = s.t AND p.partition = s.q
        RETURNING p.topic_id, p.partition, p.high_watermark
    )
    SELECT string_agg(upd.topic_id || ':' || upd.partition || ':' || upd.high_watermark, ',')
      INTO v_payload
      FROM upd;

    IF k_t IS NOT NULL THEN
        INSERT INTO producer_state AS ps (topic_id, partition, producer_id, epoch, base_seqs, last_seqs, base_offsets)
        SELECT k2.t, k2.q, k2.pid, k_epoch[k2.kidx],
               array_agg(e_bs[(k2.kidx - 1) * 5 + g.j] ORDER BY g.j),
               array_agg(e_ls[(k2.kidx - 1) * 5 + g.j]::integer ORDER BY g.j),
               array_agg(CASE WHEN e_off[(k2.kidx - 1) * 5 + g.j] < 0
                              THEN b_base[-e_off[(k2.kidx - 1) * 5 + g.j]]
                              ELSE e_off[(k2.kidx - 1) * 5 + g.j] END ORDER BY g.j)
          FROM unnest(k_t, k_q, k_pid) WITH ORDINALITY AS k2(t, q, pid, kidx)
         CROSS JOIN LATERAL generate_series(1, k_n[k2.kidx]) AS g(j)
         WHERE k_dirty[k2.kidx]
         GROUP BY k2.t, k2.q, k2.pid, k2.kidx
        ON CONFLICT (topic_id, partition, producer_id) DO UPDATE
           SET epoch = EXCLUDED.epoch, base_seqs = EXCLUDED.base_seqs,
               last_seqs = EXCLUDED.last_seqs, base_offsets = EXCLUDED.base_offsets;
    END IF;

    IF v_payload IS NOT NULL THEN
        IF octet_length(v_payload) > 7000 THEN
            v_payload := '*';
        END IF;
        PERFORM pg_notify(p_channel, v_payload);
    END IF;

    RETURN QUERY
    SELECT CASE WHEN u.dup IS NULL THEN coalesce(u.base, -1)
                WHEN u.dup < 0 THEN b_base[-u.dup]
                ELSE u.dup END,
           v_ms,
           u.dup IS NOT NULL,
           u.err
      FROM unnest(b_base, b_dup, b_err) WITH ORDINALITY AS u(base, dup, err, ord)
     ORDER BY u.ord;
END;
$fn$;
