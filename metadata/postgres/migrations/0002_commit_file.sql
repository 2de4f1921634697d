-- floe_commit_file records one object file and sequences all its batches in
-- one call (so one round trip, in the caller's implicit transaction).
--
-- Batches are given as parallel arrays, one element per batch, in file
-- order; p_pid < 0 or p_seq < 0 marks a batch without idempotence, and
-- p_pid, p_epoch and p_seq may be NULL when no batch has any. It
-- returns one row of arrays, one element per batch in the same order, and
-- the append time (unix ms, this server's clock):
--   o_base  the assigned base offset; NULL when refused or a duplicate;
--   o_dup   NULL when no batch is a duplicate; else per batch NULL, or the
--           original base offset of an idempotent producer's retry (>= 0),
--           or -i when it repeats batch i (1-based) of this same file;
--   o_err   0 accepted (or duplicate), 1 topic not found, 2 partition not
--           found, 3 out of order sequence, 4 producer fenced.
--
-- Concurrency: the partitions' rows are locked in (topic_id, partition)
-- order before anything else reads them — FOR UPDATE, or for a file without
-- idempotent batches by the UPDATE that advances them, run as a nested loop
-- over the batches sorted by partition — so concurrent commits serialise per
-- partition and never deadlock. producer_state rows are only touched under
-- their partition's lock.
--
-- Cost: everything is set-based except the idempotence check, a loop over
-- in-memory arrays that reads the table again only for a batch that is not
-- the next one expected (a retry, or an error). A file without idempotent
-- batches whose batches all have partitions of their own (the common case)
-- is one statement: lock and advance, clock, insert.

-- floe_tail returns the last n elements of a.
CREATE FUNCTION floe_tail(a anyarray, n integer) RETURNS anyarray
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT a[greatest(cardinality(a) - n + 1, 1):] $$;

-- floe_last_seq is the sequence of a batch's last record, wrapping past
-- 2^31-1 to 0 as Kafka does.
CREATE FUNCTION floe_last_seq(base integer, count integer) RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT (CASE WHEN base::bigint + count - 1 > 2147483647
                   THEN base::bigint + count - 1 - 2147483648
                   ELSE base::bigint + count - 1 END)::integer $$;

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
) RETURNS TABLE (o_base bigint[], o_dup bigint[], o_err smallint[], o_append_time bigint)
LANGUAGE plpgsql
-- Row estimates of unnest() are guesses; never let one buy a JIT compile.
SET jit = off
AS $fn$
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
    k_stored  smallint[]; -- epoch in producer_state; NULL: no state
    k_epoch   smallint[]; -- current epoch; NULL: no state
    k_last    integer[];  -- current last sequence
    -- Loop variables.
    i         integer;
    j         integer;
    k         integer;
    v_seq     integer;
    v_last    integer;
    v_epoch   smallint;
    v_seen    integer;
    v_dup     bigint;
    v_idem    boolean;
    v_guc     text[];
    v_pos     integer;
    l_ord     integer[];  -- plain files: the batches sequenced by the first pass
    v_found   bigint[];   -- per batch, NULL when its partition does not exist
BEGIN
    INSERT INTO files (key, size) VALUES (p_key, p_size) RETURNING id INTO v_file;

    v_idem := p_pid IS NOT NULL
              AND EXISTS (SELECT FROM unnest(p_pid, p_seq) AS u(pid, seq) WHERE u.pid >= 0 AND u.seq >= 0);
    IF v_idem THEN
        -- Lock the partitions in canonical order; they are advanced once
        -- the producers' batches are decided.
        SELECT array_agg(x.topic_id), array_agg(x.partition), array_agg(x.log_start_offset), array_agg(x.high_watermark)
          INTO l_topic, l_part, l_lso, l_hw
          FROM (SELECT p.topic_id, p.partition, p.log_start_offset, p.high_watermark
                  FROM partitions p
                 WHERE (p.topic_id, p.partition) IN (SELECT DISTINCT u.t, u.q FROM unnest(p_topic, p_part) AS u(t, q))
                 ORDER BY p.topic_id, p.partition
                   FOR UPDATE) x;
    ELSE
        -- No producer to check: every batch of an existing partition is
        -- accepted, so one statement locks and advances the partitions,
        -- inserts the batches and reads the clock. The UPDATE locks rows
        -- in the order its join yields them, so for this statement only
        -- the plans that yield them in key order are allowed: a nested
        -- loop, over the batches sorted by partition probing the primary
        -- key (or over the primary key in order) — no hash or merge join,
        -- no sequential or bitmap scan in physical order. (The statement
        -- has no other join.)
        --
        -- It joins one row per batch: a partition named by several batches
        -- of the file is changed once, by the first of them in file order
        -- (an UPDATE changes a row at most once; the later matches are
        -- skipped); the others are sequenced below, under the locks held.
        -- Its plan is the same whatever the arrays hold, so it is planned
        -- once per session (a generic plan), not at every call.
        v_guc := ARRAY[current_setting('enable_hashjoin'), current_setting('enable_mergejoin'),
                       current_setting('enable_seqscan'), current_setting('enable_bitmapscan'),
                       current_setting('plan_cache_mode')];
        PERFORM set_config('enable_hashjoin', 'off', true), set_config('enable_mergejoin', 'off', true),
                set_config('enable_seqscan', 'off', true), set_config('enable_bitmapscan', 'off', true),
                set_config('plan_cache_mode', 'force_generic_plan', true);
        -- unnest() in the select list runs the arrays in step without
        -- materialising each of them as unnest() in FROM does.
        WITH d AS (
            SELECT u.*
              FROM (SELECT unnest(p_topic) AS t, unnest(p_part) AS q, unnest(p_count) AS cnt,
                           unnest(p_byte_off) AS bo, unnest(p_byte_len) AS bl, unnest(p_max_ts) AS mts,
                           generate_series(1, n) AS ord) u
             ORDER BY u.t, u.q, u.ord
        ), upd AS (
            UPDATE partitions p SET high_watermark = p.high_watermark + d.cnt
              FROM d
             WHERE p.topic_id = d.t AND p.partition = d.q
            RETURNING d.*, p.high_watermark - d.cnt AS base, p.high_watermark AS hw
        ), clock AS (
            -- Read once every lock is held (upd has run to its end), so
            -- that append times follow offset order within a partition.
            SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint AS ms
              FROM (SELECT count(*) FROM upd) x
        ), ins AS (
            INSERT INTO batches (topic_id, partition, base_offset, last_offset, file_id,
                                 byte_offset, byte_length, record_count, max_timestamp, append_time)
            SELECT upd.t, upd.q, upd.base, upd.base + upd.cnt - 1, v_file, upd.bo, upd.bl, upd.cnt, upd.mts,
                   (SELECT clock.ms FROM clock)
              FROM upd
        )
        SELECT (SELECT clock.ms FROM clock), array_agg(upd.ord ORDER BY upd.ord), array_agg(upd.base ORDER BY upd.ord),
               string_agg(upd.t || ':' || upd.q || ':' || upd.hw, ',')
          INTO v_ms, l_ord, b_base, v_payload
          FROM upd;
        PERFORM set_config('enable_hashjoin', v_guc[1], true), set_config('enable_mergejoin', v_guc[2], true),
                set_config('enable_seqscan', v_guc[3], true), set_config('enable_bitmapscan', v_guc[4], true),
                set_config('plan_cache_mode', v_guc[5], true);

        IF cardinality(l_ord) IS DISTINCT FROM n THEN
            -- Some batches were left: their partition does not exist, or
            -- an earlier batch of the file advanced it.
            SELECT array_agg(r.base ORDER BY g.i)
              INTO b_base
              FROM generate_series(1, n) AS g(i)
              LEFT JOIN unnest(l_ord, b_base) AS r(ord, base) ON r.ord = g.i;
            WITH lo AS (
                SELECT u.ord, u.t, u.q, u.cnt, u.bo, u.bl, u.mts
                  FROM unnest(p_topic, p_part, p_count, p_byte_off, p_byte_len, p_max_ts, b_base)
                       WITH ORDINALITY AS u(t, q, cnt, bo, bl, mts, base, ord)
                 WHERE u.base IS NULL
            ), d AS (
                -- Only the partitions the first pass locked (one created
                -- since is not seen, as by the first pass).
                SELECT lo.t, lo.q, sum(lo.cnt) AS added
                  FROM lo
                 WHERE (lo.t, lo.q) IN (SELECT p_topic[o.o], p_part[o.o] FROM unnest(l_ord) AS o(o))
                 GROUP BY lo.t, lo.q
            ), upd AS (
                UPDATE partitions p SET high_watermark = p.high_watermark + d.added
                  FROM d
                 WHERE p.topic_id = d.t AND p.partition = d.q
                RETURNING p.topic_id AS t, p.partition AS q, p.high_watermark - d.added AS start
            ), b AS (
                SELECT lo.*, upd.start + sum(lo.cnt::bigint) OVER (PARTITION BY lo.t, lo.q ORDER BY lo.ord) - lo.cnt AS base
                  FROM lo JOIN upd ON upd.t = lo.t AND upd.q = lo.q
            ), ins AS (
                INSERT INTO batches (topic_id, partition, base_offset, last_offset, file_id,
                                     byte_offset, byte_length, record_count, max_timestamp, append_time)
                SELECT b.t, b.q, b.base, b.base + b.cnt - 1, v_file, b.bo, b.bl, b.cnt, b.mts, v_ms
                  FROM b
            )
            SELECT array_agg(coalesce(u.base, b.base) ORDER BY u.ord)
              INTO b_base
              FROM unnest(b_base) WITH ORDINALITY AS u(base, ord)
              LEFT JOIN b ON b.ord = u.ord;
            -- Offsets follow file order within each partition (the first
            -- pass took each partition's first batch: checked, not assumed).
            IF EXISTS (SELECT FROM (SELECT u.base, lag(u.base) OVER (PARTITION BY u.t, u.q ORDER BY u.ord) AS prev
                                      FROM unnest(p_topic, p_part, b_base) WITH ORDINALITY AS u(t, q, base, ord)
                                     WHERE u.base IS NOT NULL) x
                        WHERE x.base < x.prev) THEN
                RAISE EXCEPTION 'floe_commit_file: offsets out of file order';
            END IF;
            SELECT string_agg(p.topic_id || ':' || p.partition || ':' || p.high_watermark, ',')
              INTO v_payload
              FROM partitions p
             WHERE (p.topic_id, p.partition) IN (SELECT u.t, u.q FROM unnest(p_topic, p_part) AS u(t, q));
        END IF;
    END IF;

    IF v_idem THEN
        -- The clock is read once the locks are held, so that append times
        -- follow offset order within a partition.
        v_ms := floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint;
        SELECT array_agg(l.idx ORDER BY u.ord)
          INTO b_pidx
          FROM unnest(p_topic, p_part) WITH ORDINALITY AS u(t, q, ord)
          LEFT JOIN unnest(l_topic, l_part) WITH ORDINALITY AS l(t, q, idx) ON l.t = u.t AND l.q = u.q;
    END IF;

    -- Batches without a partition: refused. (Files without idempotent
    -- batches have offsets for all the others already.)
    b_err := array_fill(0::smallint, ARRAY[n]);
    v_found := CASE WHEN v_idem THEN b_pidx::bigint[] ELSE b_base END;
    IF array_position(v_found, NULL) IS NOT NULL THEN
        SELECT array_agg(CASE
                   WHEN u.f IS NOT NULL THEN 0
                   WHEN EXISTS (SELECT 1 FROM topics t WHERE t.id = u.t AND t.deleted_at IS NULL) THEN 2
                   ELSE 1 END::smallint ORDER BY u.ord)
          INTO b_err
          FROM unnest(p_topic, v_found) WITH ORDINALITY AS u(t, f, ord);
    END IF;

    -- Idempotence, in file order.
    IF v_idem THEN
        SELECT array_agg(d.t ORDER BY d.t, d.q, d.pid), array_agg(d.q ORDER BY d.t, d.q, d.pid),
               array_agg(d.pid ORDER BY d.t, d.q, d.pid)
          INTO k_t, k_q, k_pid
          FROM (SELECT DISTINCT u.t, u.q, u.pid
                  FROM unnest(p_topic, p_part, p_pid, p_seq, b_pidx) AS u(t, q, pid, seq, idx)
                 WHERE u.pid >= 0 AND u.seq >= 0 AND u.idx IS NOT NULL) d;
    END IF;
    IF k_t IS NOT NULL THEN
        SELECT array_agg(k2.kidx ORDER BY u.ord)
          INTO b_key
          FROM unnest(p_topic, p_part, p_pid, p_seq, b_pidx) WITH ORDINALITY AS u(t, q, pid, seq, idx, ord)
          LEFT JOIN unnest(k_t, k_q, k_pid) WITH ORDINALITY AS k2(t, q, pid, kidx)
            ON u.pid >= 0 AND u.seq >= 0 AND u.idx IS NOT NULL
           AND k2.t = u.t AND k2.q = u.q AND k2.pid = u.pid;

        -- One index probe per producer (OFFSET 0 keeps the planner from
        -- turning the lookups into a scan of the whole table).
        SELECT array_agg(st.epoch ORDER BY k2.kidx), array_agg(st.last_seq ORDER BY k2.kidx)
          INTO k_stored, k_last
          FROM unnest(k_t, k_q, k_pid) WITH ORDINALITY AS k2(t, q, pid, kidx)
          LEFT JOIN LATERAL (
                SELECT s.epoch, s.last_seqs[cardinality(s.last_seqs)] AS last_seq
                  FROM producer_state s
                 WHERE s.topic_id = k2.t AND s.partition = k2.q AND s.producer_id = k2.pid
                OFFSET 0) st ON true;
        k_epoch := k_stored;
        b_key[1] := b_key[1]; -- expand: O(1) element reads even with NULLs
        b_pidx[1] := b_pidx[1];

        FOR i IN 1 .. n LOOP
            k := b_key[i];
            CONTINUE WHEN k IS NULL;
            v_seq := p_seq[i];
            v_last := floe_last_seq(v_seq, p_count[i]);
            v_epoch := p_epoch[i];
            IF k_epoch[k] IS NULL THEN
                -- No state: a producer starts at sequence 0 (so a lost
                -- first batch cannot be skipped over).
                IF v_seq <> 0 THEN
                    b_err[i] := 3;
                    CONTINUE;
                END IF;
                k_epoch[k] := v_epoch;
            ELSIF v_epoch < k_epoch[k] THEN
                b_err[i] := 4;
                CONTINUE;
            ELSIF v_epoch > k_epoch[k] THEN
                IF v_seq <> 0 THEN
                    b_err[i] := 3;
                    CONTINUE;
                END IF;
                k_epoch[k] := v_epoch;
            ELSIF v_seq <> (CASE WHEN k_last[k] = 2147483647 THEN 0 ELSE k_last[k] + 1 END) THEN
                -- Not the next batch: a retry of one of the last five
                -- batches still in the log, or out of order. The batches
                -- of this file come first, newest first, then the stored ones.
                v_dup := NULL;
                v_seen := 0;
                FOR j IN REVERSE i - 1 .. 1 LOOP
                    IF b_key[j] = k AND b_err[j] = 0 AND p_epoch[j] = v_epoch
                       AND (b_dup IS NULL OR b_dup[j] IS NULL) THEN
                        v_seen := v_seen + 1;
                        EXIT WHEN v_seen > 5;
                        IF p_seq[j] = v_seq AND floe_last_seq(p_seq[j], p_count[j]) = v_last THEN
                            v_dup := -j;
                            EXIT;
                        END IF;
                    END IF;
                END LOOP;
                IF v_dup IS NULL AND v_seen < 5 AND k_stored[k] = v_epoch THEN
                    SELECT x.off INTO v_dup
                      FROM producer_state s,
                           unnest(s.base_seqs, s.last_seqs, s.base_offsets) WITH ORDINALITY AS x(bs, ls, off, o)
                     WHERE s.topic_id = k_t[k] AND s.partition = k_q[k] AND s.producer_id = k_pid[k]
                       AND x.bs = v_seq AND x.ls = v_last
                       AND x.o > cardinality(s.base_seqs) - (5 - v_seen)
                       AND x.off >= l_lso[b_pidx[i]];
                END IF;
                IF v_dup IS NULL THEN
                    b_err[i] := 3;
                ELSE
                    IF b_dup IS NULL THEN
                        b_dup := array_fill(NULL::bigint, ARRAY[n]);
                    END IF;
                    b_dup[i] := v_dup;
                END IF;
                CONTINUE;
            END IF;
            k_last[k] := v_last;
        END LOOP;
    END IF;

    -- Offsets: each partition's accepted batches follow its high watermark
    -- in file order. (Files without idempotent batches are done already.)
    IF v_idem THEN
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
          FROM (SELECT unnest(p_topic) AS t, unnest(p_part) AS q, unnest(b_base) AS base, unnest(p_count) AS cnt,
                       unnest(p_byte_off) AS bo, unnest(p_byte_len) AS bl, unnest(p_max_ts) AS mts) u
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
    END IF;

    -- Remember each producer's accepted batches of its current epoch; a
    -- new epoch forgets the old one's. Producers with state are updated,
    -- the others inserted.
    IF k_t IS NOT NULL THEN
        WITH n AS (
            SELECT u.t, u.q, u.pid, u.e, k_stored[u.k] AS stored,
                   floe_tail(array_agg(u.seq ORDER BY u.ord), 5) AS bs,
                   floe_tail(array_agg(floe_last_seq(u.seq, u.cnt) ORDER BY u.ord), 5) AS ls,
                   floe_tail(array_agg(u.base ORDER BY u.ord), 5) AS bo
              FROM unnest(p_topic, p_part, p_pid, p_epoch, p_seq, p_count, b_base, b_key)
                   WITH ORDINALITY AS u(t, q, pid, e, seq, cnt, base, k, ord)
             WHERE u.k IS NOT NULL AND u.base IS NOT NULL AND u.e = k_epoch[u.k]
             GROUP BY u.t, u.q, u.pid, u.e, u.k
        ), upd AS (
            UPDATE producer_state ps
               SET epoch = n.e,
                   base_seqs = CASE WHEN ps.epoch = n.e THEN floe_tail(ps.base_seqs || n.bs, 5) ELSE n.bs END,
                   last_seqs = CASE WHEN ps.epoch = n.e THEN floe_tail(ps.last_seqs || n.ls, 5) ELSE n.ls END,
                   base_offsets = CASE WHEN ps.epoch = n.e THEN floe_tail(ps.base_offsets || n.bo, 5) ELSE n.bo END
              FROM n
             WHERE n.stored IS NOT NULL
               AND ps.topic_id = n.t AND ps.partition = n.q AND ps.producer_id = n.pid
        )
        INSERT INTO producer_state (topic_id, partition, producer_id, epoch, base_seqs, last_seqs, base_offsets)
        SELECT n.t, n.q, n.pid, n.e, n.bs, n.ls, n.bo FROM n WHERE n.stored IS NULL;
    END IF;

    -- Announce the new high watermarks in notifications of at most 7000
    -- bytes (PostgreSQL's limit is 8000), cut between items; a file of more
    -- than 64 such pieces announces '*' (every partition may have changed).
    IF v_payload IS NOT NULL THEN
        IF length(v_payload) > 7000 * 64 THEN
            v_payload := '*';
        END IF;
        WHILE length(v_payload) > 7000 LOOP
            v_pos := 7001 - position(',' IN reverse(left(v_payload, 7000)));
            PERFORM pg_notify(p_channel, left(v_payload, v_pos - 1));
            v_payload := substr(v_payload, v_pos + 1);
        END LOOP;
        PERFORM pg_notify(p_channel, v_payload);
    END IF;

    RETURN QUERY SELECT b_base, b_dup, b_err, v_ms;
END;
$fn$;
