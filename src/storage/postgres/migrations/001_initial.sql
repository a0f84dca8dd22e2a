-- 001: the whole schema: participants, rooms and messages, the room commit function, stored
-- turn deadlines, shared rate-limit counters, and node heartbeats with the presence each node
-- serves. (The PostgreSQL store was never released before this file; earlier development
-- versions 002 and 003 are folded in here.)
--
-- Records are kept as `json` (not jsonb) so every read returns exactly what was written, key
-- order included. PostgreSQL's JSON operators reject a string holding U+0000, which message
-- text may contain, so no query ever looks inside a record: the columns that queries filter
-- on are written by the server next to the record, from the same object.

-- Trigram indexes for substring search (search_messages, Chinese included). pg_trgm is a
-- trusted extension: the database owner may create it.
CREATE EXTENSION IF NOT EXISTS pg_trgm;

CREATE TABLE participants (
  id text PRIMARY KEY,
  position bigint GENERATED ALWAYS AS IDENTITY,
  kind text NOT NULL CHECK (kind IN ('agent', 'user')),
  name text NOT NULL,
  -- The caller's normalised uniqueness key (case-folded, confusable skeleton).
  name_key text NOT NULL CONSTRAINT participants_name_key_unique UNIQUE,
  token_hashes text[] NOT NULL,
  record json NOT NULL
);
CREATE INDEX participants_token_hashes ON participants USING gin (token_hashes);

CREATE TABLE rooms (
  room_id text PRIMARY KEY,
  -- Creation order (listRoomIds, list_rooms).
  position bigint GENERATED ALWAYS AS IDENTITY,
  -- Optimistic version: 1 at creation, +1 per commit (Store guarantee 4).
  version bigint NOT NULL,
  last_seq bigint NOT NULL DEFAULT 0,
  state json NOT NULL,
  -- The public summary list_rooms shows (SPEC §3), kept beside the state.
  summary json NOT NULL,
  archived boolean NOT NULL,
  member_ids text[] NOT NULL
) WITH (fillfactor = 50); -- room rows are rewritten on every commit: room for HOT updates
CREATE INDEX rooms_member_ids ON rooms USING gin (member_ids);

-- The ids of each room's last 64 commits, so a commit whose answer was lost with the
-- connection can be told apart from one that never happened: a ring per room, slot =
-- version % 64, overwritten in place.
CREATE TABLE room_commits (
  room_id text NOT NULL REFERENCES rooms (room_id),
  slot integer NOT NULL,
  version bigint NOT NULL,
  commit_id uuid NOT NULL,
  PRIMARY KEY (room_id, slot)
) WITH (fillfactor = 70);

