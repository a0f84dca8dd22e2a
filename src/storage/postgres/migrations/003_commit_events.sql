-- 003: the events of each recent commit, kept with it (SPEC §11: every subscriber on every node
-- gets the same events). The committing node's events travel in its notification, and a node
-- exactly one version behind replays them; a node further behind (a notification it missed, a
-- refresh that read several commits at once) reads them here for every version it missed, so
-- it replays them too instead of rebuilding events from the state difference
-- (runtime/event-plan.ts). `room_commits` keeps the last 64 commits of each room.
--
-- chatroom_commit_room gains `p_events` (the plan as JSON text), last and with a default, so a
-- node of the version before, still calling it with 19 arguments during a rolling upgrade, keeps
-- working (its commits just carry no events).
ALTER TABLE room_commits ADD COLUMN events text;

DROP FUNCTION chatroom_commit_room(
  text, bigint, uuid, json, json, boolean, text[], bigint[], text[], json[], text[], text[],
  boolean[], boolean[], text[], text[], timestamptz, text, boolean
);

CREATE FUNCTION chatroom_commit_room(
  p_room_id text, p_expected bigint, p_commit uuid,
  p_state json, p_summary json, p_archived boolean, p_member_ids text[],
  p_seqs bigint[], p_ids text[], p_records json[], p_sender_ids text[], p_roles text[],
  p_visible boolean[], p_deleted boolean[], p_client_msg_ids text[], p_search text[],
  p_deadline timestamptz, p_turn_key text, p_notify boolean, p_events text DEFAULT NULL,
  OUT new_version bigint, OUT new_last_seq bigint
) LANGUAGE plpgsql AS $$
DECLARE
  cur_version bigint;
  next_seq bigint;
  existing text;
BEGIN
  SELECT version, last_seq + 1 INTO cur_version, next_seq FROM rooms WHERE room_id = p_room_id FOR UPDATE;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'room % does not exist', p_room_id USING ERRCODE = 'CRNRM';
  END IF;
  IF cur_version <> p_expected THEN
    RAISE EXCEPTION 'room % changed since it was loaded', p_room_id USING ERRCODE = 'CRSTL';
  END IF;
  FOR i IN 1 .. coalesce(array_length(p_seqs, 1), 0) LOOP
    IF p_seqs[i] = next_seq THEN
      INSERT INTO messages (room_id, seq, message_id, record, written_version, sender_id, role, visible, deleted,
                            client_msg_id, search_text)
        VALUES (p_room_id, p_seqs[i], p_ids[i], p_records[i], cur_version + 1, p_sender_ids[i], p_roles[i], p_visible[i],
                p_deleted[i], p_client_msg_ids[i], p_search[i]);
      next_seq := next_seq + 1;
    ELSE
      SELECT message_id INTO existing FROM messages WHERE room_id = p_room_id AND seq = p_seqs[i];
      IF p_seqs[i] < 1 OR p_seqs[i] >= next_seq OR existing IS DISTINCT FROM p_ids[i] THEN
        RAISE EXCEPTION 'message % has seq %; the next new seq is %', p_ids[i], p_seqs[i], next_seq USING ERRCODE = 'CRSEQ';
      END IF;
      UPDATE messages
        SET record = p_records[i], written_version = cur_version + 1, sender_id = p_sender_ids[i], role = p_roles[i], visible = p_visible[i],
            deleted = p_deleted[i], client_msg_id = p_client_msg_ids[i], search_text = p_search[i]
        WHERE room_id = p_room_id AND seq = p_seqs[i];
    END IF;
  END LOOP;
  IF p_state IS NULL THEN
    UPDATE rooms SET version = cur_version + 1, last_seq = next_seq - 1 WHERE room_id = p_room_id;
  ELSE
    UPDATE rooms
      SET version = cur_version + 1, last_seq = next_seq - 1, state = p_state, summary = p_summary,
          archived = p_archived, member_ids = p_member_ids
      WHERE room_id = p_room_id;
    -- The room's deadline follows its running turn. Re-setting the same turn key keeps a
    -- running claim: a commit that does not change the turn must not hand its deadline to a
    -- second node while the first is firing it.
    IF p_deadline IS NULL THEN
      DELETE FROM deadlines WHERE room_id = p_room_id;
    ELSE
      INSERT INTO deadlines (room_id, deadline, turn_key) VALUES (p_room_id, p_deadline, p_turn_key)
        ON CONFLICT (room_id) DO UPDATE
          SET deadline = EXCLUDED.deadline, turn_key = EXCLUDED.turn_key, claimed_by = NULL, lease_until = NULL
          WHERE deadlines.turn_key IS DISTINCT FROM EXCLUDED.turn_key;
    END IF;
  END IF;
  INSERT INTO room_commits (room_id, slot, version, commit_id, events)
    VALUES (p_room_id, (cur_version + 1) % 64, cur_version + 1, p_commit, p_events)
    ON CONFLICT (room_id, slot) DO UPDATE SET version = EXCLUDED.version, commit_id = EXCLUDED.commit_id, events = EXCLUDED.events;
  IF p_notify THEN
    PERFORM pg_notify('room_changes', p_room_id || ':' || (cur_version + 1) || ':' || (next_seq - 1));
  END IF;
  new_version := cur_version + 1;
  new_last_seq := next_seq - 1;
END
$$;
