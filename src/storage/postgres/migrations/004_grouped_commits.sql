-- 004: grouped room commits. Under load a node sends the commits of several rooms as one
-- statement: one transaction, one WAL flush and one round trip for all of them
-- (src/storage/postgres/statement-group.ts). Each commit in the group runs in its own
-- subtransaction through chatroom_try_commit_room, so one that fails (stale version, bad seq,
-- missing room) leaves no trace and does not fail the others; it is answered with its error
-- code instead of raising. A room whose row another transaction holds is not waited for
-- (NOWAIT, answered 55P03): the node commits that one alone, so one busy room never holds up a
-- whole group. The commit itself is chatroom_commit_room's, unchanged.
CREATE FUNCTION chatroom_try_commit_room(
  p_room_id text, p_expected bigint, p_commit uuid,
  p_state json, p_summary json, p_archived boolean, p_member_ids text[],
  p_seqs bigint[], p_ids text[], p_records json[], p_sender_ids text[], p_roles text[],
  p_visible boolean[], p_deleted boolean[], p_client_msg_ids text[], p_search text[],
  p_deadline timestamptz, p_turn_key text, p_notify boolean, p_events text,
  OUT new_version bigint, OUT new_last_seq bigint, OUT error_code text, OUT error_message text
) LANGUAGE plpgsql AS $$
BEGIN
  PERFORM 1 FROM rooms WHERE room_id = p_room_id FOR UPDATE NOWAIT;
  SELECT c.new_version, c.new_last_seq INTO new_version, new_last_seq
    FROM chatroom_commit_room(p_room_id, p_expected, p_commit, p_state, p_summary, p_archived, p_member_ids,
                              p_seqs, p_ids, p_records, p_sender_ids, p_roles, p_visible, p_deleted,
                              p_client_msg_ids, p_search, p_deadline, p_turn_key, p_notify, p_events) c;
EXCEPTION
  WHEN SQLSTATE 'CRSTL' OR SQLSTATE 'CRNRM' OR SQLSTATE 'CRSEQ' OR lock_not_available THEN
    new_version := NULL;
    new_last_seq := NULL;
    error_code := SQLSTATE;
    error_message := SQLERRM;
END
$$;
