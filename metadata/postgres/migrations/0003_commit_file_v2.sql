-- floe_commit_file_v2: floe_commit_file (0002) made idempotent by file key,
-- with unknown producers refused, a lock order that does not depend on the
-- plan, and the notification optional. floe_commit_file keeps its
-- signature for agents of the previous release and now calls this one.
--
-- Arguments as floe_commit_file's, except p_channel: NULL sends no
-- notification (the caller announces the commit itself, outside the
-- transaction, from o_notice). Results as floe_commit_file's, plus:
--   o_err     5 unknown producer: an idempotent batch's producer id was never
--             issued (it is above producer_ids' last value);
--   o_replay  true when p_key was already committed: nothing was written and
--             o_base, o_dup, o_err, o_append_time are the first commit's,
--             as stored with the file (all NULL for a file committed before
--             results were stored);
--   o_notice  the new high watermarks, "topic:partition:hw" items joined by
--             ',' (NULL when nothing was appended).
--
-- Idempotence: the files row is inserted first, ON CONFLICT DO NOTHING, so
-- a second commit of a key waits for a concurrent first one and then reads
-- its stored results; the results are stored in the row before returning.
--
-- Concurrency: the partitions' rows are locked first, by a SELECT ... ORDER
-- BY topic_id, partition FOR UPDATE whose locking runs above its sort, so
-- the order never depends on the plan (no planner settings); everything
-- after works on locked rows.

-- The first commit's results, returned to a commit of the same key.
ALTER TABLE files
    ADD COLUMN r_base        bigint[],
    ADD COLUMN r_dup         bigint[],
    ADD COLUMN r_err         smallint[],
    ADD COLUMN r_append_time bigint;
-- Room for the HOT update that stores the results.
ALTER TABLE files SET (fillfactor = 90);

CREATE FUNCTION floe_commit_file_v2(
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
) RETURNS TABLE (o_base bigint[], o_dup bigint[], o_err smallint[], o_append_time bigint, o_replay boolean, o_notice text)
LANGUAGE plpgsql
-- Row estimates of unnest() are guesses; never let one buy a JIT compile.
SET jit = off
-- Plans do not depend on what the arrays hold: plan each statement once
-- per session (custom plans cost more to make than to run). This is cost
-- only; the lock order does not depend on any plan.
SET plan_cache_mode = force_generic_plan
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
    v_maxpid  bigint;     -- the last producer id issued
    v_pos     integer;
    v_notice  text;
    l_ord     integer[];  -- plain files: the batches given offsets, by ordinal
    v_found   bigint[];   -- per batch, NULL when its partition does not exist
BEGIN
    INSERT INTO files (key, size) VALUES (p_key, p_size) ON CONFLICT (key) DO NOTHING RETURNING id INTO v_file;
    IF v_file IS NULL THEN
        RETURN QUERY SELECT f.r_base, f.r_dup, f.r_err, f.r_append_time, true, NULL::text
                       FROM files f WHERE f.key = p_key;
        RETURN;
    END IF;

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
        -- accepted. Lock the partitions in canonical order (LockRows runs
        -- above the Sort, whatever the plan), then one statement advances
        -- them, inserts the batches and reads the clock.
        PERFORM FROM (SELECT p.topic_id
                        FROM partitions p
                       WHERE (p.topic_id, p.partition) IN (SELECT u.t, u.q FROM unnest(p_topic, p_part) AS u(t, q))
                       ORDER BY p.topic_id, p.partition
                         FOR UPDATE) x;
        -- unnest() in the select list runs the arrays in step without
        -- materialising each of them as unnest() in FROM does.
        WITH d AS (
            SELECT unnest(p_topic) AS t, unnest(p_part) AS q, unnest(p_count) AS cnt,
                   unnest(p_byte_off) AS bo, unnest(p_byte_len) AS bl, unnest(p_max_ts) AS mts,
                   generate_series(1, n) AS ord
        ), agg AS (
            SELECT d.t, d.q, sum(d.cnt) AS added FROM d GROUP BY d.t, d.q
        ), upd AS (
            -- One row per partition: whatever the join's plan, each
            -- partition's batches follow its old high watermark in file order.
            UPDATE partitions p SET high_watermark = p.high_watermark + agg.added
              FROM agg
             WHERE p.topic_id = agg.t AND p.partition = agg.q
            RETURNING p.topic_id AS t, p.partition AS q, p.high_watermark - agg.added AS start, p.high_watermark AS hw
        ), b AS (
            SELECT d.*, upd.start + sum(d.cnt::bigint) OVER (PARTITION BY d.t, d.q ORDER BY d.ord) - d.cnt AS base
              FROM d JOIN upd ON upd.t = d.t AND upd.q = d.q
        ), clock AS (
            -- The locks are held: append times follow offset order within
            -- a partition.
            SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint AS ms
        ), ins AS (
            INSERT INTO batches (topic_id, partition, base_offset, last_offset, file_id,
                                 byte_offset, byte_length, record_count, max_timestamp, append_time)
            SELECT b.t, b.q, b.base, b.base + b.cnt - 1, v_file, b.bo, b.bl, b.cnt, b.mts, (SELECT clock.ms FROM clock)
              FROM b
        )
        SELECT (SELECT clock.ms FROM clock), array_agg(b.ord ORDER BY b.ord), array_agg(b.base ORDER BY b.ord),
               (SELECT string_agg(upd.t || ':' || upd.q || ':' || upd.hw, ',') FROM upd)
          INTO v_ms, l_ord, b_base, v_payload
          FROM b;

        IF cardinality(l_ord) IS DISTINCT FROM n THEN
            -- Batches of partitions that do not exist have no offset.
            SELECT array_agg(r.base ORDER BY g.i)
              INTO b_base
              FROM generate_series(1, n) AS g(i)
              LEFT JOIN unnest(l_ord, b_base) AS r(ord, base) ON r.ord = g.i;
        END IF;
    END IF;

    IF v_idem THEN
        -- The clock is read once the locks are held, so that append times
        -- follow offset order within a partition.
        v_ms := floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint;
        -- Producer ids are issued in order: one above the last is unknown.
        SELECT CASE WHEN s.is_called THEN s.last_value ELSE 0 END INTO v_maxpid FROM producer_ids s;
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

    -- Idempotent batches of producers never issued: refused.
    IF v_idem AND EXISTS (SELECT FROM unnest(p_pid, p_seq) AS u(pid, seq) WHERE u.pid > v_maxpid AND u.seq >= 0) THEN
        SELECT array_agg(CASE WHEN u.e = 0 AND u.pid > v_maxpid AND u.seq >= 0 THEN 5 ELSE u.e END::smallint ORDER BY u.ord)
          INTO b_err
          FROM unnest(b_err, p_pid, p_seq) WITH ORDINALITY AS u(e, pid, seq, ord);
    END IF;

    -- Idempotence, in file order.
    IF v_idem THEN
        SELECT array_agg(d.t ORDER BY d.t, d.q, d.pid), array_agg(d.q ORDER BY d.t, d.q, d.pid),
               array_agg(d.pid ORDER BY d.t, d.q, d.pid)
          INTO k_t, k_q, k_pid
          FROM (SELECT DISTINCT u.t, u.q, u.pid
                  FROM unnest(p_topic, p_part, p_pid, p_seq, b_pidx) AS u(t, q, pid, seq, idx)
                 WHERE u.pid >= 0 AND u.pid <= v_maxpid AND u.seq >= 0 AND u.idx IS NOT NULL) d;
    END IF;
    IF k_t IS NOT NULL THEN
        SELECT array_agg(k2.kidx ORDER BY u.ord)
          INTO b_key
          FROM unnest(p_topic, p_part, p_pid, p_seq, b_pidx) WITH ORDINALITY AS u(t, q, pid, seq, idx, ord)
          LEFT JOIN unnest(k_t, k_q, k_pid) WITH ORDINALITY AS k2(t, q, pid, kidx)
            ON u.pid >= 0 AND u.pid <= v_maxpid AND u.seq >= 0 AND u.idx IS NOT NULL
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
    v_notice := v_payload;
    IF v_payload IS NOT NULL AND p_channel IS NOT NULL THEN
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

    -- Stored for a commit of the same key (a HOT update: no indexed column).
    UPDATE files SET r_base = b_base, r_dup = b_dup, r_err = b_err, r_append_time = v_ms WHERE id = v_file;

    RETURN QUERY SELECT b_base, b_dup, b_err, v_ms, false, v_notice;
END;
$fn$;

-- The previous release's entry point, same signature and results: it now
-- commits through floe_commit_file_v2 (so it is idempotent by key too, and
-- notifies on p_channel inside the transaction as it always did). Its
-- callers know refusal codes 0..4 only: an unknown producer reads as an out
-- of order sequence, the refusal they give for a producer without state.
CREATE OR REPLACE FUNCTION floe_commit_file(
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
LANGUAGE sql
AS $fn$
    SELECT v.o_base, v.o_dup,
           (SELECT array_agg(CASE WHEN e.c = 5 THEN 3 ELSE e.c END::smallint ORDER BY e.ord)
              FROM unnest(v.o_err) WITH ORDINALITY AS e(c, ord)),
           v.o_append_time
      FROM floe_commit_file_v2(p_key, p_size, p_topic, p_part, p_byte_off, p_byte_len, p_count, p_max_ts,
                               p_pid, p_epoch, p_seq, p_channel) v
$fn$;