CREATE TABLE messages (
  room_id text NOT NULL REFERENCES rooms (room_id),
  seq bigint NOT NULL,
  message_id text NOT NULL CONSTRAINT messages_message_id_unique UNIQUE,
  -- The latest version of the message (edits and deletes replace it in place).
  record json NOT NULL,
  -- The room version whose commit wrote this row last: a node that has seen version V reads
  -- the edits it missed as `written_version > V` (PgStore.readChangesSince, pg-store.ts).
  written_version bigint NOT NULL,
  sender_id text NOT NULL,
  role text NOT NULL,
  visible boolean NOT NULL,
  deleted boolean NOT NULL,
  client_msg_id text,
  -- text_content lower-cased by the server (JavaScript's toLowerCase), so search is
  -- case-insensitive the same way whatever the database's locale.
  search_text text NOT NULL,
  PRIMARY KEY (room_id, seq)
);
-- get_context: the sender's last visible message.
CREATE INDEX messages_by_sender ON messages (room_id, sender_id, seq DESC) WHERE visible;
-- Turn engine: the last visible, live person message.
CREATE INDEX messages_by_person ON messages (room_id, seq DESC) WHERE role = 'user' AND visible AND NOT deleted;
-- Catching up on edits and deletes since a version.
CREATE INDEX messages_by_written_version ON messages (room_id, written_version);
-- Idempotent retries.
CREATE INDEX messages_by_client_msg_id ON messages (room_id, sender_id, client_msg_id) WHERE client_msg_id IS NOT NULL;
-- search_messages: LIKE '%…%' substring match served by trigrams.
CREATE INDEX messages_search_trgm ON messages USING gin (search_text gin_trgm_ops);

-- Stored turn deadlines, so a deadline fires once, on some live node, even when the node
-- that set it died (SPEC §11).
--
-- A room's row here mirrors its state: every commit that carries a new state sets it from the
-- running turn's deadline (or deletes it when no timer runs), in the same transaction. The turn
-- key names that deadline instance (round, queue position, agent, deadline), so a claim can be
-- checked against the room before acting. Nodes claim due rows with a short lease
-- (deadlines.ts): a claim by a node that dies expires and another node takes it.

CREATE TABLE deadlines (
  room_id text PRIMARY KEY REFERENCES rooms (room_id),
  deadline timestamptz NOT NULL,
  turn_key text NOT NULL,
  -- The node holding the claim, until lease_until (NULL = unclaimed).
  claimed_by text,
  lease_until timestamptz
);
CREATE INDEX deadlines_due ON deadlines (deadline);

-- One room commit, in the caller's single statement (= one transaction): lock the room row,
-- check the version, insert new messages / replace new versions of existing ones, store the
-- state and the room's deadline row, bump the version, and return the new version and last
-- seq.
--
-- p_state NULL keeps the state (and p_summary, p_archived, p_member_ids, p_deadline are
-- ignored). The message arrays are parallel, one entry per message in commit order.
--
-- Errors: CRNRM no such room, CRSTL stale version (another node committed), CRSEQ a message
-- that is neither the next seq nor a new version of the message at its seq.
--
-- NOTIFY is optional: inside the commit (p_notify) it is delivered in commit order and only if
-- committed, but PostgreSQL holds a database-wide lock from NOTIFY
-- to the end of COMMIT, so notifying commits cannot share a WAL flush. PgStore's default sends
-- the notification right after the commit instead, batched (see pg-store.ts).
CREATE FUNCTION chatroom_commit_room(
  p_room_id text, p_expected bigint, p_commit uuid,
  p_state json, p_summary json, p_archived boolean, p_member_ids text[],
  p_seqs bigint[], p_ids text[], p_records json[], p_sender_ids text[], p_roles text[],
  p_visible boolean[], p_deleted boolean[], p_client_msg_ids text[], p_search text[],
  p_deadline timestamptz, p_turn_key text, p_notify boolean,
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
  INSERT INTO room_commits (room_id, slot, version, commit_id) VALUES (p_room_id, (cur_version + 1) % 64, cur_version + 1, p_commit)
    ON CONFLICT (room_id, slot) DO UPDATE SET version = EXCLUDED.version, commit_id = EXCLUDED.commit_id;
  IF p_notify THEN
    PERFORM pg_notify('room_changes', p_room_id || ':' || (cur_version + 1) || ':' || (next_seq - 1));
  END IF;
  new_version := cur_version + 1;
  new_last_seq := next_seq - 1;
END
$$;

-- Rate-limit counters shared by all nodes (rate-limiter-flexible's RateLimiterPostgres,
-- wired in rate-limits.ts). The layout is the library's own; it is created here rather than by
-- the library so that nodes starting together do not race on CREATE TABLE.
CREATE TABLE chatroom_rate_limits (
  key varchar(255) PRIMARY KEY,
  points integer NOT NULL DEFAULT 0,
  -- Epoch milliseconds (the nodes' clocks: keep them in sync with NTP).
  expire bigint
);
-- The library's hourly clean-up deletes by expiry.
CREATE INDEX chatroom_rate_limits_expire ON chatroom_rate_limits (expire);

-- Node heartbeats and the participants each node serves (SPEC §11: presence from heartbeats
-- stored per node). Every node inserts its row at start and refreshes heartbeat_at every
-- couple of seconds; it keeps one row per participant it counts as online (sockets, waits,
-- recent calls). A node whose heartbeat is older than the socket grace period is dead: the
-- first live node to delete its row (node-presence.ts) takes its participants offline unless
-- another live node still serves them.
CREATE TABLE chatroom_nodes (
  node_id text PRIMARY KEY,
  started_at timestamptz NOT NULL DEFAULT now(),
  heartbeat_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE chatroom_node_presence (
  node_id text NOT NULL,
  participant_id text NOT NULL,
  PRIMARY KEY (node_id, participant_id)
);
CREATE INDEX chatroom_node_presence_participant ON chatroom_node_presence (participant_id);
